/**
 * @module loop-guard
 *
 * The loop guard of docs/spec.md §3: a pure, deterministic state machine consulted before and
 * after every tool call. It never reads a clock or does I/O — time comes in as
 * `nowMs` — so the very same code runs in the Temporal workflow sandbox, in the offline
 * replay CLI and in unit tests, and a state restored from {@link LoopGuard.toJSON}
 * makes exactly the decisions the original would have made.
 *
 * The rules live here; the state they read is kept in parts of its own:
 *  - guard/budgets.ts: steps, tokens, cost and the wall clock (rules 1–4, what is left);
 *  - guard/repeat-window.ts: the calls since the last progress (the repeat rules), with the
 *    failure memory of guard/failure-memory.ts;
 *  - guard/completed-ledger.ts: the completed operation keys (rule 8), exact or windowed;
 *  - guard/reapplied.ts: the calls whose workspace reports only grew (the re-applied edit rule);
 *  - guard/poll-memory.ts: the waits the latest executions asked for (the honoured re-poll);
 *  - guard/steer-log.ts: the steers and `no_progress` notes given instead of a stop.
 *
 * Cost: every decision is O(1) amortised in the window length. The window is kept as
 * counts per fingerprint, the latest result kind per fingerprint and the last three
 * fingerprints — never as a list that is rescanned.
 */
import { TerminalState, type ResultKind } from './constants';
import { configFromJson, configToJson, type GuardStateJson, type InFlight, type Steer } from './guard-state';
import { BudgetMeter } from './budgets';
import { afterDecision } from './after-decision';
import { CompletedLedger } from './completed-ledger';
import { RepeatWindow } from './repeat-window';
import { ReappliedEdits } from './reapplied';
import { PollMemory } from './poll-memory';
import { ProgressMeter } from './progress-meter';
import { SteerLog } from './steer-log';
import { CACHED, CACHED_HONOURED, COMPLETE, EXECUTE, EXECUTE_HONOURED } from './shared-decisions';
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
  type ProgressSteer,
  type SteerDecision,
  type StopDecision,
} from './guard-types';

export * from './guard-types';
export type { GuardStateJson, Steer } from './guard-state';

/**
 * The loop guard. Drive it as `before(call, now)` → (execute the tool only on
 * `execute`) → `after(call, result, progressVersion, now)`; a `return_cached_success`
 * is also followed by `after()` (with the cached result) so it counts as no progress.
 */
export class LoopGuard {
  readonly config: GuardConfig;
  /** Steps, tokens, cost and the wall clock (guard/budgets.ts). */
  private budget: BudgetMeter;
  /** The highest progress version and the calls since it (guard/progress-meter.ts). */
  private progress: ProgressMeter;
  /** The calls since the last progress, with the failure memory (guard/repeat-window.ts). */
  private window: RepeatWindow;
  /** Fingerprints whose latest execution asked to be polled again after a wait (guard/poll-memory.ts). */
  private polls = new PollMemory();
  /** The completed ledger, exact or with a ledger window (guard/completed-ledger.ts). */
  private completed: CompletedLedger;
  /** Calls that changed the workspace and how often in a row they grew it (guard/reapplied.ts). */
  private reapplied = new ReappliedEdits();
  private lastUnmet: string | null = null;
  private lastFatal: string | null = null;
  private inFlight: InFlight | null = null;
  /** The steers and `no_progress` notes given instead of a stop (guard/steer-log.ts). */
  private steerLog = new SteerLog();
  private stopState: { reason: string; terminalState: TerminalState } | null = null;
  private readonly needsHuman: ReadonlySet<string>;

  constructor(config: GuardConfigInput = {}, options: LoopGuardOptions = {}) {
    this.config = guardConfigSchema.parse(config);
    this.budget = new BudgetMeter(options.startMs ?? 0);
    this.window = new RepeatWindow(this.config);
    this.progress = new ProgressMeter(options.initialProgressVersion ?? 0);
    this.needsHuman = options.needsHumanCodes
      ? new Set([...NEEDS_HUMAN_CODES, ...options.needsHumanCodes])
      : NEEDS_HUMAN_CODES;
    this.completed = new CompletedLedger(options.completed);
  }

