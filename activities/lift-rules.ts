/**
 * The lift rules every engine's worker shares (docs/spec.md §4, "resume"): what re-verifies,
 * from external state, that an approval stop, a tenant spend-limit stop or a lost write outcome
 * no longer holds. The agentRun worker (activities/run/verify-activity.ts) and an AI SDK or
 * OpenAI Agents worker (worker/guard-activities.ts `guardActivities`) both call
 * {@link sharedLift} first; only the rules that differ by engine (a tool's own precondition,
 * the progress version, the user's `verifyPrecondition`) stay with each. Worker code.
 */
import { GuardReason, ResultCode } from '../guard';
import type { ApprovalStore } from '../storage/approvals/approval-store';
import { LedgerState, type Ledger } from '../storage/ledger';
import type { SpendStore } from '../storage/spend';
import type { VerifyInput } from './types';

/** A shared rule's verdict; `approvalId` names the approval that lifted an approval stop. */
export interface Lift {
  readonly changed: boolean;
  readonly detail: string;
  readonly approvalId?: string;
}

/** What the shared rules read: the worker's stores. */
export interface LiftStores {
  readonly ledger: Ledger;
  /** The approval store (null: this worker keeps none, so no approval can lift a stop). */
  readonly approvals: ApprovalStore | null;
  /** The tenant spend store (null: this worker has no spend limits). */
  readonly spend: SpendStore | null;
  /** Whether approvals here are signed by a known operator (a closed operators file). */
  readonly signed: boolean;
}

/**
 * The verdict of the shared rule for `input.reason`, or null when the stop's reason has none
 * of them (the engine's own rule decides). `argsHash` is the blocked call's digest as this
 * engine computes it (from the tool's normalised args), never taken from the caller.
 */
export async function sharedLift(
  input: VerifyInput,
  stores: LiftStores,
  argsHash: () => string,
): Promise<Lift | null> {
  if (input.reason === GuardReason.APPROVAL_REQUIRED || input.reason === ResultCode.APPROVAL_INVALID)
    return approvalLift(input, stores, argsHash);
  if (input.reason === GuardReason.SPEND_LIMIT) {
    // The tenant's window must have room for the refused call again (spend aged out, or an
    // operator's signed raise of the cap); a worker without limits has nothing to wait for.
    const room = stores.spend
      ? await stores.spend.roomFor(input.runId)
      : { ok: true, detail: 'this worker has no spend limits' };
    return { changed: room.ok, detail: room.detail };
  }
  if (input.reason === ResultCode.OUTCOME_UNKNOWN && input.operationKey) {
    const rec = await stores.ledger.get(input.operationKey);
    const settled = rec !== null && rec.state !== LedgerState.UNKNOWN;
    return {
      changed: settled,
      detail: settled
        ? `ledger record ${input.operationKey} settled as ${rec?.state}`
        : `ledger record ${input.operationKey} is still UNKNOWN`,
    };
  }
  return null;
}

/**
 * The `approval` lift rule: a valid approval exists for this run, this stop and exactly the
 * blocked call — bound to its digest, recomputed on this worker.
 */
async function approvalLift(input: VerifyInput, stores: LiftStores, argsHash: () => string): Promise<Lift> {
  const fingerprint = input.blockedFingerprint ?? null;
  const stopRef = input.stopRef ?? null;
  if (fingerprint === null || stopRef === null || !input.blockedTool)
    return {
      changed: false,
      detail: 'the stop names no blocked call or checkpoint an approval could be bound to',
    };
  if (!stores.approvals) return { changed: false, detail: 'this worker has no approval store' };
  const check = await stores.approvals.checkStop(
    input.runId,
    { fingerprint, argsHash: argsHash() },
    stopRef,
    `${input.runId}/verify`,
  );
  if (!check.ok) return { changed: false, detail: `not approved (${check.why}): ${check.message}` };
  const a = check.approval;
  return {
    changed: true,
    detail: `approval ${a.id} ${a.auth && stores.signed ? 'signed by' : 'by'} ${a.approver}, valid until ${a.expiresAt}: ${a.reason}`,
    approvalId: a.id,
  };
}
