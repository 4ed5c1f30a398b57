/**
 * @module reasons
 *
 * The one catalogue of why a run stops and what lifts the stop. Every layer — the guard,
 * the workflow, the activities, the StopReport, agentctl and the docs — reads reasons
 * from here instead of retyping string literals, so a new reason is added in one place
 * together with its terminal state, its resume condition and its lift rule.
 */
import { TerminalState } from './constants';

/** Reasons the guard (or the runtime on its behalf) stops a run. */
export const GuardReason = {
  STEP_BUDGET: 'step_budget',
  WALL_CLOCK_BUDGET: 'wall_clock_budget',
  TOKEN_BUDGET: 'token_budget',
  COST_BUDGET: 'cost_budget',
  WAIT_BUDGET: 'wait_budget',
  SAME_CALL_REPEAT: 'same_call_repeat',
  /** Rule 5 for calls that differ only in the wording of a tool's `similarArgs` (§3, Near repeats). */
  NEAR_CALL_REPEAT: 'near_call_repeat',
  SHORT_CYCLE: 'short_cycle',
  /**
   * The same call changed the workspace again and again and each time it only grew (a file
   * gaining its own duplicate: an edit re-applied on top of itself). Needs workspace reports.
   */
  REAPPLIED_EDIT: 'reapplied_edit',
  /**
   * A tool's workspace report could not be read (the fingerprint threw, or the report does not
   * fit the schema): the guard cannot tell a change from a loop, so the run stops NEEDS_HUMAN.
   */
  WORKSPACE_UNKNOWN: 'workspace_unknown',
  PRECONDITION_UNCHANGED: 'precondition_unchanged',
  IDEMPOTENCY_CONFLICT: 'idempotency_conflict',
  NO_PROGRESS: 'no_progress',
  PLANNER_EXHAUSTED: 'planner_exhausted',
  PLANNER_FAILED: 'planner_failed',
  OPERATOR_STOP: 'operator_stop',
  /**
   * An activity the run depends on failed after all its retries (a database or tool backend
   * down): the run stops NEEDS_HUMAN with its checkpoint instead of failing.
   */
  INFRASTRUCTURE_FAULT: 'infrastructure_fault',
  /**
   * The call needs a person's approval before it runs (a tool's `requiresApproval` or the
   * worker's approval policy): the run stops NEEDS_HUMAN showing the exact call.
   */
  APPROVAL_REQUIRED: 'approval_required',
  /**
   * The model's context window cannot hold the next request even after compaction (and one
   * tighter retry after the provider refused it): the run stops NEEDS_HUMAN with its checkpoint.
   */
  CONTEXT_EXHAUSTED: 'context_exhausted',
  /**
   * Something the run had to pass through Temporal history (a tool's or the planner's
   * output, a checkpoint, a continue-as-new input) was above the payload limit
   * (common/payload-limits.ts): the run stops NEEDS_HUMAN with its checkpoint instead of failing.
   */
  PAYLOAD_TOO_LARGE: 'payload_too_large',
  /**
   * A sub-agent (a child run started by `spawn_agent`) stopped and waits for a person: the
   * parent waits with it, its StopReport naming the child. Resuming the child continues the
   * parent (docs/spec.md §7.14); the parent itself refuses a resume.
   */
  CHILD_STOPPED: 'child_stopped',
  /**
   * The run's tenant spend limit (`AGENT_SPEND_LIMITS`) refused the reservation of the next
   * model call's worst-case price, or the model has no price under that cap: the model was
   * not called and the run stops NEEDS_HUMAN with its checkpoint.
   */
  SPEND_LIMIT: 'spend_limit',
  /**
   * An LLM run's model kept replying without a tool call: after the run's
   * `textReplyLimit` notes it ends PARTIAL with the model's last text as its final message.
   * A reply with no tool call is never completion; only the finishing tool completes a run.
   */
  MODEL_STOPPED: 'model_stopped',
  /**
   * The model's reply was cut off at its output-token limit, also when asked again with twice
   * the limit: nothing of it ran; the run stops NEEDS_HUMAN.
   */
  MODEL_OUTPUT_TRUNCATED: 'model_output_truncated',
  /**
   * The model did not answer a request within the run's planner timeout, on every attempt of
   * the plan activity: the run stops NEEDS_HUMAN; the StopReport says how to give
   * a slow model more time.
   */
  PLANNER_TIMEOUT: 'planner_timeout',
  /**
   * A conversation the person closed (the `message` update with `close`): the run
   * ends PARTIAL. Only the finishing tool completes a conversation, as any run.
   */
  CONVERSATION_CLOSED: 'conversation_closed',
  /**
   * A conversation waited for the person's next message longer than its idle timeout
   * (`conversation.idleTimeoutMs`): the run ends PARTIAL, its StopReport naming what it asked.
   */
  CONVERSATION_IDLE: 'conversation_idle',
} as const;
/** One of {@link GuardReason}. */
export type GuardReason = (typeof GuardReason)[keyof typeof GuardReason];

