/**
 * @module loop-guard
 *
 * The loop guard of docs/spec.md §3: a pure, deterministic state machine consulted before and
 * after every tool call. It never reads a clock or does I/O — time comes in as
 * `nowMs` — so the very same code runs in the Temporal workflow sandbox, in the offline
 * replay CLI and in unit tests, and a state restored from {@link LoopGuard.toJSON}
 * makes exactly the decisions the original would have made.
 *
 * Cost: every decision is O(1) amortised in the window length. The window is kept as
 * counts per fingerprint, the latest result kind per fingerprint and the last three
 * fingerprints — never as a list that is rescanned.
 */
import { TerminalState, type ResultKind } from './constants';
import {
  configFromJson,
  configToJson,
  windowFromJson,
  windowToJson,
  type GuardStateJson,
  type InFlight,
  type LastExecution,
  type Steer,
  type WindowEntry,
} from './guard-state';
import { FailureMemory } from './failure-memory';
import { GuardReason, NEEDS_HUMAN_CODES, ResultCode } from './reasons';
import {
  guardConfigSchema,
  type GuardConfig,
  type GuardConfigInput,
  type ToolResult,
  type Usage,
} from './schemas';
import {
  GuardSequenceError,
  type AfterResult,
  type BeforeResult,
  type BudgetsLeft,
  type GuardCall,
  type LoopGuardOptions,
  type SteerDecision,
  type StopDecision,
} from './guard-types';

export {
  GuardSequenceError,
  STEERABLE_REASONS,
  type AfterResult,
  type BeforeResult,
  type BudgetsLeft,
  type GuardCall,
  type LoopGuardOptions,
  type SteerDecision,
  type StopDecision,
} from './guard-types';
export type { GuardStateJson, Steer } from './guard-state';

// Decisions without per-call data are shared frozen objects: the hot path allocates nothing.
const EXECUTE = Object.freeze({ decision: 'execute', honouredPoll: false } as const);
const EXECUTE_HONOURED = Object.freeze({ decision: 'execute', honouredPoll: true } as const);
const CACHED = Object.freeze({ decision: 'return_cached_success', honouredPoll: false } as const);
const CACHED_HONOURED = Object.freeze({ decision: 'return_cached_success', honouredPoll: true } as const);
const CONTINUE = Object.freeze({ decision: 'continue' } as const);
const COMPLETE = Object.freeze({ decision: 'complete' } as const);
const NEEDS_CHANGE = Object.freeze({ decision: 'needs_changed_precondition' } as const);

/**
 * The loop guard. Drive it as `before(call, now)` → (execute the tool only on
 * `execute`) → `after(call, result, progressVersion, now)`; a `return_cached_success`
 * is also followed by `after()` (with the cached result) so it counts as no progress.
 */
export class LoopGuard {
  readonly config: GuardConfig;
  private startMs: number;
  private steps = 0;
  private tokens = 0;
  private costUsd = 0;
  private lastProgressVersion: number;
  private noProgress = 0;
  private windowLength = 0;
  /** Per fingerprint in the window: how often it occurs and its latest entry's result kind. */
  private window = new Map<string, WindowEntry>();
  /** The last three window entries (oldest first). */
  private lastThree: string[] = [];
  /** Honoured re-polls per fingerprint in the window. */
  private honoured = new Map<string, number>();
  /** Fingerprints whose latest execution asked to be polled again after a wait. */
  private lastExecutions = new Map<string, LastExecution>();
  /** The completed ledger: operation key → fingerprint that completed it (null: any). Kept exactly. */
  private completed = new Map<string, string | null>();
  /**
   * The ledger window, when the run has one: the newest ledger-backed keys, oldest first.
   * Older ones are forgotten; the persistent ledger hands a key back before it is proposed
   * again ({@link markCompleted}), so no decision depends on what was forgotten.
   */
  private ledgerRecent: Map<string, string | null> | null = null;
  private ledgerKeep = 0;
  /** Ledger-backed keys this run completed itself (with a ledger window). */
  private ledgerTotal = 0;
  private lastUnmet: string | null = null;
  private lastFatal: string | null = null;
  private inFlight: InFlight | null = null;
  private steerLog: Steer[] = [];
  private stopState: { reason: string; terminalState: TerminalState } | null = null;
  /** Failed calls kept across windows opened by reads (`keepFailures`, guard/failure-memory.ts). */
  private failures = new FailureMemory();
  private readonly needsHuman: ReadonlySet<string>;

