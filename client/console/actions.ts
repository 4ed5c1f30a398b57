/**
 * The console's actions: approve (with a TTL) or deny the call a run waits on, resume a run
 * with a reason (raising its stopping budget), stop a run. Each is the client API's function
 * (client/api.ts, client/approvals.ts), signed with the operator key the console was started
 * with exactly as agentctl signs, and verified by the worker as agentctl's requests are.
 *
 * A body is checked field by field before anything is sent (a bad one is a 400 naming the
 * field). A decision names the stop (and for approvals the call) the page showed: a run that
 * has moved on since is refused (409, saying where it is now), so nobody approves a call they
 * were not shown.
 */
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { z } from 'zod';
import { checkpointQuery, type BudgetRaise } from '../../common/contracts';
import { raiseKeyOf } from '../../guard';
import type { OperatorRegistry } from '../../operators/registry';
import { signRequest, type OperatorKeyFile } from '../../operators/sign';
import { ApprovalInputError, parseTtl } from '../../storage/approvals';
import { resumeAgentRun, stopAgentRun } from '../api';
import { approveRun, denyRun } from '../approvals';
import { CliError, Exit } from '../format';
import { PayloadCodecMismatchError } from '../../codec/mismatch';
import { NotAGuardedRunError } from '../engine';
import { describeRun, isClosed } from '../runs';

/** Who acts: the operator key the console was started with (null: unsigned, open-mode workers only). */
export interface ConsoleOperator {
  readonly key: OperatorKeyFile | null;
  /** The key's operator, or without a key AGENTCTL_ACTOR / USER. */
  readonly actor: string;
  /**
   * The workers' operators when the console was given them (AGENT_OPERATORS_FILE): a request a
   * worker would refuse is refused here first, with the worker's words (the worker still checks).
   */
  readonly operators: OperatorRegistry;
  /** Where the approval store's defaults come from (LEDGER_URL, AGENT_OPERATORS_FILE). */
  readonly env: NodeJS.ProcessEnv;
}

/** An action's answer: the HTTP status and a message the page shows as it is. */
export interface ActionAnswer {
  readonly status: number;
  readonly body: {
    readonly ok: boolean;
    readonly message: string;
    readonly field?: string;
    /**
     * For stop, resume and approve: what the worker did — `accepted` only when it
     * answered so, `refused` with its reason, `unconfirmed` when it did not answer in time.
     */
    readonly outcome?: 'accepted' | 'refused' | 'unconfirmed';
  };
}

/** How actions wait for the worker. */
export interface ActionOptions {
  /** How long to wait for the worker's answer to a stop or resume, ms (default 30 s). */
  readonly confirmMs?: number;
}

const text = (max: number) =>
  z.string().trim().min(1, 'must not be empty').max(max, `at most ${max} characters`);
const runId = text(300);
const stopRef = text(200);
const reason = text(2000);
const budget = z.number().finite().positive();
/** The digest of the call the page showed: a decision binds exactly that call. */
const digest = z.string().regex(/^sha256:[0-9a-f]{64}$/, 'must be the call digest shown (sha256:<64 hex>)');

const schemas = {
  approve: z
    .object({
      runId,
      stopRef,
      fingerprint: text(600),
      argsDigest: digest,
      reason,
      ttl: text(40),
    })
    .strict(),
  deny: z.object({ runId, stopRef, fingerprint: text(600), argsDigest: digest, reason }).strict(),
  resume: z
    .object({
      runId,
      stopRef,
      reason,
      raise: z
        .object({
          maxSteps: budget,
          maxMs: budget,
          maxTokens: budget,
          maxCostUsd: budget,
          maxWaitPolls: budget,
        })
        .partial()
        .strict()
        .optional(),
    })
    .strict(),
  stop: z.object({ runId, reason }).strict(),
};

/** The actions the page can take. */
export type ActionName = keyof typeof schemas;
/** True for a known action. */
export const isActionName = (s: string): s is ActionName => Object.hasOwn(schemas, s);

const ok = (message: string): ActionAnswer => ({ status: 200, body: { ok: true, message } });
/** The worker's answer as the page's: 200 accepted, 409 refused, 504 unconfirmed (never 200). */
const answered = (outcome: 'accepted' | 'refused' | 'unconfirmed', message: string): ActionAnswer => ({
  status: outcome === 'accepted' ? 200 : outcome === 'refused' ? 409 : 504,
  body: { ok: outcome === 'accepted', message, outcome },
});
const resumeOutcome = (a: { accepted: boolean; unconfirmed?: boolean }) =>
  a.accepted ? 'accepted' : a.unconfirmed ? 'unconfirmed' : 'refused';
