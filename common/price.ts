/**
 * The one way a model call is priced, by every engine and on both halves: the price type
 * ({@link ModelPrice}, the shape of an `AGENT_PRICE_TABLE` entry and of the framework guards'
 * `prices` option), the cost of reported usage ({@link costUsd}), the worst case of a request
 * before it is sent ({@link worstCaseOf}) and what an answered request counts when its provider
 * reported no usable figures ({@link countedUsage}: the worst case, never zero).
 * Pure and sandbox-safe: workflow code prices the worst case it reserves, the worker settles.
 */

/** Price of one model, in USD per million tokens. */
export interface ModelPrice {
  readonly inputPerMTok: number;
  readonly outputPerMTok: number;
  /** Price of input tokens read from a prompt cache; default: `inputPerMTok`. */
  readonly cacheReadPerMTok?: number;
  /** Price of input tokens written to a prompt cache; default: `inputPerMTok`. */
  readonly cacheWritePerMTok?: number;
}

/**
 * Tokens a provider adds to a request beyond its JSON (message framing, the hidden tool-use
 * system prompt: Anthropic documents 346 tokens for tools with `auto` choice).
 */
export const REQUEST_OVERHEAD_TOKENS = 512;

/** Tokens of one model request, split by how they are billed. */
export interface TokenCounts {
  /** Uncached input tokens. */
  readonly inputTokens: number;
  readonly outputTokens: number;
  /** Input tokens served from a prompt cache. */
  readonly cacheReadTokens?: number;
  /** Input tokens written to a prompt cache. */
  readonly cacheWriteTokens?: number;
}

/** Total tokens of a request: every input token (cached or not) plus the output. */
export function totalTokens(counts: TokenCounts): number {
  return (
    counts.inputTokens + (counts.cacheReadTokens ?? 0) + (counts.cacheWriteTokens ?? 0) + counts.outputTokens
  );
}

/** Cost in USD of a request at the given price, rounded to 1e-10 (no float dust in budgets). */
export function costUsd(price: ModelPrice, counts: TokenCounts): number {
  const micro =
    counts.inputTokens * price.inputPerMTok +
    (counts.cacheReadTokens ?? 0) * (price.cacheReadPerMTok ?? price.inputPerMTok) +
    (counts.cacheWriteTokens ?? 0) * (price.cacheWritePerMTok ?? price.inputPerMTok) +
    counts.outputTokens * price.outputPerMTok;
  return Math.round((micro / 1_000_000) * 1e10) / 1e10;
}

/**
 * The input rate of a worst case: the dearest way an input token can be billed. Before the
 * call nobody knows whether the provider will read the prompt from its cache, write it to the
 * cache or take it plain, and a cache write costs more than plain input (Anthropic: 1.25×), so
 * a bound priced at the plain rate could be beaten by the bill. A price without cache rates
 * is its plain input rate.
 */
export function dearestInputPerMTok(price: ModelPrice): number {
  return Math.max(price.inputPerMTok, price.cacheReadPerMTok ?? 0, price.cacheWritePerMTok ?? 0);
}

/** The worst case of one request. */
export interface WorstCase {
  /** Input bound plus the call's output limit. */
  readonly tokens: number;
  /** Their price at the model's dearest input rate and its output rate; null without a price. */
  readonly costUsd: number | null;
}

/**
 * The worst case of a request of `inputBytes` UTF-8 bytes (everything sent: messages, system
 * prompt, tools) bounded to `maxOutputTokens` of output. The input bound is the bytes plus
 * {@link REQUEST_OVERHEAD_TOKENS}: a token of a byte-level BPE tokenizer covers at least one
 * byte, so no request is billed more input tokens than that.
 */
export function worstCaseOf(
  inputBytes: number,
  maxOutputTokens: number,
  price: ModelPrice | undefined,
): WorstCase {
  const input = inputBytes + REQUEST_OVERHEAD_TOKENS;
  const tokens = input + maxOutputTokens;
  if (!price) return { tokens, costUsd: null };
  const worst = costUsd(
    { inputPerMTok: dearestInputPerMTok(price), outputPerMTok: price.outputPerMTok },
    { inputTokens: input, outputTokens: maxOutputTokens },
  );
  return { tokens, costUsd: worst };
}

/** The UTF-8 size of a request's JSON: what its worst case counts as input tokens. */
export function requestBytesOf(request: unknown): number {
  return new TextEncoder().encode(JSON.stringify(request) ?? '').length;
}

