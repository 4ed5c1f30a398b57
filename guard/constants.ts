/**
 * Names shared by the guard, the workflow, the replay CLI and the operator tools.
 * Status values are `as const` objects with a derived union so a typo is a type error.
 */

/** The five result kinds of SPEC §2. Each has its own branch in the runtime. */
export const ResultKind = {
  SUCCESS: 'SUCCESS',
  RETRYABLE: 'RETRYABLE',
  PENDING: 'PENDING',
  PRECONDITION: 'PRECONDITION',
  FATAL: 'FATAL',
} as const;
/** One of {@link ResultKind}. */
export type ResultKind = (typeof ResultKind)[keyof typeof ResultKind];
/** All result kinds, in SPEC order. */
export const RESULT_KINDS = Object.values(ResultKind) as [ResultKind, ...ResultKind[]];

/** Terminal states of a run (SPEC §4). */
export const TerminalState = {
  COMPLETED: 'COMPLETED',
  STOPPED_LOOP_GUARD: 'STOPPED_LOOP_GUARD',
  NEEDS_HUMAN: 'NEEDS_HUMAN',
  FAILED: 'FAILED',
  PARTIAL: 'PARTIAL',
} as const;
/** One of {@link TerminalState}. */
export type TerminalState = (typeof TerminalState)[keyof typeof TerminalState];
/** All terminal states. */
export const TERMINAL_STATES = Object.values(TerminalState) as [TerminalState, ...TerminalState[]];

/** What `before()` says about a proposed call. */
export const BeforeDecision = {
  EXECUTE: 'execute',
  RETURN_CACHED_SUCCESS: 'return_cached_success',
  STOP: 'stop',
} as const;
/** One of {@link BeforeDecision}. */
export type BeforeDecision = (typeof BeforeDecision)[keyof typeof BeforeDecision];

/** What `after()` says about an executed (or cached) call. */
export const AfterDecision = {
  CONTINUE: 'continue',
  RETRY_AFTER_BACKOFF: 'retry_after_backoff',
  WAIT_BOUNDED: 'wait_bounded',
  NEEDS_CHANGED_PRECONDITION: 'needs_changed_precondition',
  COMPLETE: 'complete',
  STOP: 'stop',
} as const;
/** One of {@link AfterDecision}. */
export type AfterDecision = (typeof AfterDecision)[keyof typeof AfterDecision];

/** Reasons the guard itself stops a run (FATAL stops use the result's own code). */
export const GuardReason = {
  STEP_BUDGET: 'step_budget',
  WALL_CLOCK_BUDGET: 'wall_clock_budget',
  TOKEN_BUDGET: 'token_budget',
  COST_BUDGET: 'cost_budget',
  WAIT_BUDGET: 'wait_budget',
  SAME_CALL_REPEAT: 'same_call_repeat',
  SHORT_CYCLE: 'short_cycle',
  PRECONDITION_UNCHANGED: 'precondition_unchanged',
  IDEMPOTENCY_CONFLICT: 'idempotency_conflict',
  NO_PROGRESS: 'no_progress',
  PLANNER_EXHAUSTED: 'planner_exhausted',
  PLANNER_FAILED: 'planner_failed',
  OPERATOR_STOP: 'operator_stop',
} as const;
/** One of {@link GuardReason}. */
export type GuardReason = (typeof GuardReason)[keyof typeof GuardReason];

/** FATAL codes that need a person rather than ending the run as FAILED (SPEC §2). */
export const NEEDS_HUMAN_CODES: ReadonlySet<string> = new Set([
  'permission_denied',
  'policy_blocked',
  'needs_human',
]);

/** Budget reasons: a resume for these is "changed" when the operator raised the budget. */
export const BUDGET_REASONS: ReadonlySet<string> = new Set([
  GuardReason.STEP_BUDGET,
  GuardReason.WALL_CLOCK_BUDGET,
  GuardReason.TOKEN_BUDGET,
  GuardReason.COST_BUDGET,
  GuardReason.WAIT_BUDGET,
]);