  constructor(config: GuardConfigInput = {}, options: LoopGuardOptions = {}) {
    this.config = guardConfigSchema.parse(config);
    this.startMs = options.startMs ?? 0;
    this.lastProgressVersion = options.initialProgressVersion ?? 0;
    this.needsHuman = options.needsHumanCodes
      ? new Set([...NEEDS_HUMAN_CODES, ...options.needsHumanCodes])
      : NEEDS_HUMAN_CODES;
    for (const entry of options.completed ?? []) {
      if (typeof entry === 'string') this.completed.set(entry, null);
      else this.completed.set(entry[0], entry[1]);
    }
  }

  /** Executed steps so far. */
  get stepCount(): number {
    return this.steps;
  }
  /** The highest progress version seen. */
  get progressVersion(): number {
    return this.lastProgressVersion;
  }
  /** Consecutive decisions without progress. */
  get noProgressCount(): number {
    return this.noProgress;
  }
  /** Entries in the current window. */
  get windowSize(): number {
    return this.windowLength;
  }
  /** Token and cost totals. */
  get usage(): Usage {
    return { tokens: this.tokens, costUsd: this.costUsd };
  }
  /** The stop in force, if any. */
  get stopped(): { reason: string; terminalState: TerminalState } | null {
    return this.stopState;
  }
  /**
   * Completed operation keys the guard holds, in the order they completed; with a ledger
   * window, the exact ones first, then the newest ledger-backed ones.
   */
  completedKeys(): string[] {
    const exact = [...this.completed.keys()];
    return this.ledgerRecent ? [...exact, ...this.ledgerRecent.keys()] : exact;
  }
  /** Whether the guard holds an operation key as completed. */
  isCompleted(key: string): boolean {
    return this.completed.has(key) || (this.ledgerRecent?.has(key) ?? false);
  }
  /**
   * Completed operations: every key the guard holds, or with a ledger window the exact keys
   * plus the ledger-backed keys this run completed itself (forgotten ones included).
   */
  get completedTotal(): number {
    return this.completed.size + (this.ledgerRecent ? this.ledgerTotal : 0);
  }
  /** How many ledger-backed keys the guard keeps (null: no ledger window, it keeps every key). */
  get ledgerWindow(): number | null {
    return this.ledgerRecent ? this.ledgerKeep : null;
  }
  /**
   * Gives the guard a ledger window of `keep` keys (docs/spec.md §7.10): from now on a
   * ledger-backed key (`GuardCall.ledgerBacked`, or learned through {@link markCompleted})
   * is kept among the newest `keep` only. Keys held already stay exact. No-op when it has one.
   */
  useLedgerWindow(keep: number): void {
    if (this.ledgerRecent) return;
    if (!Number.isInteger(keep) || keep < 1)
      throw new RangeError('LoopGuard.useLedgerWindow: keep must be >= 1');
    this.ledgerRecent = new Map();
    this.ledgerKeep = keep;
  }
  /**
   * What is left of each budget at `nowMs` (Infinity for an unbounded one, never below 0):
   * what a sub-agent may be given out of this run (docs/spec.md §7.14).
   */
  remaining(nowMs: number): BudgetsLeft {
    const c = this.config;
    const left = (max: number, used: number) => (Number.isFinite(max) ? Math.max(0, max - used) : Infinity);
    return {
      steps: left(c.maxSteps, this.steps),
      tokens: left(c.maxTokens, this.tokens),
      costUsd: left(c.maxCostUsd, this.costUsd),
      ms: left(c.maxMs, nowMs - this.startMs),
    };
  }

  /**
   * Charges what a sub-agent actually used to this run (docs/spec.md §7.14): its steps, tokens
   * and cost join this run's totals, so a tree's totals are the root's. The budget rules see
   * them at the next `before()`. Negative or non-finite amounts are a caller's bug.
   */
  charge(used: { readonly steps: number; readonly tokens: number; readonly costUsd: number }): void {
    for (const [k, v] of Object.entries(used))
      if (!Number.isFinite(v) || v < 0)
        throw new RangeError(`LoopGuard.charge: ${k} must be a finite number >= 0`);
    this.steps += Math.trunc(used.steps);
    this.tokens += used.tokens;
    this.costUsd += used.costUsd;
  }

  /**
   * Takes `ms` of waiting for a person off the wall clock (a sub-agent that stopped and was
   * resumed): as on a resume, time spent waiting is not the agent running.
   */
  discountWait(ms: number): void {
    if (Number.isFinite(ms) && ms > 0) this.startMs += ms;
  }

