/**
 * The loop guard's state as plain JSON (checkpoints, continue-as-new): the shape
 * `LoopGuard.toJSON` writes and `LoopGuard.fromJSON` reads (loop-guard.ts), and the conversions
 * of its parts that are not copied as they are (the config's unlimited budgets, the window).
 */
import type { TerminalState, ResultKind } from './constants';
import type { FailureJson } from './failure-memory';
import type { GuardConfig, GuardConfigInput } from './schemas';

/** A fingerprint's latest execution that asked to be polled again after a wait. */
export interface LastExecution {
  kind: ResultKind;
  retryAfterMs: number;
  atMs: number;
}

/** A fingerprint in the window: how often it occurs and its latest entry's result kind. */
export interface WindowEntry {
  count: number;
  kind: ResultKind;
  /** For a near-repeat key: the exact fingerprint all its entries share, or `*` once they differ. */
  exact?: string;
}

/** The call `before()` let through and `after()` has not recorded yet. */
export interface InFlight {
  fingerprint: string;
  cached: boolean;
  honouredPoll: boolean;
}

/**
 * A refusal that went back to the planner as a guard note instead of stopping the run, or a
 * `no_progress` note given with a call's result before the stop (`noProgressGrace`).
 */
export interface Steer {
  /** The rule's reason code (`same_call_repeat`, `short_cycle`, `precondition_unchanged`, `no_progress`). */
  readonly reason: string;
  readonly fingerprint: string;
  /** The step the steer cost (1-based, like `steps`). */
  readonly step: number;
}

/** The guard's whole state as plain JSON (checkpoints, continue-as-new). */
export interface GuardStateJson {
  readonly v: 1;
  /**
   * `steerLimit` only when it is set (states before steering have none); `keepFailures` only
   * when true (older states have none).
   */
  readonly config: {
    [K in Exclude<keyof GuardConfig, 'steerLimit' | 'keepFailures' | 'noProgressGrace'>]: number | null;
  } & {
    readonly steerLimit?: number;
    readonly keepFailures?: boolean;
    /** Only when above 0 (older states have none). */
    readonly noProgressGrace?: number;
  };
  readonly startMs: number;
  readonly steps: number;
  readonly tokens: number;
  readonly costUsd: number;
  readonly lastProgressVersion: number;
  readonly noProgress: number;
  readonly windowLength: number;
  readonly counts: ReadonlyArray<readonly [string, number]>;
  readonly lastKinds: ReadonlyArray<readonly [string, ResultKind]>;
  /** Near-repeat keys' exact fingerprints (`WindowEntry.exact`); absent when there are none. */
  readonly exacts?: ReadonlyArray<readonly [string, string]>;
  readonly lastThree: readonly string[];
  readonly honoured: ReadonlyArray<readonly [string, number]>;
  readonly lastExecutions: ReadonlyArray<readonly [string, LastExecution]>;
  /** The completed keys the guard keeps exactly (all of them, without a ledger window). */
  readonly completed: ReadonlyArray<readonly [string, string | null]>;
  /**
   * The ledger window (docs/spec.md §7.10): the newest `keep` ledger-backed keys and how many
   * such keys the run completed (`total`); absent on guards without one (states before it).
   */
  readonly ledgerCompleted?: {
    readonly keep: number;
    readonly recent: ReadonlyArray<readonly [string, string | null]>;
    readonly total: number;
  };
  readonly lastUnmet: string | null;
  /** Message of the FATAL result that stopped the run (absent in older states). */
  readonly lastFatal?: string | null;
  readonly inFlight: InFlight | null;
  /** The steers so far (absent when none: states before steering, runs that never steered). */
  readonly steers?: readonly Steer[];
  /**
   * Calls whose workspace reports changed the workspace, per fingerprint: how many of their
   * applications in a row grew it, the size and fingerprint the latest left (guard/reapplied.ts); absent
   * when none (states before workspace reports).
   */
  readonly reapplied?: ReadonlyArray<readonly [string, { times: number; size: number; after: string }]>;
  /** Failed calls remembered across read windows (`keepFailures`); absent when none. */
  readonly failures?: readonly FailureJson[];
  readonly stop: { reason: string; terminalState: TerminalState } | null;
}

const infinityToNull = (n: number): number | null => (Number.isFinite(n) ? n : null);
const nullToInfinity = (n: number | null): number => (n === null ? Number.POSITIVE_INFINITY : n);

/** The config as JSON: an unlimited token or cost budget (Infinity) becomes null. */
export function configToJson(c: GuardConfig): GuardStateJson['config'] {
  return {
    maxSteps: c.maxSteps,
    maxMs: c.maxMs,
    sameCallLimit: c.sameCallLimit,
    noProgressLimit: c.noProgressLimit,
    maxWaitPolls: c.maxWaitPolls,
    maxTokens: infinityToNull(c.maxTokens),
    maxCostUsd: infinityToNull(c.maxCostUsd),
    ...(c.steerLimit > 0 ? { steerLimit: c.steerLimit } : {}),
    ...(c.keepFailures ? { keepFailures: true } : {}),
    ...(c.noProgressGrace > 0 ? { noProgressGrace: c.noProgressGrace } : {}),
  };
}

/** The config from JSON, for the guard's constructor (null: the default, or unlimited for tokens and cost). */
export function configFromJson(c: GuardStateJson['config']): GuardConfigInput {
  return {
    maxSteps: c.maxSteps ?? undefined,
    maxMs: c.maxMs ?? undefined,
    sameCallLimit: c.sameCallLimit ?? undefined,
    noProgressLimit: c.noProgressLimit ?? undefined,
    maxWaitPolls: c.maxWaitPolls ?? undefined,
    maxTokens: nullToInfinity(c.maxTokens),
    maxCostUsd: nullToInfinity(c.maxCostUsd),
    steerLimit: c.steerLimit ?? 0,
    keepFailures: c.keepFailures ?? false,
    noProgressGrace: c.noProgressGrace ?? 0,
  };
}

/** The window as JSON: its counts and latest result kinds per fingerprint, in window order. */
export function windowToJson(
  window: ReadonlyMap<string, WindowEntry>,
): Pick<GuardStateJson, 'counts' | 'lastKinds' | 'exacts'> {
  const exacts = [...window].flatMap(([k, e]) => (e.exact === undefined ? [] : [[k, e.exact] as const]));
  return {
    counts: [...window].map(([fp, e]) => [fp, e.count] as const),
    lastKinds: [...window].map(([fp, e]) => [fp, e.kind] as const),
    ...(exacts.length > 0 ? { exacts } : {}),
  };
}

/** The window from JSON (a fingerprint with no recorded kind counts as SUCCESS). */
export function windowFromJson(
  state: Pick<GuardStateJson, 'counts' | 'lastKinds' | 'exacts'>,
): Map<string, WindowEntry> {
  const kinds = new Map(state.lastKinds);
  const exacts = new Map(state.exacts ?? []);
  return new Map(
    state.counts.map(([fp, count]) => {
      const exact = exacts.get(fp);
      const entry: WindowEntry = { count, kind: kinds.get(fp) ?? 'SUCCESS' };
      if (exact !== undefined) entry.exact = exact;
      return [fp, entry] as const;
    }),
  );
}