const fail = (status: number, message: string, field?: string): ActionAnswer => ({
  status,
  body: { ok: false, message, ...(field ? { field } : {}) },
});

/** A client API error as the page's answer: bad input 400, refused 409, no such run 404. */
function answerOf(err: unknown): ActionAnswer {
  // A run of no guard engine is bad input; a codec mismatch a configuration error, never a refusal.
  if (err instanceof NotAGuardedRunError) return fail(400, err.message);
  if (err instanceof PayloadCodecMismatchError) return fail(502, err.message);
  if (err instanceof CliError) {
    if (err.exitCode === Exit.USAGE) return fail(400, err.message);
    if (err.exitCode === Exit.REFUSED) return fail(409, `refused: ${err.message}`);
    if (/^no run with id/.test(err.message)) return fail(404, err.message);
    return fail(502, err.message);
  }
  throw err;
}

/** Parses a body; a bad one is the 400 answer naming the first bad field. */
export function parseAction<A extends ActionName>(
  action: A,
  body: unknown,
): { ok: true; value: z.output<(typeof schemas)[A]> } | { ok: false; answer: ActionAnswer } {
  const parsed = schemas[action].safeParse(body);
  if (parsed.success) return { ok: true, value: parsed.data as z.output<(typeof schemas)[A]> };
  const issue = parsed.error.issues[0];
  const path = issue?.code === 'unrecognized_keys' ? [...issue.path, issue.keys[0]] : (issue?.path ?? []);
  const field = path.join('.') || '(body)';
  const why = issue?.code === 'unrecognized_keys' ? 'unknown field' : (issue?.message ?? 'invalid');
  return { ok: false, answer: fail(400, `${action}: ${field}: ${why}`, field) };
}

/** The run's current stop, or the 409/404 answer saying why an action on `seen` cannot go on. */
async function stopNow(
  client: Client,
  id: string,
  seen: string,
): Promise<{ ok: true; reason: string } | { ok: false; answer: ActionAnswer }> {
  try {
    const { handle, desc } = await describeRun(client, id);
    if (isClosed(desc))
      return { ok: false, answer: fail(409, `refused: run ${id} is closed (${desc.status.name})`) };
    const stop = (await handle.query(checkpointQuery)).stop;
    if (!stop) return { ok: false, answer: fail(409, `refused: run ${id} is not stopped (it is running)`) };
    const at = stop.report.last_safe_checkpoint;
    if (at !== seen)
      return {
        ok: false,
        answer: fail(
          409,
          `refused: run ${id} has moved on: it is now stopped at ${at ?? '-'} for ${stop.reason}, not at ${seen}`,
        ),
      };
    return { ok: true, reason: stop.reason };
  } catch (err) {
    return { ok: false, answer: answerOf(err) };
  }
}

/** Runs one action for `op`; never throws for a refusal or bad input (those are answers). */
export async function runAction(
  client: Client,
  op: ConsoleOperator,
  action: ActionName,
  body: unknown,
  ao: ActionOptions = {},
): Promise<ActionAnswer> {
  const parsed = parseAction(action, body);
  if (!parsed.ok) return parsed.answer;
  try {
    switch (action) {
      case 'approve':
        return await approve(client, op, parsed.value as z.output<typeof schemas.approve>, ao);
      case 'deny':
        return await deny(client, op, parsed.value as z.output<typeof schemas.deny>);
      case 'resume':
        return await resume(client, op, parsed.value as z.output<typeof schemas.resume>, ao);
      case 'stop':
        return await stop(client, op, parsed.value as z.output<typeof schemas.stop>, ao);
    }
  } catch (err) {
    return answerOf(err);
  }
  return fail(404, `unknown action ${String(action)}`);
}

const confirm = (ao: ActionOptions) => (ao.confirmMs === undefined ? {} : { confirmMs: ao.confirmMs });

/** The approval API's options for `op`: its key and actor, and the workers' operators it knows. */
const decider = (op: ConsoleOperator) => ({
  env: op.env,
  key: op.key,
  actor: op.actor,
  ...(op.operators.isOpen ? {} : { operators: op.operators }),
});

