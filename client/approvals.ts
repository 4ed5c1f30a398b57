/**
 * Approvals from code (docs/security.md "Approvals"): the calls runs wait on, the stored
 * approvals and their audit, and approving or denying a call, signed with an operator's key.
 * `agentctl approvals list|approve|deny` is a thin layer over these functions, so both follow
 * the same rules:
 *
 * - the approval is bound to the run, its CURRENT stop (`last_safe_checkpoint`) and the
 *   blocked call's digest (`blocked_call.args_digest`, SHA-256 of the tool and its canonical
 *   args), all read from the run's checkpoint, never given by the caller; a call with other
 *   args (even one whose 64-bit guard fingerprint collides) needs an approval of its own;
 * - a run that is closed or not stopped for an approval is refused (CliError, exit 3), and
 *   nothing is stored;
 * - with an operator key the decision is signed (the signature covers the row id, the run,
 *   the actor, the reason, the call's digest, the stop and the expiry) and the actor is the key's
 *   operator: another actor is bad input (exit 2), as are an unreadable key file, an empty
 *   reason and a TTL that is not > 0 and at most 7 days;
 * - with the workers' operators (`operators`, or AGENT_OPERATORS_FILE) the store knows which
 *   approvals a worker will trust: one it would refuse is stored but audited `refused`, and
 *   {@link approveRun} says so (`trusted: false`, `untrusted`: why); without them it cannot
 *   tell (`trusted: null`, audited `submitted`) and the worker decides;
 * - `resume: true` also resumes the run, signed with the same key; a refused resume is an
 *   answer (`resume.accepted: false`), not an error.
 * Errors are {@link CliError}s (exit 1 no such run or the ledger failed, 2 bad input, 3 refused);
 * the approval store and ledger drivers load only when needed (`agent-loop-guard/client` is light).
 */
import { unanswered } from './engine';
import { randomUUID } from 'node:crypto';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { ApprovalError } from '../storage/approvals/errors';
import type { ApprovalStore } from '../storage/approvals/approval-store';
import type { ApprovalRecord, AuditEntry, SignedGrant } from '../storage/approvals/types';
import {
  APPROVAL_ID_PREFIX,
  approvalSignedFields,
  approvalVerifier,
  DENIAL_ID_PREFIX,
} from '../storage/approvals/verify';
import { LedgerError } from '../storage/ledger/errors';
import type { Ledger } from '../storage/ledger/types';
import { OperatorRegistry } from '../operators/registry';
import { readOperatorKey, signRequest, type OperatorKeyFile } from '../operators/sign';
import { checkpointQuery, type Checkpoint, type ResumeRequest } from '../common/contracts';
import { redact } from '../common/redact';
import { GuardReason, ResultCode } from '../guard';
import { CliError, Exit } from './format';
import { describeRun, isClosed, sendResume, type ResumeOutcome } from './runs';

/** Stop reasons an approval lifts. */
const APPROVAL_REASONS: readonly string[] = [GuardReason.APPROVAL_REQUIRED, ResultCode.APPROVAL_INVALID];

/** A run stopped for an approval: the exact call it waits on. */
export interface PendingApproval {
  readonly runId: string;
  /** `approval_required`, or `approval_invalid` when an approval it had could not be used. */
  readonly reason: string;
  /** The stop an approval is bound to (`last_safe_checkpoint`). */
  readonly stopRef: string;
  readonly tool: string;
  /** The guard's fingerprint of the call: it counts repeats and is not a security boundary. */
  readonly fingerprint: string;
  /**
   * `sha256:<64 hex>` of the tool and its canonical args: the exact call an approval binds.
   * Null for a stop recorded before approvals were bound to the digest (it cannot be approved).
   */
  readonly argsDigest: string | null;
  /** The blocked call's args (redacted). */
  readonly args: unknown;
  readonly operationKey: string | null;
}

/**
 * Where the approval store lives and whom the workers trust. Every default comes from `env`
 * (default `process.env`), as agentctl's do.
 */
