/**
 * Names shared by the guard, the workflow, the replay CLI and the operator tools.
 * Status values are `as const` objects with a derived union so a typo is a type error.
 */

/** The five result kinds of docs/spec.md §2. Each has its own branch in the runtime. */
export const ResultKind = {
  SUCCESS: 'SUCCESS',
  RETRYABLE: 'RETRYABLE',
  PENDING: 'PENDING',
  PRECONDITION: 'PRECONDITION',
  FATAL: 'FATAL',
} as const;
/** One of {@link ResultKind}. */
export type ResultKind = (typeof ResultKind)[keyof typeof ResultKind];
/** All result kinds, in the order of docs/spec.md §2. */
export const RESULT_KINDS = Object.values(ResultKind) as [ResultKind, ...ResultKind[]];

/** Terminal states of a run (docs/spec.md §4). */
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
