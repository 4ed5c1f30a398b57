/**
 * The baseline for `bench/guard.ts`: the seed article's algorithm, re-implemented
 * independently so the benchmark compares against what the idea costs when written
 * straightforwardly. Its two defining costs are kept on purpose:
 *
 *  - the fingerprint is `tool:` + JSON text of the args with keys sorted at every depth
 *    (a fresh sorted copy, then JSON.stringify), per call;
 *  - repeat detection filters the whole history array on every call, and the cycle
 *    check slices the last three entries, so a call costs O(window).
 *
 * Only the parts the benchmark exercises are here (budgets, ledger, repeat, cycle,
 * progress); it is not used by the product.
 */

/** A proposal as the baseline sees it. */
export interface BaselineCall {
  readonly tool: string;
  readonly args: unknown;
  readonly operationKey?: string | null;
}

/** A tool result (only the kind and the terminal flag matter here). */
export interface BaselineResult {
  readonly kind: 'SUCCESS' | 'RETRYABLE' | 'PENDING' | 'PRECONDITION' | 'FATAL';
  readonly terminal?: boolean;
  readonly code?: string;
}

/** Limits of the baseline guard (the seed's defaults). */
export interface BaselineOptions {
  maxSteps?: number;
  maxMs?: number;
  sameCallLimit?: number;
  noProgressLimit?: number;
  initialProgressVersion?: number;
}

function sortedCopy(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedCopy);
  if (value !== null && typeof value === 'object') {
    const source = value as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(source).sort()) out[key] = sortedCopy(source[key]);
    return out;
  }
  return typeof value === 'string' ? value.trim() : value;
}

/** `tool:` + JSON of the key-sorted, trimmed args: the seed's fingerprint. */
export function baselineFingerprint(tool: string, args: unknown): string {
  return `${tool}:${JSON.stringify(sortedCopy(args))}`;
}

/** What the baseline's `before` said, with the fingerprint to hand to `after`. */
export interface BaselineDecision {
  readonly decision: 'execute' | 'return_cached_success' | 'stop';
  readonly fp: string;
  readonly reason?: string;
}

/** The seed's guard: a history array rescanned on every call. */
export class BaselineGuard {
  private readonly maxSteps: number;
  private readonly deadline: number;
  private readonly sameCallLimit: number;
  private readonly noProgressLimit: number;
  private readonly completed = new Map<string, BaselineResult>();
  private history: Array<{ fp: string; kind: string }> = [];
  private steps = 0;
  private lastProgressVersion: number;
  private noProgress = 0;

  constructor(opts: BaselineOptions = {}, nowMs = 0) {
    this.maxSteps = opts.maxSteps ?? 20;
    this.deadline = nowMs + (opts.maxMs ?? 60_000);
    this.sameCallLimit = opts.sameCallLimit ?? 2;
    this.noProgressLimit = opts.noProgressLimit ?? 3;
    this.lastProgressVersion = opts.initialProgressVersion ?? 0;
  }

  /** Window length (for the benchmark's sanity check). */
  get windowSize(): number {
    return this.history.length;
  }

  /**
   * Puts executed, no-progress calls straight into the history, leaving the state that
   * running them would leave. Lets the bench build a 10,000-entry window without the
   * O(n²) cost of getting there (which is not what it measures).
   */
  preload(fps: readonly string[]): void {
    for (const fp of fps) this.history.push({ fp, kind: 'SUCCESS' });
    this.steps += fps.length;
    this.noProgress += fps.length;
  }

  /** Decides on a proposal; returns the fingerprint to hand to `after` when it may run. */
  before(call: BaselineCall, nowMs: number): BaselineDecision {
    return this.decide(baselineFingerprint(call.tool, call.args), call, nowMs);
  }

  /** The decision for an already fingerprinted proposal (lets the bench separate the costs). */
  decide(fp: string, call: BaselineCall, nowMs: number): BaselineDecision {
    if (this.steps >= this.maxSteps) return { decision: 'stop', fp, reason: 'step_budget' };
    if (nowMs >= this.deadline) return { decision: 'stop', fp, reason: 'wall_clock_budget' };
    if (call.operationKey && this.completed.has(call.operationKey))
      return { decision: 'return_cached_success', fp };
    const repeats = this.history.filter((entry) => entry.fp === fp).length;
    if (repeats >= this.sameCallLimit) return { decision: 'stop', fp, reason: 'same_call_repeat' };
    const recent = this.history.slice(-3).map((entry) => entry.fp);
    if (recent.length === 3 && recent[0] === recent[2] && recent[1] === fp) {
      return { decision: 'stop', fp, reason: 'short_cycle' };
    }
    this.steps += 1;
    return { decision: 'execute', fp };
  }

  /** Records an executed call's outcome. */
  after(fp: string, call: BaselineCall, result: BaselineResult, progressVersion: number): string {
    if (progressVersion > this.lastProgressVersion) {
      this.lastProgressVersion = progressVersion;
      this.noProgress = 0;
      this.history = [];
    } else {
      this.noProgress += 1;
    }
    this.history.push({ fp, kind: result.kind });
    if (result.kind === 'FATAL') return 'stop';
    if (result.kind === 'SUCCESS') {
      if (call.operationKey) this.completed.set(call.operationKey, result);
      if (result.terminal) return 'complete';
    }
    if (this.noProgress >= this.noProgressLimit) return 'stop';
    return result.kind === 'SUCCESS' ? 'continue' : 'wait';
  }
}