/**
 * Result codes the runtime itself gives tool results (a tool may use any code of its own).
 * A FATAL result's code becomes the stop reason.
 */
export const ResultCode = {
  /** FATAL: the caller lacks a permission (401/403, or a tool's own check). */
  PERMISSION_DENIED: 'permission_denied',
  /** FATAL: a policy forbids the call. */
  POLICY_BLOCKED: 'policy_blocked',
  /** FATAL: a tool asks for a person's judgement or approval. */
  NEEDS_HUMAN: 'needs_human',
  /** FATAL: the ledger cannot tell whether a write happened (executor died after dispatch). */
  OUTCOME_UNKNOWN: 'outcome_unknown',
  /** FATAL: the operation key was completed by a call with other args. */
  IDEMPOTENCY_CONFLICT: 'idempotency_conflict',
  /** FATAL: the ledger holds a final failure for the key. */
  FAILED_FINAL: 'failed_final',
  /** FATAL: an unclassified tool error. */
  TOOL_ERROR: 'tool_error',
  /** FATAL without a code of its own. */
  FATAL: 'fatal',
  /** PRECONDITION: the args do not fit the tool's schema. */
  INVALID_ARGS: 'invalid_args',
  /** PRECONDITION: no tool of that name is registered. */
  UNKNOWN_TOOL: 'unknown_tool',
  /** PRECONDITION: a write proposed without an operation key. */
  MISSING_OPERATION_KEY: 'missing_operation_key',
  /** RETRYABLE: another executor holds a live claim on the key. */
  IN_PROGRESS: 'in_progress',
  /** FATAL: a call that needs a person's approval came without one (it did not run). */
  APPROVAL_REQUIRED: 'approval_required',
  /** FATAL: the approval given could not be used (used, expired, denied, another run or call); nothing ran. */
  APPROVAL_INVALID: 'approval_invalid',
  /**
   * PRECONDITION: `spawn_agent` was refused before anything started (tools the parent lacks,
   * a budget above what remains, the depth or children limit); the `unmet` text names why.
   */
  SPAWN_REFUSED: 'spawn_refused',
  /** PRECONDITION: a sub-agent ended without completing its goal (its resume window ran out, a kill switch). */
  CHILD_STOPPED: 'child_stopped',
  /** RETRYABLE: a sub-agent ran out of the budget it was given; spawning it again (with more, if left) may finish it. */
  CHILD_BUDGET: 'child_budget',
  /** PRECONDITION: a sub-agent's planner gave up (PARTIAL planner_exhausted). */
  CHILD_PARTIAL: 'child_partial',
  /** FATAL: a sub-agent FAILED; the parent stops NEEDS_HUMAN with it (docs/spec.md §7.14). */
  CHILD_FAILED: 'child_failed',
} as const;
/** One of {@link ResultCode}. */
export type ResultCode = (typeof ResultCode)[keyof typeof ResultCode];

/** FATAL codes that end a run NEEDS_HUMAN rather than FAILED: a tool refused, nothing ran. */
export const NEEDS_HUMAN_CODES: ReadonlySet<string> = new Set([
  ResultCode.PERMISSION_DENIED,
  ResultCode.POLICY_BLOCKED,
  ResultCode.NEEDS_HUMAN,
  ResultCode.APPROVAL_REQUIRED,
  ResultCode.APPROVAL_INVALID,
]);

/**
 * FATAL codes from the ledger that need a person too: the durable run passes them to its
 * guard in addition to {@link NEEDS_HUMAN_CODES} (the offline replay has no ledger).
 */
export const LEDGER_NEEDS_HUMAN_CODES: readonly string[] = Object.freeze([
  ResultCode.OUTCOME_UNKNOWN,
  ResultCode.IDEMPOTENCY_CONFLICT,
  // A failed sub-agent is a person's to look at; the parent keeps its checkpoint (§7.14).
  ResultCode.CHILD_FAILED,
]);

/** The budget a resume may raise, per budget stop reason. */
export const BUDGET_RAISE_KEY = {
  [GuardReason.STEP_BUDGET]: 'maxSteps',
  [GuardReason.WALL_CLOCK_BUDGET]: 'maxMs',
  [GuardReason.TOKEN_BUDGET]: 'maxTokens',
  [GuardReason.COST_BUDGET]: 'maxCostUsd',
  [GuardReason.WAIT_BUDGET]: 'maxWaitPolls',
} as const;
/** A budget stop reason. */
export type BudgetReason = keyof typeof BUDGET_RAISE_KEY;
/** A budget a resume may raise. */
export type BudgetKey = (typeof BUDGET_RAISE_KEY)[BudgetReason];

