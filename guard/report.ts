/**
 * Builds the StopReport of docs/spec.md §4 from the guard's state and the stop that ended a run.
 * The resume condition and the next allowed action are derived from the reason, so an
 * operator reading a report knows what has to change before `resume` is accepted.
 */
import { TerminalState } from './constants';
import { GuardReason, resumeConditionOf } from './reasons';
import type { LoopGuard } from './loop-guard';
import type { StopReport } from './schemas';

/** What the caller knows about the stop beyond the guard's state. */
export interface StopContext {
  readonly terminalState: TerminalState;
  readonly reason: string;
  /** The call that ended the run (refused by before(), or the one whose result stopped it). */
  readonly blockedCall?: {
    readonly tool: string;
    readonly fingerprint: string;
    /** The call's digest (`sha256:<64 hex>`), when the worker computed one: what an approval binds. */
    readonly args_digest?: string;
  } | null;
  /** Checkpoint id the run can resume from; defaults to `checkpoint-<steps>`. */
  readonly checkpoint?: string | null;
  /** Human-readable unmet precondition, when the caller knows better than the guard. */
  readonly unmet?: string | null;
  /** Extra completed items (step summaries) to list after the completed keys. */
  readonly completedExtra?: readonly string[];
}

/** The completed keys a report lists: all of them, or the newest with a ledger window. */
function keysOf(guard: LoopGuard): string[] {
  const keys = guard.completedKeys();
  return guard.ledgerWindow === null ? keys : keys.slice(-REPORT_COMPLETED_KEYS);
}

function unmetFor(reason: string, guard: LoopGuard): string | null {
  switch (reason) {
    case GuardReason.STEP_BUDGET:
      return `step budget of ${guard.config.maxSteps} used`;
    case GuardReason.WALL_CLOCK_BUDGET:
      return `wall-clock budget of ${guard.config.maxMs} ms used`;
    case GuardReason.TOKEN_BUDGET:
      return `token budget of ${guard.config.maxTokens} exceeded`;
    case GuardReason.COST_BUDGET:
      return `cost budget of ${guard.config.maxCostUsd} USD exceeded`;
    case GuardReason.WAIT_BUDGET:
      return `more than ${guard.config.maxWaitPolls} honoured polls without progress`;
    case GuardReason.SAME_CALL_REPEAT:
      return `the same call ran ${guard.config.sameCallLimit} times without progress`;
    case GuardReason.NEAR_CALL_REPEAT:
      return `the same call, reworded, ran ${guard.config.sameCallLimit} times without progress`;
    case GuardReason.SHORT_CYCLE:
      return 'calls alternate A-B-A-B without progress';
    case GuardReason.REAPPLIED_EDIT:
      return `the same edit grew the workspace ${guard.config.sameCallLimit} times in a row (applied again on top of itself)`;
    case GuardReason.NO_PROGRESS:
      return `${guard.config.noProgressLimit} calls without a change in external state`;
    case GuardReason.PRECONDITION_UNCHANGED:
      return guard.lastUnmetPrecondition ?? 'a precondition the call needs has not changed';
    default:
      // A FATAL stop: the tool's own words for what is missing, when it gave any.
      return guard.stopped?.reason === reason ? guard.lastFatalMessage : null;
  }
}

/** The newest completed keys a StopReport lists when the guard has a ledger window. */
export const REPORT_COMPLETED_KEYS = 100;

/** Builds the StopReport for a run that did not end COMPLETED. */
export function buildStopReport(guard: LoopGuard, ctx: StopContext): StopReport {
  const state = ctx.terminalState;
  const checkpoint = ctx.checkpoint === undefined ? `checkpoint-${guard.stepCount}` : ctx.checkpoint;
  const resume = resumeConditionOf(ctx.reason, state, guard.progressVersion);
  let next = 'resume_from_checkpoint';
  if (state === TerminalState.FAILED) next = 'none';
  else if (state === TerminalState.PARTIAL) next = 'deliver_partial_result';
  return {
    terminal_state: state,
    guard_reason: ctx.reason,
    // With a ledger window: the newest keys and the count (`agentctl ledger list --run` lists all).
    completed: [...keysOf(guard), ...(ctx.completedExtra ?? [])],
    ...(guard.ledgerWindow !== null ? { completed_total: guard.completedTotal } : {}),
    last_safe_checkpoint: checkpoint,
    unmet_precondition: ctx.unmet ?? unmetFor(ctx.reason, guard),
    resume_condition: resume,
    next_allowed_action: next,
    steps: guard.stepCount,
    last_progress_version: guard.progressVersion,
    blocked_call: ctx.blockedCall ?? null,
    ...(guard.steers.length > 0
      ? { steers: guard.steers.map((s) => ({ step: s.step, reason: s.reason, fingerprint: s.fingerprint })) }
      : {}),
  };
}