async function approve(
  client: Client,
  op: ConsoleOperator,
  b: z.output<typeof schemas.approve>,
  ao: ActionOptions,
): Promise<ActionAnswer> {
  let ttlMs: number;
  try {
    ttlMs = parseTtl(b.ttl);
  } catch (err) {
    if (err instanceof ApprovalInputError) return fail(400, `approve: ttl: ${err.message}`, 'ttl');
    throw err;
  }
  // The exact call the page showed (its digest): a run that now waits on another is refused.
  const expectedStop = { stopRef: b.stopRef, fingerprint: b.fingerprint, argsDigest: b.argsDigest };
  const { approval, untrusted } = await approveRun(client, b.runId, {
    ...decider(op),
    reason: b.reason,
    ttlMs,
    expectedStop,
  });
  // Stored and audited `refused`: the workers would refuse the resume too, so it is not sent.
  if (untrusted !== null)
    return fail(
      403,
      `refused: the workers will not use this approval (${approval.id}, audited refused): ${untrusted}`,
    );
  const answer = await resumeAgentRun(client, b.runId, {
    actor: op.actor,
    reason: b.reason,
    precondition: `approval ${approval.id}`,
    requestId: randomUUID(),
    key: op.key,
    ...confirm(ao),
  });
  const outcome = resumeOutcome(answer);
  return answered(
    outcome,
    outcome === 'accepted'
      ? `approved ${approval.id} (until ${approval.expiresAt}); the run resumed: ${answer.reason}`
      : outcome === 'refused'
        ? `approval ${approval.id} is stored, but the run refused the resume: ${answer.reason}`
        : `approval ${approval.id} is stored; the resume is ${answer.reason}`,
  );
}

async function deny(
  client: Client,
  op: ConsoleOperator,
  b: z.output<typeof schemas.deny>,
): Promise<ActionAnswer> {
  const { denial, withdrawn } = await denyRun(client, b.runId, {
    ...decider(op),
    reason: b.reason,
    expectedStop: { stopRef: b.stopRef, fingerprint: b.fingerprint, argsDigest: b.argsDigest },
  });
  return ok(
    `denied (${denial.id}); the run stays stopped` +
      (withdrawn.length ? `; withdrew ${withdrawn.join(', ')}` : ''),
  );
}

async function resume(
  client: Client,
  op: ConsoleOperator,
  b: z.output<typeof schemas.resume>,
  ao: ActionOptions,
): Promise<ActionAnswer> {
  const now = await stopNow(client, b.runId, b.stopRef);
  if (!now.ok) return now.answer;
  const raise = b.raise && Object.keys(b.raise).length ? (b.raise as BudgetRaise) : undefined;
  if (raise) {
    // Only the stopping budget's raise is ever applied (docs/security.md): say so, do not send it.
    const key = raiseKeyOf(now.reason);
    const other = Object.keys(raise).find((k) => k !== key);
    if (other)
      return fail(
        400,
        key
          ? `resume: raise.${other}: this run stopped for ${now.reason}; only raise.${key} lifts it`
          : `resume: raise.${other}: this run stopped for ${now.reason}, not a budget; nothing to raise`,
        `raise.${other}`,
      );
  }
  const answer = await resumeAgentRun(client, b.runId, {
    actor: op.actor,
    reason: b.reason,
    requestId: randomUUID(),
    key: op.key,
    ...(raise ? { raise } : {}),
    ...confirm(ao),
  });
  const outcome = resumeOutcome(answer);
  return answered(
    outcome,
    outcome === 'accepted'
      ? `resumed: ${answer.reason}`
      : outcome === 'refused'
        ? `resume refused: ${answer.reason}`
        : `resume ${answer.reason}`,
  );
}

async function stop(
  client: Client,
  op: ConsoleOperator,
  b: z.output<typeof schemas.stop>,
  ao: ActionOptions,
): Promise<ActionAnswer> {
  const requestId = randomUUID();
  if (!op.operators.isOpen) {
    // A stop is a signal: the worker's refusal lands in the trace, not in an answer. Check it
    // here first, with the workers' own registry, so the page can say why.
    const fields = { actor: op.actor, reason: b.reason, requestId };
    const verdict = op.operators.check({
      action: 'stop',
      workflowId: b.runId,
      fields,
      auth: op.key ? signRequest(op.key, 'stop', b.runId, fields) : null,
    });
    if (!verdict.ok) return fail(403, `refused: ${verdict.detail}`);
  }
  const sent = await stopAgentRun(client, b.runId, {
    actor: op.actor,
    reason: b.reason,
    requestId,
    key: op.key,
    ...confirm(ao),
  });
  return answered(
    sent.outcome,
    sent.outcome === 'accepted'
      ? `stop by ${sent.actor} accepted by the worker: ${sent.answer}`
      : sent.outcome === 'refused'
        ? `refused: ${sent.answer}`
        : `stop ${sent.answer}`,
  );
}