/** Budget reasons: a resume for these is "changed" when the operator raised the budget. */
export const BUDGET_REASONS: ReadonlySet<string> = new Set(Object.keys(BUDGET_RAISE_KEY));

/** True for a budget stop reason. */
export function isBudgetReason(reason: string): reason is BudgetReason {
  return BUDGET_REASONS.has(reason);
}

/** The one budget a resume may raise for a stop reason (null: not a budget stop). */
export function raiseKeyOf(reason: string): BudgetKey | null {
  return isBudgetReason(reason) ? BUDGET_RAISE_KEY[reason] : null;
}

/** Loop reasons: lifted when external state moved past the checkpoint. */
export const LOOP_REASONS: ReadonlySet<string> = new Set([
  GuardReason.SAME_CALL_REPEAT,
  GuardReason.NEAR_CALL_REPEAT,
  GuardReason.SHORT_CYCLE,
  GuardReason.REAPPLIED_EDIT,
  GuardReason.NO_PROGRESS,
  GuardReason.PRECONDITION_UNCHANGED,
]);

/**
 * How a resume of a stopped run is verified, per stop reason:
 * - `raise`: the request raises the budget that stopped the run above what has been used;
 * - `operator`: an operator's resume is the verification (the operator stopped it);
 * - `planner`: the planner's next answer is the verification (it stops again if it fails);
 * - `ledger_settled`: the UNKNOWN ledger record was settled by an operator;
 * - `approval`: an approval bound to this run, this stop and this call's fingerprint exists
 *   (checked by an activity; it is consumed when the call runs);
 * - `retry`: the next attempt is the verification (an infrastructure fault; a write stays
 *   behind the ledger, so retrying it can never run it twice);
 * - `spend`: the tenant's spend window has room again for the call that was refused (spend
 *   aged out of the window, or an operator's signed raise of the tenant's cap), checked by
 *   an activity against the worker's spend store;
 * - `precondition`: an activity re-checks the blocked call's precondition (or that
 *   external state moved past the checkpoint's progress version);
 * - `child`: never by a resume of this run: the stopped sub-agent is resumed, and this run
 *   continues by itself when it does.
 */
export type LiftRule =
  | 'raise'
  | 'operator'
  | 'planner'
  | 'ledger_settled'
  | 'approval'
  | 'retry'
  | 'spend'
  | 'precondition'
  | 'child';

/** The lift rule of a stop reason (see {@link LiftRule}). */
export function liftRuleOf(reason: string): LiftRule {
  if (isBudgetReason(reason)) return 'raise';
  if (reason === GuardReason.OPERATOR_STOP || reason === GuardReason.CONTEXT_EXHAUSTED) return 'operator';
  if (reason === GuardReason.PLANNER_FAILED || reason === GuardReason.PLANNER_TIMEOUT) return 'planner';
  if (reason === GuardReason.MODEL_OUTPUT_TRUNCATED) return 'operator';
  if (reason === ResultCode.OUTCOME_UNKNOWN) return 'ledger_settled';
  if (reason === GuardReason.INFRASTRUCTURE_FAULT) return 'retry';
  if (reason === GuardReason.SPEND_LIMIT) return 'spend';
  if (reason === GuardReason.PAYLOAD_TOO_LARGE) return 'operator';
  if (reason === GuardReason.WORKSPACE_UNKNOWN) return 'operator';
  if (reason === GuardReason.APPROVAL_REQUIRED || reason === ResultCode.APPROVAL_INVALID) return 'approval';
  if (reason === GuardReason.CHILD_STOPPED) return 'child';
  if (reason === ResultCode.CHILD_FAILED) return 'operator';
  return 'precondition';
}

