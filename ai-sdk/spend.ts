/**
 * The tenant spend limit of the AI SDK and OpenAI Agents paths (`spend: { tenant }`): each model
 * call is reserved at its worst case in the worker's spend store
 * (storage/spend, the same store and rules as an `agentRun`'s planner: activities/run/spend-access.ts)
 * before it is sent, and settled at its priced usage after. A refusal: the model is not called.
 * Workflow code; the store is reached through `guardActivities` (ai-sdk/worker-verify.ts).
 */
import { log } from '@temporalio/workflow';
import type { TokenPrices } from './types';

/** Tokens a provider adds to a request beyond its JSON (planners/call-ceiling.ts). */
const REQUEST_OVERHEAD_TOKENS = 512;

/** A tenant name (common/contracts.ts `tenantSchema`, the key of `AGENT_SPEND_LIMITS`). */
const TENANT = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** What is wrong with a guard's `spend` option (both adapters refuse it with this), or null. */
export function spendOptionProblem(
  spend: { readonly tenant?: unknown; readonly maxOutputTokens?: unknown } | undefined,
): string | null {
  if (spend === undefined) return null;
  if (typeof spend?.tenant !== 'string' || !TENANT.test(spend.tenant))
    return `spend.tenant must be 1-64 letters, digits, . _ - (starting with a letter or digit), got ${JSON.stringify(spend?.tenant)}`;
  const max = spend.maxOutputTokens;
  if (max !== undefined && !(typeof max === 'number' && Number.isInteger(max) && max > 0))
    return `spend.maxOutputTokens must be an integer > 0, got ${String(max)}`;
  return null;
}

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

/** The UTF-8 size of a request's JSON: what its worst case counts as input tokens. */
export function requestBytesOf(request: unknown): number {
  return new TextEncoder().encode(JSON.stringify(request) ?? '').length;
}

/**
 * The worst case of one request: its UTF-8 size as tokens plus the overhead, and its output
 * bound; null without prices (the store then counts the call, not dollars).
 */
export function worstUsdOf(
  requestBytes: number,
  maxOutputTokens: number,
  prices: TokenPrices | undefined,
): number | null {
  if (!prices) return null;
  const input = requestBytes + REQUEST_OVERHEAD_TOKENS;
  return (input * prices.inputPerMillion + maxOutputTokens * prices.outputPerMillion) / 1_000_000;
}

/**
 * Reserves before each model call and settles after, for one tenant: framework-neutral (a
 * request's size, a token count), used by the AI SDK path's model wrapper and the OpenAI
 * Agents path's model-input filter (ai-sdk/stops.ts `modelSpend`).
 */
export class SpendGate {
  constructor(
    private readonly acts: SpendActivities,
    private readonly tenant: string,
    private readonly runId: string,
    private readonly prices: TokenPrices | undefined,
    private readonly maxOutputTokens: number,
  ) {}

  /**
   * The reservation of the next call of `model`, a request of `requestBytes` bytes bounded to
   * `maxOutputTokens` (the guard's `spend.maxOutputTokens` when the call names none); throws
   * when the store cannot be reached.
   */
  reserve(model: string, requestBytes: number, maxOutputTokens?: number): Promise<SpendReservation> {
    return this.acts.agentLoopGuardReserveSpend({
      tenant: this.tenant,
      runId: this.runId,
      model,
      worstUsd: worstUsdOf(requestBytes, maxOutputTokens ?? this.maxOutputTokens, this.prices),
    });
  }

  /**
   * Settles a reservation at the call's priced usage. A settle that fails is only logged: the
   * reservation keeps counting at its worst case, on the tenant's side.
   */
  async settle(r: SpendReservation, inputTokens: number, outputTokens: number): Promise<void> {
    if (r.kind !== 'reserved') return;
    const p = this.prices;
    const actualUsd = p
      ? (inputTokens * p.inputPerMillion + outputTokens * p.outputPerMillion) / 1_000_000
      : 0;
    try {
      await this.acts.agentLoopGuardSettleSpend({ id: r.id, actualUsd });
    } catch (err) {
      log.warn(`spend: could not settle ${r.id}; it keeps counting at its worst case: ${String(err)}`);
    }
  }
}
