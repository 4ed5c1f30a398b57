/**
 * The tenant spend limit of the AI SDK and OpenAI Agents paths (`spend: { tenant }`), the
 * workflow's side of it: each model call's worst case is priced here (common/price.ts, the
 * pricing an `agentRun`'s planner uses) and reserved through the worker's spend activities
 * (worker/spend.ts, the same store and rules as an `agentRun`'s) before it is sent; after it,
 * the reservation is settled at the call's priced usage, or at its worst case when the
 * provider reported none. A refusal: the model is not called. Workflow code.
 */
import { log } from '@temporalio/workflow';
import {
  countedTokens,
  priceProblem,
  worstCaseOf,
  type ModelPrice,
  type TokenPrices,
  type WorstCase,
} from '../common/price';
import type { SpendActivities, SpendReservation } from '../worker/spend-types';

export { requestBytesOf } from '../common/price';
export type { SpendActivities, SpendReservation } from '../worker/spend-types';

/** A tenant name (common/contracts.ts `tenantSchema`, the key of `AGENT_SPEND_LIMITS`). */
const TENANT = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/**
 * What is wrong with a guard's `spend` option or its `prices` (both adapters refuse them with
 * this), or null.
 */
export function spendOptionProblem(
  spend: { readonly tenant?: unknown; readonly maxOutputTokens?: unknown } | undefined,
  prices?: ModelPrice | TokenPrices,
): string | null {
  const price = priceProblem(prices, 'prices');
  if (price) return price;
  if (spend === undefined) return null;
  if (typeof spend?.tenant !== 'string' || !TENANT.test(spend.tenant))
    return `spend.tenant must be 1-64 letters, digits, . _ - (starting with a letter or digit), got ${JSON.stringify(spend?.tenant)}`;
  const max = spend.maxOutputTokens;
  if (max !== undefined && !(typeof max === 'number' && Number.isInteger(max) && max > 0))
    return `spend.maxOutputTokens must be an integer > 0, got ${String(max)}`;
  return null;
}

/** A reservation with the worst case it was reserved at (what a call without usage settles at). */
export type GatedReservation = SpendReservation & { readonly worst: WorstCase };

/** A call's tokens as a framework reports them; either may be missing. */
export interface ReportedTokens {
  readonly inputTokens?: number;
  readonly outputTokens?: number;
}

/**
 * Reserves before each model call and settles after, for one tenant: framework-neutral (a
 * request's size, a token count), used by the AI SDK path's model wrapper and the OpenAI
 * Agents path's model wrapper (core/budget-stops.ts `modelSpend`).
 */
export class SpendGate {
  constructor(
    private readonly acts: SpendActivities,
    private readonly tenant: string,
    private readonly runId: string,
    private readonly price: ModelPrice | undefined,
    private readonly maxOutputTokens: number,
  ) {}

  /**
   * The reservation of the next call of `model`, a request of `requestBytes` bytes bounded to
   * `maxOutputTokens` (the guard's `spend.maxOutputTokens` when the call names none); throws
   * when the store cannot be reached.
   */
  async reserve(model: string, requestBytes: number, maxOutputTokens?: number): Promise<GatedReservation> {
    const worst = worstCaseOf(requestBytes, maxOutputTokens ?? this.maxOutputTokens, this.price);
    const r = await this.acts.agentLoopGuardReserveSpend({
      tenant: this.tenant,
      runId: this.runId,
      model,
      worstUsd: worst.costUsd,
    });
    return { ...r, worst };
  }

  /**
   * Settles a reservation at the call's priced usage; a call whose provider reported no usable
   * usage settles at its worst case (common/price.ts `countedTokens`), never at $0. A settle
   * that fails is only logged: the reservation keeps counting at its worst case, on the
   * tenant's side.
   */
  async settle(r: GatedReservation, reported: ReportedTokens | null | undefined): Promise<void> {
    if (r.kind !== 'reserved') return;
    const actualUsd = countedTokens(reported, this.price, r.worst).usage.costUsd;
    try {
      await this.acts.agentLoopGuardSettleSpend({ id: r.id, actualUsd });
    } catch (err) {
      log.warn(`spend: could not settle ${r.id}; it keeps counting at its worst case: ${String(err)}`);
    }
  }
}