export interface ApprovalStoreOptions {
  /** An open SQL ledger to store in (it is not closed here); default: open `ledgerUrl`. */
  readonly ledger?: Ledger;
  /** The ledger's database, `sqlite:PATH` or `postgres://…` (default LEDGER_URL, else `sqlite:data/agent.db`). */
  readonly ledgerUrl?: string;
  /**
   * The workers' operators (default AGENT_OPERATORS_FILE, else open mode): with them an
   * approval a worker would not trust is audited `refused` when stored and reported untrusted.
   */
  readonly operators?: OperatorRegistry;
  /** Where the defaults are read (LEDGER_URL, AGENT_OPERATORS_FILE, AGENT_OPERATOR_KEY_FILE, AGENTCTL_ACTOR/USER). */
  readonly env?: NodeJS.ProcessEnv;
}

/** What {@link listPendingApprovals} looks at. */
export interface ListPendingOptions {
  /** Only this run (exit 1 when there is no such run); default: every open run stopped for an approval. */
  readonly runId?: string;
}

/** What {@link listApprovals} lists. */
export interface ListApprovalsOptions extends ApprovalStoreOptions {
  /** Only this run's approvals and denials. */
  readonly runId?: string;
  /** At most this many, newest first (default 100). */
  readonly limit?: number;
}

/** What {@link getApprovalAudit} reads. */
export interface ApprovalAuditOptions extends ApprovalStoreOptions {
  readonly runId?: string;
  readonly approvalId?: string;
  /** At most this many rows, oldest first (default 1000). */
  readonly limit?: number;
}

/** Who decides, why, and the key that signs for them. */
export interface DecideOptions extends ApprovalStoreOptions {
  /** Why: what was checked (stored, signed and audited). */
  readonly reason: string;
  /**
   * Who decides: default the key's operator; without a key AGENTCTL_ACTOR, else USER, else
   * `operator`. With a key, another name is refused (exit 2).
   */
  readonly actor?: string;
  /**
   * The operator key to sign with: the key file's contents or its path. Default the file of
   * AGENT_OPERATOR_KEY_FILE; `null`: unsigned (a worker with an operators file will not use it).
   */
  readonly key?: OperatorKeyFile | string | null;
  /**
   * The stop and call the decider saw (a page, a list printed earlier): when the run now waits
   * on another stop or call, the decision is refused (exit 3) and nothing is stored, so nobody
   * approves a call they were not shown. Default: whatever the run waits on now.
   */
  readonly expectedStop?: ExpectedStop;
}

/** The stop and call a decider was shown; `argsDigest`, when given, must match too. */
export interface ExpectedStop {
  readonly stopRef: string;
  readonly fingerprint: string;
  readonly argsDigest?: string | null;
}

/** What {@link approveRun} approves. */
export interface ApproveRunOptions extends DecideOptions {
  /** How long the approval stays usable, ms (default 15 minutes, at most 7 days). */
  readonly ttlMs?: number;
  /** Also resume the run (signed with the same key): it re-verifies the approval and runs the call once. */
  readonly resume?: boolean;
}

/** What {@link approveRun} did. */
export interface ApproveRunResult {
  /** The stored approval. */
  readonly approval: ApprovalRecord;
  /**
   * Whether the workers will use it, as far as this process can tell: `true` or `false` when
   * it has the workers' operators (`operators` / AGENT_OPERATORS_FILE) and checked the approval
   * against them; `null` when it has none — the usual deployment, where only the workers hold
   * the operators file — and so cannot tell: the approval is stored and audited `submitted`, and
   * a worker verifies it when it would be used (an unsigned or unauthorised one is refused
   * there).   */
  readonly trusted: boolean | null;
  /** Why they will not (it is stored and audited `refused`), or null when trusted or unknown. */
  readonly untrusted: string | null;
  /** The call it approves, as the run's checkpoint showed it. */
  readonly call: PendingApproval;
  /** The resume's answer with `resume: true`, else null. */
  readonly resume: ResumeOutcome | null;
}

/** What {@link denyRun} did. */
export interface DenyRunResult {
  /** The stored denial. */
  readonly denial: ApprovalRecord;
  /** The unused approvals of this call it withdrew. */
  readonly withdrawn: readonly string[];
  /** The call it denies; the run stays stopped on it. */
  readonly call: PendingApproval;
}

