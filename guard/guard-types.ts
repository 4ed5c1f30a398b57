/**
 * The loop guard's contract types (guard/loop-guard.ts): the call it judges, what `before()`
 * and `after()` answer, its options, the rules that may steer, and its sequence error.
 */
import { AgentLoopGuardError } from '../common/errors';
import type { AfterDecision, TerminalState } from './constants';
import { GuardReason } from './reasons';
import type { Usage } from './schemas';

/** A proposed call as the guard sees it: fingerprinted already. */
export interface GuardCall {
  readonly tool: string;
  readonly fingerprint: string;
  readonly operationKey?: string | null;
  /**
   * The near-repeat key (guard/near.ts) of a tool that declares `similarArgs`: the repeat rules
   * count calls by it instead of the exact fingerprint (docs/spec.md §3, Near repeats).
   */
  readonly similarKey?: string | null;
  /** Tokens and cost the planner spent proposing this call. */
  readonly usage?: Partial<Usage>;
  /**
   * The call's operation key is recorded in the persistent ledger when it succeeds (a live
   * write): a guard with a ledger window may forget the key, since the ledger hands it back
   * (`markCompleted`) before the key is proposed again (docs/spec.md §7.10).
   */
  readonly ledgerBacked?: boolean;
  /**
   * Whether the call reads or writes. With `keepFailures`, a window opened after a read keeps
   * the failed calls, one opened after anything else forgets them (guard/failure-memory.ts).
   */
  readonly effect?: 'read' | 'write';
}

/** What is left of each budget (Infinity: unbounded); see `LoopGuard.remaining`. */
export interface BudgetsLeft {
  readonly steps: number;
  readonly tokens: number;
  readonly costUsd: number;
  readonly ms: number;
}

/** A decision that stops the run. */
export interface StopDecision {
  readonly decision: 'stop';
  readonly reason: string;
  readonly terminalState: TerminalState;
}

/**
 * A refusal by a repeat rule that goes back to the planner instead of stopping the run
 * (docs/spec.md §3.3): the call does not run, the step is spent, the planner is told why.
 */
export interface SteerDecision {
  readonly decision: 'steer';
  /** The rule's reason code. */
  readonly reason: string;
  /** How often this call already ran in the current window. */
  readonly count: number;
  /**
   * The repeat rules' steers of this run so far, this one included (never more than
   * `steerLimit`; `no_progress` notes are not counted here).
   */
  readonly steers: number;
}

/** What `before()` decided. */
export type BeforeResult =
  | { readonly decision: 'execute'; readonly honouredPoll: boolean }
  | { readonly decision: 'return_cached_success'; readonly honouredPoll: boolean }
  | SteerDecision
  | StopDecision;

/**
 * The `no_progress` note (`noProgressGrace`, docs/spec.md §3 "Steering"): the call ran and its
 * window reached `noProgressLimit`; instead of the stop, its result goes to the planner with a
 * guard note. Given once per window; the run stops after `callsLeft` more calls without progress.
 */
export interface ProgressSteer {
  readonly reason: typeof GuardReason.NO_PROGRESS;
  /** Calls in a row without progress, this one included (= `noProgressLimit`). */
  readonly count: number;
  /** How many more calls without progress run before the stop (= `noProgressGrace`). */
  readonly callsLeft: number;
}

/** What `after()` decided. */
export type AfterResult =
  | {
      readonly decision: Exclude<AfterDecision, 'stop'>;
      /** For `retry_after_backoff` / `wait_bounded`: the server-given wait. */
      readonly retryAfterMs?: number;
      /** The `no_progress` note that goes with this result (only with `noProgressGrace`). */
      readonly steer?: ProgressSteer;
    }
  | (StopDecision & { readonly decision: 'stop' });

/** The rules whose refusals may steer (docs/spec.md §3.3); every other stop stops. */
export const STEERABLE_REASONS: ReadonlySet<string> = new Set([
  GuardReason.SAME_CALL_REPEAT,
  GuardReason.NEAR_CALL_REPEAT,
  GuardReason.SHORT_CYCLE,
  GuardReason.REAPPLIED_EDIT,
  GuardReason.PRECONDITION_UNCHANGED,
]);

/** Options for a new guard. */
export interface LoopGuardOptions {
  /** When the run's wall clock starts (the replay's run starts at 0). */
  readonly startMs?: number;
  /** The checkpoint's progress version on resume, else the world's version at start. */
  readonly initialProgressVersion?: number;
  /**
   * Operation keys already in the completed ledger. A `null` fingerprint (a key known
   * only by name, e.g. from a replay file's `completed`) matches any call.
   */
  readonly completed?: Iterable<readonly [string, string | null]> | Iterable<string>;
  /**
   * FATAL codes that end the run NEEDS_HUMAN in addition to docs/spec.md §2's three (the durable
   * run adds `outcome_unknown` and `idempotency_conflict` from the ledger). Not part of
   * the serialised config: the runtime passes the same set when it restores a guard.
   */
  readonly needsHumanCodes?: Iterable<string>;
}

/** Raised when the guard is driven out of order (after() without before(), etc.). */
export class GuardSequenceError extends AgentLoopGuardError {
  readonly code = 'guard_sequence_violation';
}
