/**
 * Money is checked before a model call, not after (issue 18): every request the turn engine
 * is about to send is priced at its worst case — the request's token bound plus its
 * `maxTokens` of output, at the model's price — and refused when that does not fit what the
 * run has left (`facts.budgetsLeft`: the run's `maxTokens` and `maxCostUsd`) or what the
 * tenant's spend limit has left (the {@link SpendAccess} the plan activity hands the turn).
 * A refused request is never sent. The gate is the turn engine's (llm-common.ts
 * `TurnOptions.gate`), so every planner built on {@link createLlmPlanner} gets it.
 */
import type { PlannerInput, SpendAccess } from '../common/planner';
import type { Usage } from '../guard/schemas';
import {
  CostCeilingError,
  PlannerAuthError,
  PlannerRequestError,
  PlannerUnavailableError,
  ContextLengthExceededError,
  SpendLimitError,
  TokenCeilingError,
  UnpricedModelError,
} from './errors';
import type { GatedCall, RequestGate } from './llm-common';
import { costUsd, findPrice, type ModelPrice, type PriceTable } from './pricing';

/**
 * Tokens a provider adds to a request beyond its JSON (message framing, the hidden tool-use
 * system prompt: Anthropic documents 346 tokens for tools with `auto` choice).
 */
export const REQUEST_OVERHEAD_TOKENS = 512;

/** The worst case of one request. */
export interface WorstCase {
  /** Input bound plus the call's `maxTokens`. */
  readonly tokens: number;
  /** Their price at the model's dearest input rate and its output rate; null without a price. */
  readonly costUsd: number | null;
}

/**
 * The worst case of one request. The input bound is the UTF-8 size of everything sent (the
 * messages' JSON, the system prompt, the tools) plus {@link REQUEST_OVERHEAD_TOKENS}: a token
 * of a byte-level BPE tokenizer covers at least one byte, so no request is billed more input
 * tokens than that. The output is at most `maxTokens`, which every request carries.
 */
export function worstCaseOf(
  request: readonly unknown[],
  fixedBytes: number,
  maxTokens: number,
  price: ModelPrice | undefined,
): WorstCase {
  const input = Buffer.byteLength(JSON.stringify(request)) + fixedBytes + REQUEST_OVERHEAD_TOKENS;
  const tokens = input + maxTokens;
  if (!price) return { tokens, costUsd: null };
  // The dearest way the input could be billed (a cache write costs more than plain input).
  const dearest = Math.max(price.inputPerMTok, price.cacheReadPerMTok ?? 0, price.cacheWritePerMTok ?? 0);
  const worst = costUsd(
    { inputPerMTok: dearest, outputPerMTok: price.outputPerMTok },
    { inputTokens: input, outputTokens: maxTokens },
  );
  return { tokens, costUsd: worst };
}

/** What the gate of one turn needs. */
export interface CeilingOptions {
  readonly input: PlannerInput;
  readonly model: string;
  readonly maxTokens: number;
  /** Bytes sent with every request beside the messages (system prompt, tools). */
  readonly fixedBytes: number;
  readonly table: PriceTable;
}

/**
 * The gate of one turn: refuses a request whose worst case does not fit the run's budgets
 * left (a {@link TokenCeilingError} / {@link CostCeilingError}: the run stops with the
 * budget's reason) or the tenant's spend limit (a {@link SpendLimitError} /
 * {@link UnpricedModelError}: the run stops NEEDS_HUMAN `spend_limit`); otherwise reserves it
 * under the tenant's limit and settles the actual cost when the call ends.
 */
export function ceilingGate(o: CeilingOptions): RequestGate<unknown> {
  const left = o.input.facts?.budgetsLeft ?? {};
  const price = findPrice(o.table, o.model);
  return async (request, requestMaxTokens): Promise<GatedCall> => {
    // A truncated reply is asked again with a larger limit (llm-common.ts): its worst case is that one's.
    const maxTokens = requestMaxTokens ?? o.maxTokens;
    const worst = worstCaseOf(request, o.fixedBytes, maxTokens, price);
    if (left.tokens !== undefined && worst.tokens > left.tokens)
      throw new TokenCeilingError(
        `the next ${o.model} call could use ${worst.tokens} tokens (request bound plus maxTokens ${maxTokens}) ` +
          `and the run has ${left.tokens} of maxTokens left: the model was not called; raise maxTokens to continue`,
      );
    if (left.costUsd !== undefined && worst.costUsd !== null && worst.costUsd > left.costUsd)
      throw new CostCeilingError(
        `the next ${o.model} call could cost $${worst.costUsd} (request bound plus maxTokens ${maxTokens}) ` +
          `and the run has $${left.costUsd} of maxCostUsd left: the model was not called; raise maxCostUsd to continue`,
      );
    const spend = o.input.spend;
    if (!spend) return NOTHING_TO_SETTLE;
    const ticket = await spend.reserve(worst.costUsd, o.model);
    const reserved = worst.costUsd ?? 0;
    return {
      answered: (usage: Usage) => ticket.settle(usage.costUsd),
      // An HTTP error answer is not billed; a request that got no answer (network, timeout,
      // cancellation) may have been, so it stays charged at its worst case.
      failed: (err) => ticket.settle(answeredWithError(err) ? 0 : reserved),
    };
  };
}

const NOTHING_TO_SETTLE: GatedCall = { answered: async () => {}, failed: async () => {} };

function answeredWithError(err: unknown): boolean {
  if (err instanceof PlannerAuthError || err instanceof ContextLengthExceededError) return true;
  if (err instanceof PlannerRequestError || err instanceof PlannerUnavailableError)
    return err.status !== null;
  return false;
}

/** Refusal messages of a tenant's spend limit (storage/spend builds its own; these are the planner's). */
export function spendRefusal(spend: SpendAccess, detail: string): SpendLimitError {
  return new SpendLimitError(`tenant "${spend.tenant}": ${detail}`);
}

/** A model without a price under a tenant cap. */
export function unpricedRefusal(spend: SpendAccess, model: string): UnpricedModelError {
  return new UnpricedModelError(
    `tenant "${spend.tenant}" has a spend limit and model "${model}" has no price, so its calls cannot be ` +
      `reserved: add it to AGENT_PRICE_TABLE on the worker; the model was not called`,
  );
}
