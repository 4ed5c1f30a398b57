/**
 * Money is checked before a model call, not after: every request the turn engine
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
import { FINAL_WORD_MAX_TOKENS, finalWordPrompt } from './final-word';
import type { GatedCall, RequestGate } from './request-gate';
import {
  countedUsage,
  dearestInputPerMTok,
  REQUEST_OVERHEAD_TOKENS,
  worstCaseOf as worstCaseOfBytes,
  type Counted,
  type ModelPrice,
  type WorstCase,
} from '../common/price';
import { findPrice, type PriceTable } from './pricing';

// The worst case and the count of an answered call are common/price.ts's, shared with the
// framework guards' spend gate; re-exported where the planners always found them.
export { countedUsage, REQUEST_OVERHEAD_TOKENS, type Counted, type WorstCase };

/**
 * The worst case of one request. The input bound is the UTF-8 size of everything sent (the
 * messages' JSON, the system prompt, the tools) plus {@link REQUEST_OVERHEAD_TOKENS}: a token
 * of a byte-level BPE tokenizer covers at least one byte, so no request is billed more input
 * tokens than that. The output is at most `maxTokens`, which every request carries.
 */
export function worstCaseOf(
  request: readonly unknown[] | RequestBytes,
  fixedBytes: number,
  maxTokens: number,
  price: ModelPrice | undefined,
): WorstCase {
  return worstCaseOfBytes(bytesOf(request) + fixedBytes, maxTokens, price);
}

/**
 * A request's UTF-8 JSON size, measured once: a turn's call and the final word kept in
 * reserve are bounded by the same conversation, which can be hundreds of kilobytes.
 */
export interface RequestBytes {
  readonly bytes: number;
}

/** The UTF-8 size of `request`'s JSON (see {@link RequestBytes}). */
export function requestBytes(request: readonly unknown[]): RequestBytes {
  return { bytes: Buffer.byteLength(JSON.stringify(request)) };
}

function bytesOf(request: readonly unknown[] | RequestBytes): number {
  return Array.isArray(request) ? requestBytes(request).bytes : (request as RequestBytes).bytes;
}

/** The bytes of the final word's prompt (its longest reason included), beside the conversation. */
export const FINAL_WORD_PROMPT_BYTES = Buffer.byteLength(finalWordPrompt('x'.repeat(64)));

/**
 * The worst case of the final word that may follow `request`: the same conversation
 * plus the final word's prompt, and {@link FINAL_WORD_MAX_TOKENS} of output. A run that keeps
 * room for it (`facts.reserveFinalWord`) checks each request's worst case plus this one.
 */
export function finalWordReserve(
  request: readonly unknown[] | RequestBytes,
  fixedBytes: number,
  price: ModelPrice | undefined,
): WorstCase {
  return worstCaseOf(request, fixedBytes + FINAL_WORD_PROMPT_BYTES, FINAL_WORD_MAX_TOKENS, price);
}

/**
 * The characters of conversation a final word may carry within `left`: what is left
 * of the run's tokens and cost after the tools, the system prompt, the prompt, the overhead and
 * its output. Null: no limit (`left` has neither).
 */
export function finalWordRoomChars(
  left: { readonly tokens?: number; readonly costUsd?: number },
  fixedBytes: number,
  price: ModelPrice | undefined,
): number | null {
  const besides = fixedBytes + FINAL_WORD_PROMPT_BYTES + REQUEST_OVERHEAD_TOKENS;
  let room: number | null = null;
  if (left.tokens !== undefined) room = left.tokens - FINAL_WORD_MAX_TOKENS - besides;
  if (left.costUsd !== undefined && price) {
    const dearest = dearestInputPerMTok(price);
    const forInput = left.costUsd - (FINAL_WORD_MAX_TOKENS * price.outputPerMTok) / 1e6;
    const byCost = dearest > 0 ? Math.floor((forInput * 1e6) / dearest) - besides : Infinity;
    room = room === null ? byCost : Math.min(room, byCost);
  }
  if (room === null || !Number.isFinite(room)) return null;
  return Math.max(0, Math.floor(room));
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
    const sent = requestBytes(request);
    const call = worstCaseOf(sent, o.fixedBytes, maxTokens, price);
    // Room kept for the final word that follows a money stop: checked with the call.
    const kept = o.input.facts?.reserveFinalWord ? finalWordReserve(sent, o.fixedBytes, price) : null;
    const worst: WorstCase = kept
      ? {
          tokens: call.tokens + kept.tokens,
          costUsd:
            call.costUsd === null || kept.costUsd === null ? call.costUsd : call.costUsd + kept.costUsd,
        }
      : call;
    const also = kept ? ', plus the final word kept in reserve' : '';
    if (left.tokens !== undefined && worst.tokens > left.tokens)
      throw new TokenCeilingError(
        `the next ${o.model} call could use ${worst.tokens} tokens (request bound plus maxTokens ${maxTokens}${also}) ` +
          `and the run has ${left.tokens} of maxTokens left: the model was not called; raise maxTokens to continue`,
      );
    if (left.costUsd !== undefined && worst.costUsd !== null && worst.costUsd > left.costUsd)
      throw new CostCeilingError(
        `the next ${o.model} call could cost $${worst.costUsd} (request bound plus maxTokens ${maxTokens}${also}) ` +
          `and the run has $${left.costUsd} of maxCostUsd left: the model was not called; raise maxCostUsd to continue`,
      );
    const spend = o.input.spend;
    const served = o.input.served;
    // The worst case is reserved under the tenant's cap, then recorded for the run, before the
    // request is sent: a worker that dies from here on leaves both at the worst case.
    const ticket = spend ? await spend.reserve(call.costUsd, o.model) : null;
    const record = served ? await served.sent(call, maxTokens) : null;
    const started = Date.now();
    const end = async (state: 'answered' | 'failed', c: Counted, finish: string | null) => {
      await ticket?.settle(c.usage.costUsd);
      if (served && record !== null)
        await served.ended(record, {
          state,
          usage: c.usage,
          basis: c.basis,
          finish,
          elapsedMs: Date.now() - started,
        });
      return c.usage;
    };
    return {
      answered: (usage: Usage, finish = 'done') => end('answered', countedUsage(usage, call), finish),
      // An HTTP error answer is not billed; a request that got no answer (network, timeout,
      // cancellation) may have been, so it stays counted at its worst case.
      failed: async (err) => {
        await end(
          'failed',
          answeredWithError(err)
            ? { usage: { tokens: 0, costUsd: 0 }, basis: 'error_answer' }
            : { usage: { tokens: call.tokens, costUsd: call.costUsd ?? 0 }, basis: 'unanswered' },
          null,
        );
      },
    };
  };
}

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