  /** The refusals that went back to the planner instead of stopping the run, oldest first. */
  get steers(): readonly Steer[] {
    return this.steerLog;
  }
  /** The message of the FATAL result that stopped the run, if it gave one (for the StopReport). */
  get lastFatalMessage(): string | null {
    return this.lastFatal;
  }
  /** The `unmet` text of the latest PRECONDITION result (for the StopReport). */
  get lastUnmetPrecondition(): string | null {
    return this.lastUnmet;
  }

  /** Decides whether a proposed call may run (docs/spec.md §3 before(), rules 1–9 in order). */
  before(call: GuardCall, nowMs: number): BeforeResult {
    if (this.inFlight) throw new GuardSequenceError('before() called twice without after()');
    if (this.stopState) return { decision: 'stop', ...this.stopState };
    const { config } = this;
    const fp = call.fingerprint;

    if (this.steps >= config.maxSteps) return this.stop(GuardReason.STEP_BUDGET);
    if (nowMs - this.startMs >= config.maxMs) return this.stop(GuardReason.WALL_CLOCK_BUDGET);

    this.tokens += call.usage?.tokens ?? 0;
    this.costUsd += call.usage?.costUsd ?? 0;
    if (this.tokens > config.maxTokens) return this.stop(GuardReason.TOKEN_BUDGET);
    if (this.costUsd > config.maxCostUsd) return this.stop(GuardReason.COST_BUDGET);

    // The repeat rules count by the near-repeat key when the tool declares one; polls and the
    // completed ledger stay exact.
    const windowKey = call.similarKey ?? fp;
    const last = this.lastExecutions.size > 0 ? this.lastExecutions.get(fp) : undefined;
    const honouredPoll = last !== undefined && nowMs - last.atMs >= last.retryAfterMs;
    const entry = this.window.get(windowKey);
    if (honouredPoll) {
      if ((this.honoured.get(fp) ?? 0) >= config.maxWaitPolls) return this.stop(GuardReason.WAIT_BUDGET);
    } else {
      if (entry !== undefined && entry.count >= config.sameCallLimit) {
        const reworded = entry.exact !== undefined && entry.exact !== fp;
        return this.refuse(
          reworded ? GuardReason.NEAR_CALL_REPEAT : GuardReason.SAME_CALL_REPEAT,
          fp,
          entry.count,
        );
      }
      const [x, y, z] = this.lastThree;
      if (this.lastThree.length === 3 && x === z && x !== y && windowKey === y)
        return this.refuse(GuardReason.SHORT_CYCLE, fp, entry?.count ?? 1);
    }

    if (entry !== undefined && entry.kind === 'PRECONDITION')
      return this.refuse(GuardReason.PRECONDITION_UNCHANGED, fp, entry.count);

    const key = call.operationKey;
    if (key !== undefined && key !== null && this.isCompleted(key)) {
      const owner = this.completed.has(key) ? this.completed.get(key) : this.ledgerRecent?.get(key);
      if (owner !== null && owner !== undefined && owner !== fp) {
        return this.stop(GuardReason.IDEMPOTENCY_CONFLICT, TerminalState.NEEDS_HUMAN);
      }
      this.inFlight = { fingerprint: fp, cached: true, honouredPoll };
      return honouredPoll ? CACHED_HONOURED : CACHED;
    }

    this.steps += 1;
    if (honouredPoll) this.honoured.set(fp, (this.honoured.get(fp) ?? 0) + 1);
    this.inFlight = { fingerprint: fp, cached: false, honouredPoll };
    return honouredPoll ? EXECUTE_HONOURED : EXECUTE;
  }

