/**
 * `guardActivities` (exported by `agent-loop-guard/ai-sdk/worker` and `/openai-agents/worker`):
 * the worker side of a framework guard's `resume` update (core/guard-activities.ts). The operator's signature and role are checked
 * by the same registry as an `agentRun` worker's; a stop is lifted by its reason's rule
 * (docs/spec.md §7.4): an approval stop by a valid approval of exactly the blocked call (its
 * digest recomputed here from the blocked input), `outcome_unknown` when its ledger record is
 * settled, the loop stops by the user's own `verifyPrecondition` (none: refused, said plainly).
 * Node code.
 */
import { refusalAuditor } from '../storage/approvals/refusal-audit';
import type { VerifyInput } from '../activities/types';
import { sharedLift } from '../activities/lift-rules';
import { canonicalize, type Json } from '../guard';
import { createOperatorActivities } from '../operators/activities';
import type { OperatorRegistry } from '../operators/registry';
import { sha256ArgsHash, type Ledger } from '../storage/ledger';
import type { SpendLimits } from '../storage/spend';
import { spendActivities } from './spend';
import { workerStores } from './stores';
import type { GuardActivities, GuardVerifyOutput } from '../core/guard-activities';
import { boundedObservation } from '../core/resume-note';
import { GUARD_ACTIVITY } from '../core/framework-types';

/** The digest an approval binds: SHA-256 of the tool and its canonical input. */
export function callDigest(tool: string, input: unknown): string {
  return sha256ArgsHash(tool, canonicalize(input as Json));
}

/** What a worker's own `verifyPrecondition` answers. */
export interface PreconditionCheck {
  /** Whether what stopped the loop no longer holds (the resume is accepted). */
  readonly changed: boolean;
  /** What was checked, in words (the resume's answer, the trace, the note to the model). */
  readonly detail: string;
  /**
   * What the check read now (the blocked call's fresh result, say): when the resume is
   * accepted, the model is told it before its next turn, so it does not act on what it read
   * before the stop. Redacted and cut at 4,000 characters of JSON.
   */
  readonly observed?: unknown;
}

/** Options of {@link guardActivities}. */
export interface GuardActivitiesOptions {
  /** Who may resume and approve (default AGENT_OPERATORS_FILE, else open mode). */
  readonly operators?: OperatorRegistry;
  /**
   * Whether what stopped a loop (repeats, no progress, a precondition) has changed: re-check
   * the outside world from the blocked call (`blockedTool`, `blockedArgs`). Without it such a
   * resume is refused: nothing could verify that the next try would differ.
   */
  readonly verifyPrecondition?: (input: VerifyInput) => Promise<PreconditionCheck>;
  /**
   * The tenants' spend caps the agents' model calls are charged to (`guardAgent`'s `spend`),
   * in the ledger's database like an `agentRun` worker's (default AGENT_SPEND_LIMITS; none:
   * nothing is reserved). Raises of a cap count when signed by `operators`. Malformed limits
   * refuse the worker when it is built (worker/stores.ts, as an `agentRun` worker's).
   */
  readonly spendLimits?: SpendLimits | null;
}

/**
 * The activities the guard's `resume` and `stop` updates call; register them next to `ledgerWrites`.
 * @throws {SpendLimitsInvalidError} when `spendLimits` (or `AGENT_SPEND_LIMITS`) is malformed
 */
export function guardActivities(ledger: Ledger, options: GuardActivitiesOptions = {}): GuardActivities {
  const { operators, approvals, spend } = workerStores(ledger, {
    ...(options.operators ? { operators: options.operators } : {}),
    ...(options.spendLimits !== undefined ? { spendLimits: options.spendLimits } : {}),
  });
  const { verifyOperator } = createOperatorActivities(operators);
  const spendActs = spendActivities(spend);

  async function verifyResume(input: VerifyInput): Promise<GuardVerifyOutput> {
    const progressVersion = input.checkpointProgressVersion;
    const out = (changed: boolean, detail: string, approvalId?: string): GuardVerifyOutput => ({
      changed,
      detail,
      progressVersion,
      ...(approvalId ? { approvalId } : {}),
    });
    // The rules every engine shares (approval, spend limit, a lost write outcome): one place.
    const shared = await sharedLift(input, { ledger, approvals, spend, signed: !operators.isOpen }, () =>
      callDigest(input.blockedTool ?? '', input.blockedArgs),
    );
    if (shared) return out(shared.changed, shared.detail, shared.approvalId);
    if (!options.verifyPrecondition)
      return out(
        false,
        `nothing on this worker can verify that ${input.reason} no longer holds: give guardActivities a verifyPrecondition`,
      );
    const v = await options.verifyPrecondition(input);
    if (!v.changed || v.observed === undefined) return out(v.changed, v.detail);
    const observed = { tool: null, result: boundedObservation(v.observed) };
    return { ...out(v.changed, v.detail), observed };
  }

  return {
    [GUARD_ACTIVITY.verifyOperator]: verifyOperator,
    [GUARD_ACTIVITY.verifyResume]: verifyResume,
    [GUARD_ACTIVITY.callDigest]: (i: { runId: string; tool: string; input: unknown }) =>
      Promise.resolve(callDigest(i.tool, i.input)),
    [GUARD_ACTIVITY.reserveSpend]: spendActs.agentLoopGuardReserveSpend,
    [GUARD_ACTIVITY.settleSpend]: spendActs.agentLoopGuardSettleSpend,
    // Every refusal the core's gate decides leaves one audit row, as on an agentRun worker.
    [GUARD_ACTIVITY.auditRefusal]: refusalAuditor(() => approvals),
  } as GuardActivities;
}
