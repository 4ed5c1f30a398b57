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
 *
 * Three parts live in files of their own and are re-exported here: the approval a run waits on
 * (pending-approval.ts), who decides and the key that signs (approval-decider.ts), and how the
 * client reaches the store (approval-store-access.ts).
 */
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { ApprovalRecord, AuditEntry, SignedGrant } from '../storage/approvals/types';
import { APPROVAL_ID_PREFIX, approvalSignedFields, DENIAL_ID_PREFIX } from '../storage/approvals/verify';
import { signRequest } from '../operators/sign';
import { operatorOf, reasonOf, resumeOf, type DecideOptions } from './approval-decider';
import { withStore, type ApprovalStoreOptions } from './approval-store-access';
import { CliError, Exit } from './format';
import { currentStop, type PendingApproval } from './pending-approval';
import { sendResume, type ResumeOutcome } from './runs';

export type { DecideOptions } from './approval-decider';
export type { ApprovalStoreOptions } from './approval-store-access';
export {
  getPendingApproval,
  listPendingApprovals,
  pendingApprovalOf,
  type ExpectedStop,
  type ListPendingOptions,
  type PendingApproval,
} from './pending-approval';

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