  /**
   * Records the outcome of the call `before()` let through (docs/spec.md §3 after(), rules 1–5).
   * For a cached return pass the cached SUCCESS; its `progressVersion` is ignored.
   */
  after(call: GuardCall, result: ToolResult, progressVersion: number, nowMs: number): AfterResult {
    const flight = this.inFlight;
    if (!flight || flight.fingerprint !== call.fingerprint) {
      throw new GuardSequenceError(`after() for ${call.fingerprint} without a matching before()`);
    }
    this.inFlight = null;
    const fp = call.fingerprint;
    const kind: ResultKind = flight.cached ? 'SUCCESS' : result.kind;

    if (!flight.cached && progressVersion > this.lastProgressVersion) {
      this.lastProgressVersion = progressVersion;
      this.openWindow(call.effect === 'read' ? 'read' : 'write');
    } else if (flight.cached || !flight.honouredPoll) {
      this.noProgress += 1;
    }
    this.enterWindow(call.similarKey ?? fp, kind, call.similarKey ? fp : undefined);

    if (!flight.cached) {
      const wait = result.kind === 'PENDING' || result.kind === 'RETRYABLE' ? result.retryAfterMs : undefined;
      if (wait !== undefined)
        this.lastExecutions.set(fp, { kind: result.kind, retryAfterMs: wait, atMs: nowMs });
      else this.lastExecutions.delete(fp);
      if (result.kind === 'PRECONDITION')
        this.lastUnmet = result.unmet ?? result.message ?? result.code ?? null;
    }

    if (kind === 'FATAL' && result.kind === 'FATAL') {
      const reason = result.code ?? ResultCode.FATAL;
      this.lastFatal = result.message ?? null;
      return this.stop(
        reason,
        this.needsHuman.has(reason) ? TerminalState.NEEDS_HUMAN : TerminalState.FAILED,
      );
    }
    if (kind === 'SUCCESS') {
      const key = call.operationKey;
      if (!flight.cached && key !== undefined && key !== null) {
        if (this.ledgerRecent && call.ledgerBacked === true) {
          this.keepRecent(key, fp);
          this.ledgerTotal += 1;
        } else this.completed.set(key, fp);
      }
      if (!flight.cached && result.kind === 'SUCCESS' && result.terminal === true) {
        return COMPLETE;
      }
    }
    if (this.noProgress >= this.config.noProgressLimit) return this.stop(GuardReason.NO_PROGRESS);

    switch (kind) {
      case 'SUCCESS':
        return CONTINUE;
      case 'RETRYABLE':
        return withWait('retry_after_backoff', result);
      case 'PENDING':
        return withWait('wait_bounded', result);
      case 'PRECONDITION':
        return NEEDS_CHANGE;
      default:
        throw new GuardSequenceError(`unhandled result kind ${String(kind)}`);
    }
  }

  /**
   * Records a stop the runtime decided outside the rules (operator stop, planner
   * exhausted, an unknown ledger outcome) so the state and any report agree.
   */
  forceStop(reason: string, terminalState: TerminalState = TerminalState.STOPPED_LOOP_GUARD): StopDecision {
    this.inFlight = null;
    return this.stop(reason, terminalState);
  }

  /**
   * Continues a stopped run after its precondition was re-verified as changed: the stop
   * is lifted and a new window opens (the verified change is progress the planner did
   * not make up). The progress version stays at the checkpoint's, so a first result at
   * the world's new version still reads as progress. Budgets may be raised; the wall
   * clock restarts, since time spent waiting for a person is not the agent running.
   */
  resume(
    nowMs: number,
    raise: Partial<
      Pick<GuardConfig, 'maxSteps' | 'maxMs' | 'maxTokens' | 'maxCostUsd' | 'maxWaitPolls'>
    > = {},
  ): void {
    this.stopState = null;
    this.inFlight = null;
    this.lastFatal = null;
    this.startMs = nowMs;
    const cfg = this.config as { -readonly [K in keyof GuardConfig]: GuardConfig[K] };
    for (const [k, v] of Object.entries(raise) as [keyof typeof raise, number | undefined][]) {
      if (v !== undefined && v > cfg[k]) cfg[k] = v;
    }
    this.openWindow('resume');
    this.lastExecutions.clear();
  }

  /**
   * Adds an operation key to the completed ledger (what the persistent ledger knows of a
   * proposal, handed over before `before()`); with a ledger window it joins the newest.
   */
  markCompleted(key: string, fingerprint: string | null): void {
    if (this.isCompleted(key)) return;
    if (this.ledgerRecent) this.keepRecent(key, fingerprint);
    else this.completed.set(key, fingerprint);
  }

  /** The whole state as JSON. */
  toJSON(): GuardStateJson {
    return {
      v: 1,
      config: configToJson(this.config),
      startMs: this.startMs,
      steps: this.steps,
      tokens: this.tokens,
      costUsd: this.costUsd,
      lastProgressVersion: this.lastProgressVersion,
      noProgress: this.noProgress,
      windowLength: this.windowLength,
      ...windowToJson(this.window),
      lastThree: [...this.lastThree],
      honoured: [...this.honoured],
      lastExecutions: [...this.lastExecutions].map(([k, v]) => [k, { ...v }] as const),
      completed: [...this.completed],
      ...(this.ledgerRecent
        ? {
            ledgerCompleted: {
              keep: this.ledgerKeep,
              recent: [...this.ledgerRecent],
              total: this.ledgerTotal,
            },
          }
        : {}),
      lastUnmet: this.lastUnmet,
      lastFatal: this.lastFatal,
      inFlight: this.inFlight ? { ...this.inFlight } : null,
      ...(this.steerLog.length > 0 ? { steers: this.steerLog.map((s) => ({ ...s })) } : {}),
      ...(this.failures.size > 0 ? { failures: this.failures.toJSON() } : {}),
      stop: this.stopState ? { ...this.stopState } : null,
    };
  }