  /** Executed steps so far. */
  get stepCount(): number {
    return this.budget.steps;
  }
  /** The highest progress version seen. */
  get progressVersion(): number {
    return this.progress.version;
  }
  /** Consecutive decisions without progress. */
  get noProgressCount(): number {
    return this.progress.count;
  }
  /** Entries in the current window. */
  get windowSize(): number {
    return this.window.length;
  }
  /** Token and cost totals. */
  get usage(): Usage {
    return this.budget.usage;
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
    return this.completed.keys();
  }
  /** Whether the guard holds an operation key as completed. */
  isCompleted(key: string): boolean {
    return this.completed.has(key);
  }
  /**
   * Completed operations: every key the guard holds, or with a ledger window the exact keys
   * plus the ledger-backed keys this run completed itself (forgotten ones included).
   */
  get completedTotal(): number {
    return this.completed.completedTotal;
  }
  /** How many ledger-backed keys the guard keeps (null: no ledger window, it keeps every key). */
  get ledgerWindow(): number | null {
    return this.completed.window;
  }
  /**
   * Gives the guard a ledger window of `keep` keys (docs/spec.md §7.10): from now on a
   * ledger-backed key (`GuardCall.ledgerBacked`, or learned through {@link markCompleted})
   * is kept among the newest `keep` only. Keys held already stay exact. No-op when it has one.
   */
  useLedgerWindow(keep: number): void {
    if (this.completed.window !== null) return;
    if (!Number.isInteger(keep) || keep < 1)
      throw new RangeError('LoopGuard.useLedgerWindow: keep must be >= 1');
    this.completed.useWindow(keep);
  }
  /**
   * What is left of each budget at `nowMs` (Infinity for an unbounded one, never below 0):
   * what a sub-agent may be given out of this run (docs/spec.md §7.14).
   */
  remaining(nowMs: number): BudgetsLeft {
    return this.budget.remaining(this.config, nowMs);
  }

  /**
   * The token or cost budget the usage charged so far is past (rule 3 without a call), or null:
   * what a framework path asks right after a model response, so the run stops before its next
   * tool call as an agentRun would at that call's `before()`.
   */
  usageBudgetExceeded(): GuardReason | null {
    return this.budget.usageOver(this.config);
  }

  /**
   * Charges what a sub-agent actually used to this run (docs/spec.md §7.14): its steps, tokens
   * and cost join this run's totals, so a tree's totals are the root's. The budget rules see
   * them at the next `before()`. Negative or non-finite amounts are a caller's bug.
   */
  charge(used: { readonly steps: number; readonly tokens: number; readonly costUsd: number }): void {
    this.budget.charge(used);
  }

  /**
   * Takes `ms` of waiting for a person off the wall clock (a sub-agent that stopped and was
   * resumed): as on a resume, time spent waiting is not the agent running.
   */
  discountWait(ms: number): void {
    this.budget.discountWait(ms);
  }

