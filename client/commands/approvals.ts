/**
 * `agentctl approvals list|approve|deny`: a person's decision on a call that needs approval
 * (docs/security.md "Approvals"). A run that stopped NEEDS_HUMAN `approval_required` shows
 * the exact call; `approve` binds an approval to that run, its CURRENT stop and that call's
 * fingerprint (read from the run's checkpoint, never typed by the operator), usable once
 * before its TTL; `deny` records a denial and the run stays stopped. Every decision lands in
 * the append-only audit in the ledger's database (LEDGER_URL).
 *
 * With an operator key (`--key` / AGENT_OPERATOR_KEY_FILE) the decision is signed: the
 * signature covers the row id, the run, the actor (the key's operator), the reason, the call's
 * fingerprint, the stop and the expiry, and a worker with an operators file uses only
 * approvals whose signature verifies (activities/approvals/verify.ts).
 */
import { randomUUID } from 'node:crypto';
import { Command } from 'commander';
import type { WorkflowHandle } from '@temporalio/client';
import {
  APPROVAL_ID_PREFIX,
  ApprovalError,
  approvalSignedFields,
  ApprovalStore,
  DEFAULT_APPROVAL_TTL_MS,
  DENIAL_ID_PREFIX,
  parseTtl,
  type ApprovalRecord,
  type SignedGrant,
} from '../../activities/approvals';
import { signRequest, type OperatorKeyFile } from '../../activities/operators/sign';
import { LedgerError, ledgerUrlFromEnv, openLedger, type Ledger } from '../../activities/ledger';
import { redact } from '../../common/redact';
import { checkpointQuery, type Checkpoint, type ResumeRequest } from '../../common/contracts';
import { GuardReason, ResultCode } from '../../guard';
import { CliError, Exit, json, keyValues, table } from '../format';
import { isClosed, sendResume } from '../runs';
import { defaultActor, openRun, type Ctx } from './common';
import { listQuery } from './inspect';
import { operatorKeyOf } from './operator';

/** Stop reasons an approval lifts. */
const APPROVAL_REASONS: ReadonlySet<string> = new Set([
  GuardReason.APPROVAL_REQUIRED,
  ResultCode.APPROVAL_INVALID,
]);

/** A run stopped for an approval: the exact call it waits on. */
export interface PendingApproval {
  readonly runId: string;
  readonly reason: string;
  /** The stop an approval is bound to (`last_safe_checkpoint`). */
  readonly stopRef: string;
  readonly tool: string;
  readonly fingerprint: string;
  /** The blocked call's args (redacted). */
  readonly args: unknown;
  readonly operationKey: string | null;
}

/**
 * Who decides, and the key that signs for them: with a key (`--key` / AGENT_OPERATOR_KEY_FILE)
 * the key's operator (an `--actor` naming someone else is a usage error); without one the
 * `--actor` name (or $AGENTCTL_ACTOR / $USER), unsigned — a worker with an operators file
 * will not use such an approval.
 */
function operatorOf(
  ctx: Ctx,
  o: { actor?: string; key?: string },
): { actor: string; key: OperatorKeyFile | null } {
  const key = operatorKeyOf(ctx, o.key);
  const actor = o.actor ?? key?.operator ?? defaultActor(ctx.env);
  if (key && key.operator !== actor)
    throw new CliError(
      Exit.USAGE,
      `--actor ${actor} does not match the signing key's operator "${key.operator}"`,
    );
  return { actor, key };
}

/** The resume `approve --resume` sends, signed with the operator's key when there is one. */
function resumeOf(key: OperatorKeyFile | null, runId: string, req: ResumeRequest): ResumeRequest {
  if (!key) return req;
  const fields = { ...req, precondition: req.precondition ?? '' };
  return { ...fields, auth: signRequest(key, 'resume', runId, fields) };
}

/** The call a stopped run waits on, from its checkpoint; null when it does not wait for an approval. */
function pendingOf(runId: string, cp: Checkpoint): PendingApproval | null {
  const stop = cp.stop;
  const call = stop?.report.blocked_call;
  if (!stop || !call || !APPROVAL_REASONS.has(stop.reason) || !stop.report.last_safe_checkpoint) return null;
  return {
    runId,
    reason: stop.reason,
    stopRef: stop.report.last_safe_checkpoint,
    tool: call.tool,
    fingerprint: call.fingerprint,
    args: redact(stop.blockedArgs ?? null),
    operationKey: stop.operationKey ?? null,
  };
}

