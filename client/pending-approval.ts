/**
 * The approval a run waits on: which call an open run is stopped on for an approval, read from
 * its checkpoint (never given by the caller), for one run or every open run a visibility query
 * finds. It is what a decider is shown (`agentctl approvals list`, the console) and what
 * approveRun and denyRun check again just before they store anything, so a decision binds the
 * run's current stop and call. Apart from the decisions (client/approvals.ts) because it only
 * reads the run: no store, no key.
 */
import type { Client, WorkflowHandle } from '@temporalio/client';
import { checkpointQuery, type Checkpoint } from '../common/contracts';
import { redact } from '../common/redact';
import { GuardReason, ResultCode } from '../guard';
import { unanswered } from './engine';
import { CliError, Exit } from './format';
import { describeRun, isClosed } from './runs';

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

/** What {@link listPendingApprovals} looks at. */
export interface ListPendingOptions {
  /** Only this run (exit 1 when there is no such run); default: every open run stopped for an approval. */
  readonly runId?: string;
}

/** The stop and call a decider was shown; `argsDigest`, when given, must match too. */
export interface ExpectedStop {
  readonly stopRef: string;
  readonly fingerprint: string;
  readonly argsDigest?: string | null;
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

/**
 * The run's current approval stop, or exit 3 saying what the run is doing instead (or, with
 * `expected`, that it has moved on from the stop and call the caller saw).
 */
export async function currentStop(
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
