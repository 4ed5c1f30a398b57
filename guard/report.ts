/**
 * Builds the StopReport of SPEC §4 from the guard's state and the stop that ended a run.
 * The resume condition and the next allowed action are derived from the reason, so an
 * operator reading a report knows what has to change before `resume` is accepted.
 */
import { BUDGET_REASONS, NEEDS_HUMAN_CODES, TerminalState } from './constants';
import type { LoopGuard } from './loop-guard';
import type { StopReport } from './schemas';

/** What the caller knows about the stop beyond the guard's state. */
export interface StopContext {
  readonly terminalState: TerminalState;
  readonly reason: string;
  /** The call that ended the run (refused by before(), or the one whose result stopped it). */
  readonly blockedCall?: { readonly tool: string; readonly fingerprint: string } | null;
  /** Checkpoint id the run can resume from; defaults to `checkpoint-<steps>`. */
  readonly checkpoint?: string | null;
  /** Human-readable unmet precondition, when the caller knows better than the guard. */
  readonly unmet?: string | null;
  /** Extra completed items (step summaries) to list after the completed keys. */
  readonly completedExtra?: readonly string[];
}

const LOOP_REASONS = new Set(['same_call_repeat', 'short_cycle', 'no_progress', 'precondition_unchanged']);

function resumeCondition(reason: string, state: TerminalState, progressVersion: number): string | null {
  if (state === TerminalState.FAILED) return null;
  if (BUDGET_REASONS.has(reason)) return `operator raised the ${reason.replace('_budget', '')} budget`;
  if (LOOP_REASONS.has(reason)) return `external state changed (progress version above ${progressVersion})`;
  if (reason === 'permission_denied') return 'permission granted and re-verified';
  if (reason === 'policy_blocked') return 'policy changed and re-verified';
  if (reason === 'idempotency_conflict') return 'operator settled the conflicting operation key';
  if (reason === 'outcome_unknown') return 'operator resolved the ledger record (agentctl ledger resolve)';
  if (reason === 'operator_stop') return 'operator resume';
  if (reason === 'planner_failed') return 'planner reachable and configured (API key, base URL, model)';
  if (reason === 'planner_exhausted') return 'planner has more work (new goal or script)';
  if (NEEDS_HUMAN_CODES.has(reason)) return 'a person approved the action';
  return 'precondition changed and re-verified';
}

function unmetFor(reason: string, guard: LoopGuard): string | null {
  switch (reason) {
    case 'step_budget':
      return `step budget of ${guard.config.maxSteps} used`;
    case 'wall_clock_budget':
      return `wall-clock budget of ${guard.config.maxMs} ms used`;
    case 'token_budget':
      return `token budget of ${guard.config.maxTokens} exceeded`;
    case 'cost_budget':
      return `cost budget of ${guard.config.maxCostUsd} USD exceeded`;
    case 'wait_budget':
      return `more than ${guard.config.maxWaitPolls} honoured polls without progress`;
    case 'same_call_repeat':
      return `the same call ran ${guard.config.sameCallLimit} times without progress`;
    case 'short_cycle':
      return 'calls alternate A-B-A-B without progress';
    case 'no_progress':
      return `${guard.config.noProgressLimit} calls without a change in external state`;
    case 'precondition_unchanged':
      return guard.lastUnmetPrecondition ?? 'a precondition the call needs has not changed';
    default:
      // A FATAL stop: the tool's own words for what is missing, when it gave any.
      return guard.stopped?.reason === reason ? guard.lastFatalMessage : null;
  }
}

/** Builds the StopReport for a run that did not end COMPLETED. */
export function buildStopReport(guard: LoopGuard, ctx: StopContext): StopReport {
  const state = ctx.terminalState;
  const checkpoint = ctx.checkpoint === undefined ? `checkpoint-${guard.stepCount}` : ctx.checkpoint;
  const resume = resumeCondition(ctx.reason, state, guard.progressVersion);
  let next = 'resume_from_checkpoint';
  if (state === TerminalState.FAILED) next = 'none';
  else if (state === TerminalState.PARTIAL) next = 'deliver_partial_result';
  return {
    terminal_state: state,
    guard_reason: ctx.reason,
    completed: [...guard.completedKeys(), ...(ctx.completedExtra ?? [])],
    last_safe_checkpoint: checkpoint,
    unmet_precondition: ctx.unmet ?? unmetFor(ctx.reason, guard),
    resume_condition: resume,
    next_allowed_action: next,
    steps: guard.stepCount,
    last_progress_version: guard.progressVersion,
    blocked_call: ctx.blockedCall ?? null,
  };
}
