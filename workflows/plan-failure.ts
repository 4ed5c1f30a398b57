/**
 * What a failed `plan` activity does to the run (docs/spec.md §7.7): it stops, it never
 * fails. Failures that are not the planner's (the ledger, the context window, a budget, the
 * tenant's spend limit) stop with their own reasons; a model that did not answer within the
 * planner timeout stops `planner_timeout`; anything else is `planner_failed`.
 * Workflow code.
 */
import { ActivityFailure, ApplicationFailure, TimeoutFailure } from '@temporalio/workflow';
import {
  unreadableReplyUsage,
  CONTEXT_EXHAUSTED_ERROR,
  COST_CEILING_ERROR,
  LEDGER_UNAVAILABLE,
  PLANNER_TIMEOUT_ERROR,
  SPEND_LIMIT_ERRORS,
  TOKEN_CEILING_ERROR,
} from '../common/planner';
import { PAYLOAD_TOO_LARGE } from '../common/payload-limits';
import { GuardReason, TerminalState } from '../guard';
import { failureMessage } from '../core/resume-check';
import type { RunState } from './run-state';

/**
 * Charges the usage a failed plan activity carries in its failure's details: a reply the model
 * billed but the planner could not read, and every request of the turn the plan
 * activity's attempts sent (served usage, whatever the failure); nothing without it.
 */
export function chargeUnreadableReply(run: RunState, err: ActivityFailure): void {
  const cause = err.cause instanceof ApplicationFailure ? err.cause : null;
  const usage = cause ? unreadableReplyUsage(cause.details) : null;
  if (usage === null) return;
  run.guard.charge({ steps: 0, tokens: usage.tokens, costUsd: usage.costUsd });
}

/**
 * Plan-activity failures that are not the planner's: the stop reason each becomes, and its
 * terminal state (any other failure is `planner_failed`).
 */
const PLAN_FAILURE_REASONS: Readonly<Record<string, readonly [GuardReason, TerminalState]>> = {
  // The planner answered but the ledger or the conversation store could not be read.
  [LEDGER_UNAVAILABLE]: [GuardReason.INFRASTRUCTURE_FAULT, TerminalState.NEEDS_HUMAN],
  // Even compacted, the next request does not fit the model's window.
  [CONTEXT_EXHAUSTED_ERROR]: [GuardReason.CONTEXT_EXHAUSTED, TerminalState.NEEDS_HUMAN],
  // The planner's answer is too big for history (e.g. a huge reply).
  [PAYLOAD_TOO_LARGE]: [GuardReason.PAYLOAD_TOO_LARGE, TerminalState.NEEDS_HUMAN],
  // The next model call's worst case does not fit the run's budget: rule 3 before the call,
  // the usual budget stop (resumable with a raise); the model was not called.
  [COST_CEILING_ERROR]: [GuardReason.COST_BUDGET, TerminalState.STOPPED_LOOP_GUARD],
  [TOKEN_CEILING_ERROR]: [GuardReason.TOKEN_BUDGET, TerminalState.STOPPED_LOOP_GUARD],
  // The tenant's spend limit refused the call (or cannot price it); the model was not called.
  ...Object.fromEntries(
    SPEND_LIMIT_ERRORS.map((type) => [type, [GuardReason.SPEND_LIMIT, TerminalState.NEEDS_HUMAN] as const]),
  ),
};

/** Stops the run for a `plan` activity failure that is not a cancellation. */
export function stopOnPlanFailure(run: RunState, err: ActivityFailure): void {
  // A planner that cannot answer (no key, bad auth, a broken reply, retries exhausted) is
  // a person's problem, not a reason to lose the run: stop with a checkpoint and wait.
  // A reply it could not read was billed all the same: counted before the stop's report.
  chargeUnreadableReply(run, err);
  const cause = err.cause instanceof ApplicationFailure ? err.cause : null;
  const known = cause?.type ? PLAN_FAILURE_REASONS[cause.type] : undefined;
  if (cause?.type && known) {
    run.runtimeStop(known[0], known[1], cause.type, failureMessage(err));
    return;
  }
  if (cause?.type === PLANNER_TIMEOUT_ERROR || err.cause instanceof TimeoutFailure) {
    // A model that is merely slow is not misconfigured: the report says so.
    const detail =
      cause?.type === PLANNER_TIMEOUT_ERROR
        ? failureMessage(err)
        : `the plan activity timed out (${failureMessage(err)}); a slow model needs a longer planner timeout: agentctl start --planner-timeout <s>`;
    run.runtimeStop(GuardReason.PLANNER_TIMEOUT, TerminalState.NEEDS_HUMAN, cause?.type ?? 'timeout', detail);
    return;
  }
  const detail = `planner failed: ${cause?.type ? `${cause.type}: ` : ''}${failureMessage(err)}`;
  run.runtimeStop(
    GuardReason.PLANNER_FAILED,
    TerminalState.NEEDS_HUMAN,
    cause?.type ?? 'activity_failure',
    detail,
  );
}