  /** Restores a guard from {@link toJSON} output. */
  static fromJSON(state: GuardStateJson, options: Pick<LoopGuardOptions, 'needsHumanCodes'> = {}): LoopGuard {
    if (state?.v !== 1) throw new TypeError('LoopGuard state: unsupported version (expected v: 1)');
    const guard = new LoopGuard(configFromJson(state.config), options);
    guard.startMs = state.startMs;
    guard.steps = state.steps;
    guard.tokens = state.tokens;
    guard.costUsd = state.costUsd;
    guard.lastProgressVersion = state.lastProgressVersion;
    guard.noProgress = state.noProgress;
    guard.windowLength = state.windowLength;
    guard.window = windowFromJson(state);
    guard.lastThree = [...state.lastThree];
    guard.honoured = new Map(state.honoured);
    guard.lastExecutions = new Map(state.lastExecutions.map(([k, v]) => [k, { ...v }]));
    guard.completed = new Map(state.completed);
    if (state.ledgerCompleted) {
      guard.ledgerRecent = new Map(state.ledgerCompleted.recent);
      guard.ledgerKeep = state.ledgerCompleted.keep;
      guard.ledgerTotal = state.ledgerCompleted.total;
    }
    guard.lastUnmet = state.lastUnmet;
    guard.lastFatal = state.lastFatal ?? null;
    guard.inFlight = state.inFlight ? { ...state.inFlight } : null;
    guard.steerLog = (state.steers ?? []).map((s) => ({ ...s }));
    guard.stopState = state.stop ? { ...state.stop } : null;
    guard.failures = FailureMemory.fromJSON(state.failures);
    return guard;
  }

  /** Keeps a ledger-backed key among the newest, forgetting the oldest beyond the window. */
  private keepRecent(key: string, fingerprint: string | null): void {
    const recent = this.ledgerRecent!;
    recent.set(key, fingerprint);
    if (recent.size > this.ledgerKeep) recent.delete(recent.keys().next().value as string);
  }

  private openWindow(cause: 'read' | 'write' | 'resume'): void {
    this.noProgress = 0;
    this.window.clear();
    // With `keepFailures`, a read's window starts with the failed calls (guard/failure-memory.ts).
    this.windowLength = this.config.keepFailures ? this.failures.open(this.window, cause) : 0;
    this.lastThree = [];
    if (this.honoured.size > 0) this.honoured.clear();
  }

  /** Enters a call under its window key; `exact` is its fingerprint when the key is a near-repeat key. */
  private enterWindow(key: string, kind: ResultKind, exact?: string): void {
    this.windowLength += 1;
    const entry = this.window.get(key);
    if (entry === undefined)
      this.window.set(key, exact === undefined ? { count: 1, kind } : { count: 1, kind, exact });
    else {
      entry.count += 1;
      entry.kind = kind;
      if (exact !== undefined && entry.exact !== exact) entry.exact = '*';
    }
    if (this.config.keepFailures) this.failures.note(key, this.window.get(key)!);
    this.lastThree.push(key);
    if (this.lastThree.length > 3) this.lastThree.shift();
  }

  /**
   * A repeat rule's refusal: a steer while the run has steers left (it costs a step; the call
   * stays out of the window, since it did not run), else the stop it always was.
   */
  private refuse(reason: GuardReason, fingerprint: string, count: number): SteerDecision | StopDecision {
    if (this.steerLog.length >= this.config.steerLimit) return this.stop(reason);
    this.steps += 1;
    this.steerLog.push({ reason, fingerprint, step: this.steps });
    return { decision: 'steer', reason, count, steers: this.steerLog.length };
  }

  private stop(
    reason: string,
    terminalState: TerminalState = TerminalState.STOPPED_LOOP_GUARD,
  ): StopDecision {
    this.stopState = { reason, terminalState };
    return { decision: 'stop', reason, terminalState };
  }
}

function withWait(decision: 'retry_after_backoff' | 'wait_bounded', result: ToolResult): AfterResult {
  const retryAfterMs = 'retryAfterMs' in result ? result.retryAfterMs : undefined;
  return retryAfterMs === undefined ? { decision } : { decision, retryAfterMs };
}
