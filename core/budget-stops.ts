/**
 * What stops a framework's agent outside its tool calls, over the core's run (core/run.ts): the
 * model's usage past a token or cost budget, and the tenant spend gate before each model call
 * (core/spend-gate.ts). Both stop through the core (`runtimeStop`), with its StopReport and
 * trace. In terms any framework has (token counts, a request's size): each adapter feeds its own
 * model's usage in (ai-sdk/model.ts, openai-agents/index.ts). Workflow code.
 */
import { ActivityFailure, workflowInfo } from '@temporalio/workflow';
import { GuardReason, TerminalState } from '../guard';
import type { GuardedRun } from './run';
import type { GuardActivities } from './guard-activities';
import { costUsd, modelPriceOf, type ModelPrice } from '../common/price';
import { SpendGate, type GatedReservation, type ReportedTokens } from './spend-gate';
import { GUARD_ACTIVITY, type FrameworkGuardOptions } from './framework-types';

/** The tenant spend gate of one run, framework-neutral (see {@link BudgetStops.modelSpend}). */
export interface ModelSpend {
  /** Reserves a request of `requestBytes` bytes; null: the run stopped and the model must not be called. */
  before(model: string, requestBytes: number, maxOutputTokens?: number): Promise<GatedReservation | null>;
  /** Settles a reservation at the call's usage (none reported: at its worst case). */
  after(r: GatedReservation, usage: ReportedTokens | null | undefined): Promise<void>;
}

/** The innermost message of a failure. */
export function errorMessage(err: unknown): string {
  if (err instanceof ActivityFailure && err.cause) return err.cause.message;
  return err instanceof Error ? err.message : String(err);
}

export class BudgetStops {
  /** The `prices` option as the one price type (checked when the guard was built). */
  private readonly price: ModelPrice | undefined;

  constructor(
    private readonly run: GuardedRun,
    private readonly options: FrameworkGuardOptions,
    private readonly acts: GuardActivities,
  ) {
    this.price = modelPriceOf(options.prices);
  }

  /** The digest an approval of this call binds, computed on the worker from the call's input. */
  digest(tool: string, input: unknown): Promise<string> {
    return this.acts[GUARD_ACTIVITY.callDigest]({ runId: this.run.runId, tool, input });
  }

  /**
   * The tenant spend gate around each model call, when `spend` is given, in terms any framework
   * has (a request's size, token counts): `before` reserves, or stops the run NEEDS_HUMAN
   * (`spend_limit` on a refusal, `infrastructure_fault` when the store cannot be reached) and
   * answers null: the model must not be called. `after` settles at the call's usage.
   */
  modelSpend(): ModelSpend | undefined {
    const o = this.options.spend;
    if (!o) return undefined;
    const runId = workflowInfo().workflowId;
    const gate = new SpendGate(this.acts, o.tenant, runId, this.price, o.maxOutputTokens ?? 4096);
    return {
      before: async (model, requestBytes, maxOutputTokens) => {
        let r: GatedReservation;
        try {
          r = await gate.reserve(model, requestBytes, maxOutputTokens);
        } catch (err) {
          this.stopBeforeModel(
            GuardReason.INFRASTRUCTURE_FAULT,
            `spend store unavailable: ${errorMessage(err)}`,
          );
          return null;
        }
        if (r.kind !== 'refused') return r;
        this.stopBeforeModel(GuardReason.SPEND_LIMIT, r.detail);
        return null;
      },
      after: (r, usage) => gate.settle(r, usage),
    };
  }

  /** A stop before a model call (the model is not called): NEEDS_HUMAN, the detail as unmet. */
  private stopBeforeModel(reason: string, detail: string): void {
    if (this.run.stopped) return;
    this.run.runtimeStop(reason, TerminalState.NEEDS_HUMAN, undefined, detail);
  }

  /** Charges a model response's tokens (priced by `prices`); past a budget the run stops at once. */
  chargeTokens(input: number, output: number): void {
    const p = this.price;
    const guard = this.run.guard;
    const cost = p ? costUsd(p, { inputTokens: input, outputTokens: output }) : 0;
    guard.charge({ steps: 0, tokens: input + output, costUsd: cost });
    if (this.run.stopped) return;
    // Rule 3 of the guard itself (guard/budgets.ts), not a copy of it.
    const reason = guard.usageBudgetExceeded();
    if (reason) this.run.runtimeStop(reason, TerminalState.STOPPED_LOOP_GUARD);
  }
}