/** The call a run waits on, from its checkpoint; null when it does not wait for an approval. */
export function pendingApprovalOf(runId: string, cp: Checkpoint): PendingApproval | null {
  const stop = cp.stop;
  const call = stop?.report.blocked_call;
  if (!stop || !call || !APPROVAL_REASONS.includes(stop.reason) || !stop.report.last_safe_checkpoint)
    return null;
  return {
    runId,
    reason: stop.reason,
    stopRef: stop.report.last_safe_checkpoint,
    tool: call.tool,
    fingerprint: call.fingerprint,
    argsDigest: call.args_digest ?? null,
    args: redact(stop.blockedArgs ?? null),
    operationKey: stop.operationKey ?? null,
  };
}

/**
 * The visibility query of open runs stopped for an approval, on any engine: an `agentRun` or a
 * user's own workflow guarded by `guardAgent` (its search attributes on), which both upsert
 * AgentGuardReason at a stop.
 */
const PENDING_QUERY =
  `ExecutionStatus = "Running"` +
  ` AND AgentGuardReason IN (${APPROVAL_REASONS.map((r) => `"${r}"`).join(', ')})`;

/** The calls open runs wait on for an approval (one run with `runId`; a closed run has none). */
export async function listPendingApprovals(
  client: Client,
  o: ListPendingOptions = {},
): Promise<PendingApproval[]> {
  const ids: string[] = [];
  if (o.runId !== undefined) ids.push(o.runId);
  else
    for await (const wf of client.workflow.list({ query: PENDING_QUERY, pageSize: 200 }))
      ids.push(wf.workflowId);
  const pending: PendingApproval[] = [];
  for (const id of ids) {
    const { handle, desc } = await describeRun(client, id);
    if (isClosed(desc)) continue;
    const p = pendingApprovalOf(id, await handle.query(checkpointQuery));
    if (p) pending.push(p);
  }
  return pending;
}

/** The call `runId` waits on for an approval, or a CliError (exit 3) saying what the run is doing instead. */
export async function getPendingApproval(client: Client, runId: string): Promise<PendingApproval> {
  return (await currentStop(client, runId)).pending;
}

/** Stored approvals and denials with their state (`valid`, `used`, `expired`, `denied`), newest first. */
export function listApprovals(o: ListApprovalsOptions = {}): Promise<ApprovalRecord[]> {
  return withStore(o, (s) =>
    s.list({
      ...(o.runId === undefined ? {} : { runId: o.runId }),
      ...(o.limit === undefined ? {} : { limit: o.limit }),
    }),
  );
}

/** The append-only audit of requests, approvals, denials, uses and refusals, oldest first. */
export function getApprovalAudit(o: ApprovalAuditOptions = {}): Promise<AuditEntry[]> {
  return withStore(o, (s) =>
    s.audit({
      ...(o.runId === undefined ? {} : { runId: o.runId }),
      ...(o.approvalId === undefined ? {} : { approvalId: o.approvalId }),
      ...(o.limit === undefined ? {} : { limit: o.limit }),
    }),
  );
}

/**
 * Approves the call `runId` is stopped on, bound to its current stop and that call, usable
 * once within `ttlMs`; with `resume` also resumes the run. See the module comment for the rules.
 */