/** The run's current approval stop, or exit 3 saying what the run is doing instead. */
async function currentStop(
  ctx: Ctx,
  runId: string,
): Promise<{ handle: WorkflowHandle; pending: PendingApproval }> {
  const { handle, desc } = await openRun(ctx, runId);
  if (isClosed(desc))
    throw new CliError(Exit.REFUSED, `run ${runId} is closed (${desc.status.name}); nothing to approve`);
  const cp = await handle.query(checkpointQuery);
  const pending = pendingOf(runId, cp);
  if (!pending) {
    const why = cp.stop ? `it is stopped for ${cp.stop.reason}` : 'it is not stopped';
    throw new CliError(Exit.REFUSED, `run ${runId} is not waiting for an approval (${why})`);
  }
  return { handle, pending };
}

/** Opens the ledger's database, runs `fn` on its approval store, closes it; store errors are exit 1/2. */
async function withStore<T>(ctx: Ctx, fn: (store: ApprovalStore) => Promise<T>): Promise<T> {
  let ledger: Ledger | undefined;
  try {
    ledger = await openLedger(ledgerUrlFromEnv(ctx.env));
    return await fn(ApprovalStore.over(ledger));
  } catch (err) {
    if (err instanceof ApprovalError) throw new CliError(Exit.USAGE, err.message, { cause: err });
    if (err instanceof LedgerError) throw new CliError(Exit.ERROR, err.message, { cause: err });
    throw err;
  } finally {
    await ledger?.close().catch(() => undefined);
  }
}

function ttlOf(value: string | undefined): number {
  if (value === undefined) return DEFAULT_APPROVAL_TTL_MS;
  try {
    return parseTtl(value);
  } catch (err) {
    throw new CliError(Exit.USAGE, `--ttl: ${(err as Error).message}`, { cause: err });
  }
}

const approvalColumns = [
  { header: 'ID', value: (a: ApprovalRecord) => a.id, max: 44 },
  { header: 'RUN', value: (a: ApprovalRecord) => a.runId, max: 40 },
  { header: 'STATE', value: (a: ApprovalRecord) => a.state },
  { header: 'CALL', value: (a: ApprovalRecord) => a.fingerprint, max: 60 },
  { header: 'STOP', value: (a: ApprovalRecord) => a.stopRef },
  { header: 'BY', value: (a: ApprovalRecord) => a.approver },
  { header: 'EXPIRES', value: (a: ApprovalRecord) => (a.deniedAt ? '-' : a.expiresAt) },
];