/** The StopReport's `resume_condition`: what has to change before a resume is accepted. */
export function resumeConditionOf(
  reason: string,
  state: TerminalState,
  progressVersion: number,
): string | null {
  if (state === TerminalState.FAILED) return null;
  if (isBudgetReason(reason)) return `operator raised the ${reason.replace('_budget', '')} budget`;
  if (LOOP_REASONS.has(reason)) return `external state changed (progress version above ${progressVersion})`;
  switch (reason) {
    case ResultCode.PERMISSION_DENIED:
      return 'permission granted and re-verified';
    case ResultCode.POLICY_BLOCKED:
      return 'policy changed and re-verified';
    case ResultCode.IDEMPOTENCY_CONFLICT:
      return 'operator settled the conflicting operation key';
    case ResultCode.OUTCOME_UNKNOWN:
      return 'operator resolved the ledger record (agentctl ledger resolve)';
    case GuardReason.OPERATOR_STOP:
      return 'operator resume';
    case GuardReason.PLANNER_FAILED:
      return 'planner reachable and configured (API key, base URL, model)';
    case GuardReason.PLANNER_EXHAUSTED:
      return 'planner has more work (new goal or script)';
    case GuardReason.PLANNER_TIMEOUT:
      return 'the model answers within the planner timeout (--planner-timeout)';
    case GuardReason.MODEL_OUTPUT_TRUNCATED:
      return 'operator resume; more output needs a new run (--max-output-tokens)';
    case GuardReason.MODEL_STOPPED:
      return 'the model calls the finishing tool (a new run)';
    case GuardReason.CONVERSATION_CLOSED:
    case GuardReason.CONVERSATION_IDLE:
      return 'the conversation ended: a new conversation (a new run)';
    case GuardReason.CONTEXT_EXHAUSTED:
      return 'operator resume after the cause is fixed (a larger contextTokens, a smaller tool result)';
    case GuardReason.INFRASTRUCTURE_FAULT:
      return 'the failing service (database, tool backend) is reachable again';
    case GuardReason.WORKSPACE_UNKNOWN:
      return "operator resume after the tool's workspace fingerprint is fixed";
    case GuardReason.PAYLOAD_TOO_LARGE:
      return 'operator resume after the cause is fixed (payload store reachable, a smaller tool result or planner output)';
    case GuardReason.APPROVAL_REQUIRED:
      return 'a person approved this exact call (agentctl approvals approve)';
    case GuardReason.CHILD_STOPPED:
      return 'the stopped sub-agent was resumed (agentctl resume CHILD; agentctl tree shows it)';
    case ResultCode.CHILD_FAILED:
      return 'a person looked at the failed sub-agent; operator resume';
    case GuardReason.SPEND_LIMIT:
      return "the tenant's spend window has room again, or its cap was raised (agentctl spend raise)";
    default:
      return NEEDS_HUMAN_CODES.has(reason)
        ? 'a person approved the action'
        : 'precondition changed and re-verified';
  }
}

/** What a run has used of each budget, to compare a raise against. */
export interface BudgetUse {
  readonly steps: number;
  readonly tokens: number;
  readonly costUsd: number;
  /** The honoured-poll budget in force (polls are counted per call, so the limit is the use). */
  readonly maxWaitPolls: number;
}

/**
 * True when `raise` lifts a budget stop: it raises the budget that stopped the run above
 * what has been used. The wall clock restarts on resume, so any explicit new wall-clock
 * budget is a real change.
 */
export function raiseLifts(
  reason: BudgetReason,
  raise: Partial<Record<BudgetKey, number | undefined>>,
  used: BudgetUse,
): boolean {
  const value = raise[BUDGET_RAISE_KEY[reason]] ?? 0;
  switch (reason) {
    case GuardReason.STEP_BUDGET:
      return value > used.steps;
    case GuardReason.WALL_CLOCK_BUDGET:
      return value > 0;
    case GuardReason.TOKEN_BUDGET:
      return value > used.tokens;
    case GuardReason.COST_BUDGET:
      return value > used.costUsd;
    case GuardReason.WAIT_BUDGET:
      return value > used.maxWaitPolls;
  }
}

/**
 * Which rule of docs/spec.md §3 made a decision, as `before.N` / `after.N` (for telemetry
 * and operators: "which rule refused which call"). Run-level records (signals, resumes,
 * planner ends) are `run`.
 */
export function ruleOf(phase: 'before' | 'after' | 'run', decision: string, reason: string | null): string {
  if (phase === 'run') return 'run';
  if (phase === 'before') {
    switch (reason) {
      case GuardReason.STEP_BUDGET:
        return 'before.1';
      case GuardReason.WALL_CLOCK_BUDGET:
        return 'before.2';
      case GuardReason.TOKEN_BUDGET:
      case GuardReason.COST_BUDGET:
        return 'before.3';
      case GuardReason.WAIT_BUDGET:
        return 'before.4';
      case GuardReason.SAME_CALL_REPEAT:
      case GuardReason.NEAR_CALL_REPEAT:
      case GuardReason.REAPPLIED_EDIT:
        return 'before.5';
      case GuardReason.SHORT_CYCLE:
        return 'before.6';
      case GuardReason.PRECONDITION_UNCHANGED:
        return 'before.7';
      case GuardReason.IDEMPOTENCY_CONFLICT:
        return 'before.8';
      default:
        return decision === 'return_cached_success'
          ? 'before.8'
          : decision === 'stop'
            ? 'before'
            : 'before.9';
    }
  }
  if (decision === 'stop') return reason === GuardReason.NO_PROGRESS ? 'after.4' : 'after.2';
  if (decision === 'complete') return 'after.3';
  return 'after.5';
}
