/**
 * The loop guard's budgets (docs/spec.md §3 before() rules 1–4, §7.14): what a run has used —
 * steps, tokens, cost and wall-clock time since it started or resumed — checked against its
 * config, and what is left of each for a sub-agent. Pure: time comes in as `nowMs`.
 */
import { GuardReason } from './reasons';
import type { GuardConfig, Usage } from './schemas';
import type { BudgetsLeft } from './guard-types';

/** Steps, tokens, cost and the wall clock's start of one guard. */
export class BudgetMeter {
  steps = 0;
  tokens = 0;
  costUsd = 0;

  constructor(public startMs: number) {}

  /** Token and cost totals. */
  get usage(): Usage {
    return { tokens: this.tokens, costUsd: this.costUsd };
  }

  /**
   * Budget rules 1–4 of `before()` in order: the step and wall-clock budgets, then the proposal's
   * model usage is added and the token and cost budgets are checked. The budget that stops the
   * call, or null.
   */
  spend(config: GuardConfig, usage: Partial<Usage> | undefined, nowMs: number): GuardReason | null {
    if (this.steps >= config.maxSteps) return GuardReason.STEP_BUDGET;
    if (nowMs - this.startMs >= config.maxMs) return GuardReason.WALL_CLOCK_BUDGET;
    this.tokens += usage?.tokens ?? 0;
    this.costUsd += usage?.costUsd ?? 0;
    return this.usageOver(config);
  }

  /** Rule 3 alone: the token or cost budget the usage so far is past, or null. */
  usageOver(config: GuardConfig): GuardReason | null {
    if (this.tokens > config.maxTokens) return GuardReason.TOKEN_BUDGET;
    if (this.costUsd > config.maxCostUsd) return GuardReason.COST_BUDGET;
    return null;
  }

  /** What is left of each budget at `nowMs` (Infinity for an unbounded one, never below 0). */
  remaining(config: GuardConfig, nowMs: number): BudgetsLeft {
    const left = (max: number, used: number) => (Number.isFinite(max) ? Math.max(0, max - used) : Infinity);
    return {
      steps: left(config.maxSteps, this.steps),
      tokens: left(config.maxTokens, this.tokens),
      costUsd: left(config.maxCostUsd, this.costUsd),
      ms: left(config.maxMs, nowMs - this.startMs),
    };
  }

  /** Adds what a sub-agent used; negative or non-finite amounts are a caller's bug. */
  charge(used: { readonly steps: number; readonly tokens: number; readonly costUsd: number }): void {
    for (const [k, v] of Object.entries(used))
      if (!Number.isFinite(v) || v < 0)
        throw new RangeError(`LoopGuard.charge: ${k} must be a finite number >= 0`);
    this.steps += Math.trunc(used.steps);
    this.tokens += used.tokens;
    this.costUsd += used.costUsd;
  }

  /** Takes `ms` of waiting for a person off the wall clock. */
  discountWait(ms: number): void {
    if (Number.isFinite(ms) && ms > 0) this.startMs += ms;
  }
}