  /** The refusals that went back to the planner instead of stopping the run, oldest first. */
  get steers(): readonly Steer[] {
    return this.steerLog.entries;
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

    // Rules 1–4: the step, wall-clock, token and cost budgets (guard/budgets.ts).
    const spent = this.budget.spend(config, call.usage, nowMs);
    if (spent !== null) return this.stop(spent);

    // The repeat rules count by the near-repeat key when the tool declares one; polls and the
    // completed ledger stay exact.
    const windowKey = call.similarKey ?? fp;
    const honouredPoll = this.polls.honoured(fp, nowMs);
    const entry = this.window.get(windowKey);
    if (honouredPoll) {
      if (this.window.polls(fp) >= config.maxWaitPolls) return this.stop(GuardReason.WAIT_BUDGET);
    } else {
      if (entry !== undefined && entry.count >= config.sameCallLimit) {
        const reworded = entry.exact !== undefined && entry.exact !== fp;
        return this.refuse(
          reworded ? GuardReason.NEAR_CALL_REPEAT : GuardReason.SAME_CALL_REPEAT,
          fp,
          entry.count,
        );
      }
      if (this.window.closesCycle(windowKey))
        return this.refuse(GuardReason.SHORT_CYCLE, fp, entry?.count ?? 1);
      // The re-applied edit: this exact call grew the workspace `sameCallLimit` times in a row.
      const grown = this.reapplied.times(fp);
      if (grown >= config.sameCallLimit) return this.refuse(GuardReason.REAPPLIED_EDIT, fp, grown);
    }

    if (entry !== undefined && entry.kind === 'PRECONDITION')
      return this.refuse(GuardReason.PRECONDITION_UNCHANGED, fp, entry.count);

    const key = call.operationKey;
    if (key !== undefined && key !== null && this.completed.has(key)) {
      const owner = this.completed.owner(key);
      if (owner !== null && owner !== undefined && owner !== fp) {
        return this.stop(GuardReason.IDEMPOTENCY_CONFLICT, TerminalState.NEEDS_HUMAN);
      }
      this.inFlight = { fingerprint: fp, cached: true, honouredPoll };
      return honouredPoll ? CACHED_HONOURED : CACHED;
    }

    this.budget.steps += 1;
    if (honouredPoll) this.window.honour(fp);
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

    // A tool's workspace report (a SUCCESS's `workspace`): a change is progress even when the
    // call printed nothing; a report that cannot be read stops the run, never FAILED.
    const changed =
      !flight.cached && result.kind === 'SUCCESS' && this.reapplied.observe(fp, call.tool, result.workspace);
    if (typeof changed === 'string') {
      this.lastFatal = changed;
      return this.stop(GuardReason.WORKSPACE_UNKNOWN, TerminalState.NEEDS_HUMAN);
    }
    const advanced = !flight.cached && this.progress.advance(progressVersion);
    if (advanced || changed) {
      this.openWindow(call.effect === 'read' && !changed ? 'read' : 'write');
    } else if (flight.cached || !flight.honouredPoll) {
      this.progress.miss();
    }
    this.window.enter(call.similarKey ?? fp, kind, call.similarKey ? fp : undefined);

    if (!flight.cached) {
      this.polls.record(fp, result, nowMs);
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
      if (!flight.cached && key !== undefined && key !== null)
        this.completed.complete(key, fp, call.ledgerBacked === true);
      if (!flight.cached && result.kind === 'SUCCESS' && result.terminal === true) {
        return COMPLETE;
      }
    }
    const verdict = this.progress.verdict(this.config.noProgressLimit, this.config.noProgressGrace);
    if (verdict === 'stop') return this.stop(GuardReason.NO_PROGRESS);
    const steer = verdict === 'note' ? this.progressNote(fp) : null;

    const decided = afterDecision(kind, result);
    return steer === null ? decided : { ...decided, steer };
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
   * not make up; the re-applied edit counts start again too). The progress version stays at the checkpoint's, so a first result at
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
    this.budget.startMs = nowMs;
    const cfg = this.config as { -readonly [K in keyof GuardConfig]: GuardConfig[K] };
    for (const [k, v] of Object.entries(raise) as [keyof typeof raise, number | undefined][]) {
      if (v !== undefined && v > cfg[k]) cfg[k] = v;
    }
    this.openWindow('resume');
    this.polls.clear();
    this.reapplied = new ReappliedEdits();
  }

  /**
   * Adds an operation key to the completed ledger (what the persistent ledger knows of a
   * proposal, handed over before `before()`); with a ledger window it joins the newest.
   */
  markCompleted(key: string, fingerprint: string | null): void {
    this.completed.mark(key, fingerprint);
  }

  /** The whole state as JSON. */
  toJSON(): GuardStateJson {
    const failures = this.window.failuresJson();
    return {
      v: 1,
      config: configToJson(this.config),
      startMs: this.budget.startMs,
      steps: this.budget.steps,
      tokens: this.budget.tokens,
      costUsd: this.budget.costUsd,
      lastProgressVersion: this.progress.version,
      noProgress: this.progress.count,
      ...this.window.toJSON(),
      lastExecutions: this.polls.toJSON(),
      ...this.completed.toJSON(),
      lastUnmet: this.lastUnmet,
      lastFatal: this.lastFatal,
      inFlight: this.inFlight ? { ...this.inFlight } : null,
      ...this.steerLog.toStateJson(),
      ...this.reapplied.toStateJson(),
      ...(failures ? { failures } : {}),
      stop: this.stopState ? { ...this.stopState } : null,
    };
  }

  /** Restores a guard from {@link toJSON} output. */
  static fromJSON(state: GuardStateJson, options: Pick<LoopGuardOptions, 'needsHumanCodes'> = {}): LoopGuard {
    if (state?.v !== 1) throw new TypeError('LoopGuard state: unsupported version (expected v: 1)');
    const guard = new LoopGuard(configFromJson(state.config), options);
    guard.budget.startMs = state.startMs;
    guard.budget.steps = state.steps;
    guard.budget.tokens = state.tokens;
    guard.budget.costUsd = state.costUsd;
    guard.progress.version = state.lastProgressVersion;
    guard.progress.count = state.noProgress;
    guard.window = RepeatWindow.fromJSON(guard.config, state);
    guard.polls = PollMemory.fromJSON(state.lastExecutions);
    guard.completed = CompletedLedger.fromJSON(state);
    guard.reapplied = ReappliedEdits.fromJSON(state.reapplied);
    guard.lastUnmet = state.lastUnmet;
    guard.lastFatal = state.lastFatal ?? null;
    guard.inFlight = state.inFlight ? { ...state.inFlight } : null;
    guard.steerLog = SteerLog.fromJSON(state.steers);
    guard.stopState = state.stop ? { ...state.stop } : null;
    return guard;
  }

  private openWindow(cause: 'read' | 'write' | 'resume'): void {
    this.progress.reset();
    // With `keepFailures`, a read's window starts with the failed calls (guard/failure-memory.ts).
    this.window.open(cause);
  }

  /**
   * A repeat rule's refusal: a steer while the run has steers left (it costs a step; the call
   * stays out of the window, since it did not run), else the stop it always was.
   */
  private refuse(reason: GuardReason, fingerprint: string, count: number): SteerDecision | StopDecision {
    if (this.steerLog.repeats >= this.config.steerLimit) return this.stop(reason);
    this.budget.steps += 1;
    const steers = this.steerLog.repeat(reason, fingerprint, this.budget.steps);
    return { decision: 'steer', reason, count, steers };
  }

  /**
   * The `no_progress` note: logged with the steers (the StopReport lists it) at the step of the
   * call that ran; it costs no step of its own and does not use `steerLimit`.
   */
  private progressNote(fingerprint: string): ProgressSteer {
    this.steerLog.note(fingerprint, this.budget.steps);
    return {
      reason: GuardReason.NO_PROGRESS,
      count: this.progress.count,
      callsLeft: this.config.noProgressGrace,
    };
  }

  private stop(
    reason: string,
    terminalState: TerminalState = TerminalState.STOPPED_LOOP_GUARD,
  ): StopDecision {
    this.stopState = { reason, terminalState };
    return { decision: 'stop', reason, terminalState };
  }
}