/** Builds the `approvals` command: list, approve, deny. */
export function approvalsCommand(ctx: Ctx): Command {
  const cmd = new Command('approvals').description(
    'Approve or deny calls that need a person (runs stopped NEEDS_HUMAN approval_required)',
  );

  cmd
    .command('list')
    .description('Runs waiting for an approval (the exact call) and the stored approvals with their state')
    .option('--run <id>', 'only this run')
    .option('--json', 'machine-readable output ({pending, approvals})')
    .action(async (o: { run?: string; json?: boolean }) => {
      const c = await ctx.connect();
      const ids: string[] = [];
      if (o.run) ids.push(o.run);
      else {
        const query = `${listQuery({ open: true })} AND AgentGuardReason IN ("${GuardReason.APPROVAL_REQUIRED}", "${ResultCode.APPROVAL_INVALID}")`;
        for await (const wf of c.client.workflow.list({ query, pageSize: 200 })) ids.push(wf.workflowId);
      }
      const pending: PendingApproval[] = [];
      for (const id of ids) {
        const { handle, desc } = await openRun(ctx, id);
        if (isClosed(desc)) continue;
        const p = pendingOf(id, await handle.query(checkpointQuery));
        if (p) pending.push(p);
      }
      const approvals = await withStore(ctx, (s) => s.list(o.run ? { runId: o.run } : {}));
      if (o.json) {
        ctx.io.out(json({ pending, approvals }));
        return;
      }
      ctx.io.out(
        pending.length === 0
          ? 'no run is waiting for an approval\n'
          : `waiting for an approval:\n${table(pending, [
              { header: 'RUN', value: (p) => p.runId, max: 40 },
              { header: 'STOP', value: (p) => p.stopRef },
              { header: 'CALL', value: (p) => p.fingerprint, max: 60 },
              { header: 'ARGS', value: (p) => JSON.stringify(p.args), max: 80 },
            ])}`,
      );
      ctx.io.out(
        approvals.length === 0
          ? 'no stored approvals\n'
          : `\napprovals:\n${table(approvals, approvalColumns)}`,
      );
    });

  cmd
    .command('approve')
    .description("Approve the call a run is stopped on (bound to the run's current stop and that call)")
    .argument('<runId>', 'workflow id of the stopped run')
    .option('--actor <name>', 'who approves (default $AGENTCTL_ACTOR / $USER; stored and audited)')
    .requiredOption('--reason <text>', 'why: what was checked (stored and audited)')
    .option('--ttl <duration>', 'how long the approval stays usable: 90s, 15m, 1h (default 15m, at most 7d)')
    .option('--key <file>', 'operator key file to sign with (default AGENT_OPERATOR_KEY_FILE)')
    .option('--resume', 'also resume the run (it re-verifies the approval, then runs the call once)')
    .option('--json', 'machine-readable output')
    .action(
      async (
        runId: string,
        o: { actor?: string; key?: string; reason: string; ttl?: string; resume?: boolean; json?: boolean },
      ) => {
        const ttlMs = ttlOf(o.ttl);
        const { actor, key } = operatorOf(ctx, o);
        const { handle, pending } = await currentStop(ctx, runId);
        const call = {
          runId,
          stopRef: pending.stopRef,
          tool: pending.tool,
          fingerprint: pending.fingerprint,
        };
        let signed: SignedGrant | undefined;
        if (key) {
          const id = `${APPROVAL_ID_PREFIX}${randomUUID()}`;
          const issuedAtMs = Date.now();
          const expiresAtMs = issuedAtMs + ttlMs;
          const fields = approvalSignedFields({ ...call, id, actor, reason: o.reason, expiresAtMs });
          signed = { id, expiresAtMs, auth: signRequest(key, 'approve', runId, fields, issuedAtMs) };
        }
        const approval = await withStore(ctx, (s) =>
          s.grant({ ...call, actor, reason: o.reason, ttlMs, ...(signed ? { signed } : {}) }),
        );
        const resume = o.resume
          ? await sendResume(
              handle,
              resumeOf(key, runId, {
                actor,
                reason: o.reason,
                precondition: `approval ${approval.id}`,
                requestId: randomUUID(),
              }),
            )
          : null;
        if (o.json) ctx.io.out(json({ approval, call: pending, resume }));
        else {
          ctx.io.out(
            keyValues([
              ['approved', approval.id],
              ['run', runId],
              ['stop', pending.stopRef],
              ['call', `${pending.fingerprint} ${JSON.stringify(pending.args)}`],
              ['by', `${actor}${approval.auth ? ' (signed)' : ' (unsigned)'}`],
              ['valid until', approval.expiresAt],
              ...(resume
                ? ([['resume', `${resume.accepted ? 'ACCEPTED' : 'REFUSED'}: ${resume.reason}`]] as const)
                : ([['next', `agentctl resume ${runId}`]] as const)),
            ]),
          );
        }
        if (resume && !resume.accepted) throw new CliError(Exit.REFUSED, `resume refused: ${resume.reason}`);
      },
    );

  cmd
    .command('deny')
    .description(
      'Deny the call a run is stopped on; the run stays stopped (withdraws unused approvals of it)',
    )
    .argument('<runId>', 'workflow id of the stopped run')
    .option('--actor <name>', 'who denies (default $AGENTCTL_ACTOR / $USER; stored and audited)')
    .requiredOption('--reason <text>', 'why (stored and audited)')
    .option('--key <file>', 'operator key file to sign with (default AGENT_OPERATOR_KEY_FILE)')
    .option('--json', 'machine-readable output')
    .action(async (runId: string, o: { actor?: string; key?: string; reason: string; json?: boolean }) => {
      const { actor, key } = operatorOf(ctx, o);
      const { pending } = await currentStop(ctx, runId);
      const call = { runId, stopRef: pending.stopRef, tool: pending.tool, fingerprint: pending.fingerprint };
      const id = `${DENIAL_ID_PREFIX}${randomUUID()}`;
      const signed = key
        ? {
            id,
            auth: signRequest(
              key,
              'deny',
              runId,
              approvalSignedFields({ ...call, id, actor, reason: o.reason }),
            ),
          }
        : undefined;
      const { denial, withdrawn } = await withStore(ctx, (s) =>
        s.deny({ ...call, actor, reason: o.reason, ...(signed ? { signed } : {}) }),
      );
      if (o.json) ctx.io.out(json({ denial, withdrawn, call: pending }));
      else
        ctx.io.out(
          keyValues([
            ['denied', denial.id],
            ['run', `${runId} (stays stopped NEEDS_HUMAN ${pending.reason})`],
            ['call', `${pending.fingerprint} ${JSON.stringify(pending.args)}`],
            ['by', actor],
            ['withdrew', withdrawn.length > 0 ? withdrawn.join(', ') : '-'],
          ]),
        );
    });

  return cmd;
}