export async function approveRun(
  client: Client,
  runId: string,
  o: ApproveRunOptions,
): Promise<ApproveRunResult> {
  const reason = reasonOf(o.reason);
  const { DEFAULT_APPROVAL_TTL_MS, MAX_APPROVAL_TTL_MS } =
    await import('../storage/approvals/approval-store');
  const ttlMs = o.ttlMs ?? DEFAULT_APPROVAL_TTL_MS;
  if (typeof ttlMs !== 'number' || !Number.isFinite(ttlMs) || ttlMs <= 0 || ttlMs > MAX_APPROVAL_TTL_MS)
    throw new CliError(Exit.USAGE, `approval TTL must be > 0 and at most 7 days, got ${String(ttlMs)} ms`);
  const { actor, key } = operatorOf(o);
  const { handle, pending } = await currentStop(client, runId, o.expectedStop);
  const call = boundCall(pending);
  let signed: SignedGrant | undefined;
  if (key) {
    const id = `${APPROVAL_ID_PREFIX}${randomUUID()}`;
    const issuedAtMs = Date.now();
    const expiresAtMs = issuedAtMs + Math.ceil(ttlMs);
    const fields = approvalSignedFields({ ...call, id, actor, reason, expiresAtMs });
    signed = { id, expiresAtMs, auth: signRequest(key, 'approve', runId, fields, issuedAtMs) };
  }
  const { approval, untrusted, verified } = await withStore(o, async (s) => {
    const a = await s.grant({ ...call, actor, reason, ttlMs, ...(signed ? { signed } : {}) });
    return { approval: a, untrusted: s.problemOf(a), verified: s.verifies };
  });
  const resume = o.resume
    ? await sendResume(
        handle,
        resumeOf(key, runId, {
          actor,
          reason,
          precondition: `approval ${approval.id}`,
          requestId: randomUUID(),
        }),
      )
    : null;
  return { approval, trusted: verified ? untrusted === null : null, untrusted, call: pending, resume };
}

/**
 * Denies the call `runId` is stopped on: stores a denial (signed with a key) and withdraws the
 * unused approvals of that call; the run stays stopped. See the module comment for the rules.
 */
export async function denyRun(client: Client, runId: string, o: DecideOptions): Promise<DenyRunResult> {
  const reason = reasonOf(o.reason);
  const { actor, key } = operatorOf(o);
  const { pending } = await currentStop(client, runId, o.expectedStop);
  const call = boundCall(pending);
  const id = `${DENIAL_ID_PREFIX}${randomUUID()}`;
  const signed = key
    ? { id, auth: signRequest(key, 'deny', runId, approvalSignedFields({ ...call, id, actor, reason })) }
    : undefined;
  const { denial, withdrawn } = await withStore(o, (s) =>
    s.deny({ ...call, actor, reason, ...(signed ? { signed } : {}) }),
  );
  return { denial, withdrawn, call: pending };
}

// ---- The rules ------------------------------------------------------------------------

/**
 * What a decision binds: the run, the stop and the exact call (its digest). A stop recorded
 * before approvals named the digest cannot be approved: exit 3, nothing stored.
 */
function boundCall(p: PendingApproval) {
  if (!p.argsDigest)
    throw new CliError(
      Exit.REFUSED,
      `run ${p.runId} stopped at ${p.stopRef} before approvals were bound to the exact call: its stop names ` +
        `no call digest, so no approval can authorise it safely; deny it, or stop the run and start it again`,
    );
  return {
    runId: p.runId,
    stopRef: p.stopRef,
    tool: p.tool,
    fingerprint: p.fingerprint,
    argsHash: p.argsDigest,
  };
}

function reasonOf(reason: unknown): string {
  if (typeof reason !== 'string' || reason.trim() === '')
    throw new CliError(Exit.USAGE, 'an approval decision needs a reason (what was checked)');
  return reason;
}

/** The actor without a key or an explicit name: AGENTCTL_ACTOR, else USER, else `operator`. */
function envActor(env: NodeJS.ProcessEnv): string {
  return env.AGENTCTL_ACTOR || env.USER || env.USERNAME || 'operator';
}

/**
 * Who decides, and the key that signs for them: with a key its operator (another actor is
 * exit 2); without one the actor named, else from the environment, unsigned.
 */
function operatorOf(o: DecideOptions): { actor: string; key: OperatorKeyFile | null } {
  const env = o.env ?? process.env;
  const key = keyOf(o.key === undefined ? env.AGENT_OPERATOR_KEY_FILE || null : o.key);
  const actor = o.actor ?? key?.operator ?? envActor(env);
  if (typeof actor !== 'string' || actor.trim() === '')
    throw new CliError(Exit.USAGE, 'the actor must be a non-empty name');
  if (key && key.operator !== actor)
    throw new CliError(
      Exit.USAGE,
      `actor ${actor} does not match the signing key's operator "${key.operator}"`,
    );
  return { actor, key };
}