/** A request's usage as a run and a tenant count it: tokens and USD. */
export interface CountedUsage {
  readonly tokens: number;
  readonly costUsd: number;
}

/** A request's usage as the run and the tenant count it, and why (docs/spec.md §7.10). */
export interface Counted {
  readonly usage: CountedUsage;
  readonly basis: 'reported' | 'estimated' | 'above_bound' | 'unanswered' | 'error_answer';
}

/**
 * What an answered request counts: the reply's reported usage; when the provider said nothing
 * usable (no usage, zero tokens, a negative or non-finite figure) the request's worst case — a
 * conservative estimate, never zero; a figure above the request's own bound counts as reported,
 * since that is what the provider bills (`above_bound`).
 */
export function countedUsage(reported: Partial<CountedUsage> | null | undefined, worst: WorstCase): Counted {
  const tokens = reported?.tokens;
  const cost = reported?.costUsd;
  const fine = (n: unknown): n is number => typeof n === 'number' && Number.isFinite(n) && n >= 0;
  if (!fine(tokens) || tokens <= 0 || !fine(cost))
    return { usage: { tokens: worst.tokens, costUsd: worst.costUsd ?? 0 }, basis: 'estimated' };
  return { usage: { tokens, costUsd: cost }, basis: tokens > worst.tokens ? 'above_bound' : 'reported' };
}

/**
 * What a framework reports of a call's tokens (input and output; either may be missing),
 * counted as {@link countedUsage} counts it: priced at `price` (unpriced: $0), the worst case
 * when nothing usable was reported.
 */
export function countedTokens(
  reported: { readonly inputTokens?: number; readonly outputTokens?: number } | null | undefined,
  price: ModelPrice | undefined,
  worst: WorstCase,
): Counted {
  const i = reported?.inputTokens;
  const o = reported?.outputTokens;
  if (typeof i !== 'number' || typeof o !== 'number') return countedUsage(null, worst);
  const counts = { inputTokens: i, outputTokens: o };
  return countedUsage({ tokens: i + o, costUsd: price ? costUsd(price, counts) : 0 }, worst);
}

/**
 * The old spelling of a price (`{ inputPerMillion, outputPerMillion }`), still accepted by the
 * framework guards' `prices` option and read as the {@link ModelPrice} of the same rates.
 * @deprecated give a {@link ModelPrice} (`{ inputPerMTok, outputPerMTok }`).
 */
export interface TokenPrices {
  readonly inputPerMillion: number;
  readonly outputPerMillion: number;
}

const RATE_KEYS = ['inputPerMTok', 'outputPerMTok', 'cacheReadPerMTok', 'cacheWritePerMTok'] as const;
const OLD_KEYS = ['inputPerMillion', 'outputPerMillion'] as const;

/** What is wrong with a price given as an option (`where` names it), or null. */
export function priceProblem(value: unknown, where: string): string | null {
  if (value === undefined) return null;
  const expected = `expected { inputPerMTok, outputPerMTok, cacheReadPerMTok?, cacheWritePerMTok? } in USD per million tokens`;
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    return `${where} must be a price object, got ${JSON.stringify(value)}: ${expected}`;
  const keys = Object.keys(value);
  const old = keys.some((k) => (OLD_KEYS as readonly string[]).includes(k));
  const allowed: readonly string[] = old ? OLD_KEYS : RATE_KEYS;
  const unknown = keys.filter((k) => !allowed.includes(k));
  if (unknown.length > 0)
    return `${where} is an unknown price type (unexpected ${unknown.map((k) => JSON.stringify(k)).join(', ')}): ${expected}`;
  const required = old ? OLD_KEYS : RATE_KEYS.slice(0, 2);
  for (const k of allowed) {
    const v = (value as Record<string, unknown>)[k];
    if (v === undefined && !required.includes(k as never)) continue;
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0)
      return `${where}.${k} must be a finite number ≥ 0 (USD per million tokens), got ${JSON.stringify(v)}`;
  }
  return null;
}

/** A price option as the one {@link ModelPrice}; undefined stays undefined. Check {@link priceProblem} first. */
export function modelPriceOf(value: ModelPrice | TokenPrices | undefined): ModelPrice | undefined {
  if (value === undefined) return undefined;
  if ('inputPerMillion' in value)
    return { inputPerMTok: value.inputPerMillion, outputPerMTok: value.outputPerMillion };
  return value;
}
