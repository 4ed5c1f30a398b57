/**
 * The tenant spend limit on the AI SDK path (`guardAgent({ spend: { tenant } })`): each model
 * call `guard.model(…)` makes is reserved at its worst case in the worker's spend store
 * (storage/spend, the same store and rules as an `agentRun`'s planner: activities/run/spend-access.ts)
 * before it is sent, and settled at its priced usage after. A refusal: the model is not called.
 * Workflow code; the store is reached through `guardActivities` (ai-sdk/worker-verify.ts).
 */
import type { LanguageModelV4CallOptions, LanguageModelV4Usage } from '@ai-sdk/provider';
import { log } from '@temporalio/workflow';
import type { TokenPrices } from './types';

/** Tokens a provider adds to a request beyond its JSON (planners/call-ceiling.ts). */
const REQUEST_OVERHEAD_TOKENS = 512;

/** The reservation's answer (the worker's `agentLoopGuardReserveSpend`). */
export type SpendReservation =
  | { readonly kind: 'reserved'; readonly id: string }
  /** The worker has no spend limits: nothing is reserved or settled. */
  | { readonly kind: 'none' }
  | { readonly kind: 'refused'; readonly detail: string };

/** What the spend gate asks of the worker. */
export interface SpendActivities {
  agentLoopGuardReserveSpend(input: {
    tenant: string;
    runId: string;
    model: string;
    worstUsd: number | null;
  }): Promise<SpendReservation>;
  agentLoopGuardSettleSpend(input: { id: string; actualUsd: number }): Promise<void>;
}

/** The worst case of one request: its UTF-8 size as tokens plus the overhead, and its output bound. */
export function worstUsdOf(
  o: LanguageModelV4CallOptions,
  prices: TokenPrices | undefined,
  maxOutputTokens: number,
): number | null {
  if (!prices) return null;
  const input =
    new TextEncoder().encode(JSON.stringify([o.prompt, o.tools ?? []])).length + REQUEST_OVERHEAD_TOKENS;
  const output = o.maxOutputTokens ?? maxOutputTokens;
  return (input * prices.inputPerMillion + output * prices.outputPerMillion) / 1_000_000;
}

/** Reserves before each model call and settles after, for one tenant. */
export class SpendGate {
  constructor(
    private readonly acts: SpendActivities,
    private readonly tenant: string,
    private readonly runId: string,
    private readonly prices: TokenPrices | undefined,
    private readonly maxOutputTokens: number,
  ) {}

  /** The reservation of the next call of `model` (throws when the store cannot be reached). */
  reserve(model: string, o: LanguageModelV4CallOptions): Promise<SpendReservation> {
    return this.acts.agentLoopGuardReserveSpend({
      tenant: this.tenant,
      runId: this.runId,
      model,
      worstUsd: worstUsdOf(o, this.prices, this.maxOutputTokens),
    });
  }

  /**
   * Settles a reservation at the call's priced usage. A settle that fails is only logged: the
   * reservation keeps counting at its worst case, on the tenant's side.
   */
  async settle(r: SpendReservation, usage: LanguageModelV4Usage | undefined): Promise<void> {
    if (r.kind !== 'reserved') return;
    const p = this.prices;
    const actualUsd = p
      ? ((usage?.inputTokens.total ?? 0) * p.inputPerMillion +
          (usage?.outputTokens.total ?? 0) * p.outputPerMillion) /
        1_000_000
      : 0;
    try {
      await this.acts.agentLoopGuardSettleSpend({ id: r.id, actualUsd });
    } catch (err) {
      log.warn(`spend: could not settle ${r.id}; it keeps counting at its worst case: ${String(err)}`);
    }
  }
}