function keyOf(key: OperatorKeyFile | string | null): OperatorKeyFile | null {
  if (key === null) return null;
  if (typeof key === 'string') {
    try {
      return readOperatorKey(key);
    } catch (err) {
      throw new CliError(Exit.USAGE, (err as Error).message, { cause: err });
    }
  }
  if (typeof key !== 'object' || typeof key.operator !== 'string' || typeof key.privateKey !== 'string')
    throw new CliError(Exit.USAGE, 'operator key: expected {"operator", "privateKey"}');
  return key;
}

/** The resume `approve` sends, signed with the operator's key when there is one. */
function resumeOf(key: OperatorKeyFile | null, runId: string, req: ResumeRequest): ResumeRequest {
  if (!key) return req;
  const fields = { ...req, precondition: req.precondition ?? '' };
  return { ...fields, auth: signRequest(key, 'resume', runId, fields) };
}

/**
 * The run's current approval stop, or exit 3 saying what the run is doing instead (or, with
 * `expected`, that it has moved on from the stop and call the caller saw).
 */
async function currentStop(
  client: Client,
  runId: string,
  expected?: ExpectedStop,
): Promise<{ handle: WorkflowHandle; pending: PendingApproval }> {
  const { handle, desc } = await describeRun(client, runId);
  if (isClosed(desc))
    throw new CliError(Exit.REFUSED, `run ${runId} is closed (${desc.status.name}); nothing to approve`);
  // No checkpoint handler (no guard engine) or one this client cannot decode (exit 5): not a refusal.
  const cp = await handle.query(checkpointQuery).catch(unanswered(handle, 'nothing was approved'));
  const pending = pendingApprovalOf(runId, cp);
  if (!pending) {
    const why = cp.stop ? `it is stopped for ${cp.stop.reason}` : 'it is not stopped';
    throw new CliError(Exit.REFUSED, `run ${runId} is not waiting for an approval (${why})`);
  }
  const seen = (e: ExpectedStop, p: PendingApproval) =>
    e.stopRef === p.stopRef &&
    e.fingerprint === p.fingerprint &&
    (e.argsDigest === undefined || e.argsDigest === p.argsDigest);
  if (expected && !seen(expected, pending))
    throw new CliError(
      Exit.REFUSED,
      `run ${runId} has moved on: it now waits at ${pending.stopRef} on ${pending.argsDigest ?? pending.fingerprint}, not at ` +
        `${expected.stopRef} on ${expected.argsDigest ?? expected.fingerprint}; look at the call again before deciding`,
    );
  return { handle, pending };
}

/**
 * Runs `fn` on the approval store in the given ledger, or in one opened from its URL (and
 * closed after). With the workers' operators the store can tell which approvals a worker
 * will trust, so one it would refuse is audited `refused`, not `approved`. A bad operators
 * file or store input is exit 2, a ledger failure exit 1.
 */
async function withStore<T>(o: ApprovalStoreOptions, fn: (store: ApprovalStore) => Promise<T>): Promise<T> {
  const env = o.env ?? process.env;
  let operators: OperatorRegistry;
  try {
    operators = o.operators ?? OperatorRegistry.fromEnv(env);
  } catch (err) {
    throw new CliError(Exit.USAGE, (err as Error).message, { cause: err });
  }
  let opened: Ledger | undefined;
  try {
    const { ApprovalStore } = await import('../storage/approvals/approval-store');
    let ledger = o.ledger;
    if (!ledger) {
      const { ledgerUrlFromEnv, openLedger } = await import('../storage/ledger/open-ledger');
      ledger = opened = await openLedger(o.ledgerUrl ?? ledgerUrlFromEnv(env));
    }
    const store = ApprovalStore.over(ledger);
    return await fn(operators.isOpen ? store : store.verifiedBy(approvalVerifier(operators)));
  } catch (err) {
    if (err instanceof ApprovalError) throw new CliError(Exit.USAGE, err.message, { cause: err });
    if (err instanceof LedgerError) throw new CliError(Exit.ERROR, err.message, { cause: err });
    throw err;
  } finally {
    await opened?.close().catch(() => undefined);
  }
}
