/**
 * The worker side of the gate's audit (core/gate.ts): every stop, resume or
 * approval a run refuses leaves one `refused` row in the approval store's audit, with its reason.
 * One function for every engine's worker: an `agentRun` worker registers it as `auditRefusal`
 * (activities/run/verify-activity.ts), an AI SDK worker as `agentLoopGuardAuditRefusal`
 * (core/framework-types.ts GUARD_ACTIVITY). Node code.
 */
import type { RefusalAudit } from '../../core/resume-check';
import type { ApprovalStore } from './approval-store';

/** The audit activity over a worker's approval store (none: nothing to write, nothing fails). */
export function refusalAuditor(store: () => ApprovalStore | null): (input: RefusalAudit) => Promise<void> {
  return async (input) => {
    const s = store();
    if (!s) return;
    await s.refuseRequest(
      input.runId,
      input.stopRef,
      input.actor,
      `${input.action} ${input.requestId} refused: ${input.reason}`,
    );
  };
}
