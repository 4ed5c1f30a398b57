/**
 * Per-model token prices, so an LLM planner can report what each proposal cost and the
 * loop guard can enforce `maxCostUsd` (docs/spec.md §3 rule 3).
 *
 * The built-in table covers a few current Anthropic and OpenAI models at list price
 * (standard tier, USD per million tokens). Prices change and deployments differ
 * (batch, priority tier, a private vLLM box), so the table is overridable per process
 * with the env var `AGENT_PRICE_TABLE`. An unknown model costs 0 and is warned about
 * once: a missing price must not fail a run, but it must not go unnoticed either,
 * because a cost budget silently stops working for that model.
 */
import { z } from 'zod';
import type { Usage } from '../guard/schemas';
import { costUsd, totalTokens, type ModelPrice, type TokenCounts } from '../common/price';
import { PriceTableError } from './errors';

/** Thrown by {@link parsePriceTable}; defined with the other planner errors. */
export { PriceTableError };

// The price type and the cost of usage are common/price.ts's, one for every engine.
export { costUsd, totalTokens, type ModelPrice, type TokenCounts } from '../common/price';

/** Model id → price. Keys are model ids without a date suffix (`claude-sonnet-4-5`). */
export type PriceTable = Readonly<Record<string, ModelPrice>>;

/** Name of the env var that overrides or extends the price table. */
export const PRICE_TABLE_ENV = 'AGENT_PRICE_TABLE';

/** Anthropic: a 5-minute cache write costs 1.25× input, a cache read 0.1× input. */
function anthropic(input: number, output: number): ModelPrice {
  return {
    inputPerMTok: input,
    outputPerMTok: output,
    cacheWritePerMTok: input * 1.25,
    cacheReadPerMTok: input * 0.1,
  };
}

/** OpenAI: cached input has its own price; there is no separate cache-write charge. */
function openai(input: number, output: number, cachedInput: number): ModelPrice {
  return {
    inputPerMTok: input,
    outputPerMTok: output,
    cacheReadPerMTok: cachedInput,
    cacheWritePerMTok: input,
  };
}

/**
 * Built-in list prices (USD per million tokens, standard tier). Override or extend
 * with `AGENT_PRICE_TABLE`; see docs/planners.md.
 */
export const DEFAULT_PRICE_TABLE: PriceTable = Object.freeze({
  'claude-fable-5-1': anthropic(10, 50),
  'claude-fable-5': anthropic(10, 50),
  'claude-opus-5-5': anthropic(4, 20),
  'claude-opus-5': anthropic(5, 25),
  'claude-sonnet-5-5': anthropic(2, 10),
  'claude-sonnet-5': anthropic(2, 10),
  'claude-opus-4-8': anthropic(5, 25),
  'claude-opus-4-7': anthropic(5, 25),
  'claude-opus-4-6': anthropic(5, 25),
  'claude-sonnet-4-6': anthropic(3, 15),
  'claude-opus-4-5': anthropic(5, 25),
  'claude-opus-4-1': anthropic(15, 75),
  'claude-opus-4': anthropic(15, 75),
  'claude-sonnet-4-5': anthropic(3, 15),
  'claude-sonnet-4': anthropic(3, 15),
  'claude-haiku-4-5': anthropic(1, 5),
  'claude-3-5-haiku': anthropic(0.8, 4),
  'gpt-5': openai(1.25, 10, 0.125),
  'gpt-5-mini': openai(0.25, 2, 0.025),
  'gpt-5-nano': openai(0.05, 0.4, 0.005),
  'gpt-4.1': openai(2, 8, 0.5),
  'gpt-4.1-mini': openai(0.4, 1.6, 0.1),
  'gpt-4.1-nano': openai(0.1, 0.4, 0.025),
  'gpt-4o': openai(2.5, 10, 1.25),
  'gpt-4o-mini': openai(0.15, 0.6, 0.075),
  'o4-mini': openai(1.1, 4.4, 0.275),
});

const perMTok = z.number().finite().nonnegative();
const modelPriceSchema = z
  .object({
    inputPerMTok: perMTok,
    outputPerMTok: perMTok,
    cacheReadPerMTok: perMTok.optional(),
    cacheWritePerMTok: perMTok.optional(),
  })
  .strict();
const priceTableSchema = z.record(z.string().min(1), modelPriceSchema);

/** Parses a price table (e.g. the JSON of `AGENT_PRICE_TABLE`); throws {@link PriceTableError}. */
export function parsePriceTable(json: string): PriceTable {
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch (err) {
    throw new PriceTableError(`${PRICE_TABLE_ENV} is not valid JSON: ${(err as Error).message}`);
  }
  const parsed = priceTableSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue && issue.path.length > 0 ? ` at ${issue.path.join('.')}` : '';
    throw new PriceTableError(
      `${PRICE_TABLE_ENV} must be {"model": {"inputPerMTok": n, "outputPerMTok": n}}: ${issue?.message ?? 'invalid'}${where}`,
    );
  }
  const table: Record<string, ModelPrice> = {};
  for (const [model, price] of Object.entries(parsed.data)) table[normalizeModelId(model)] = price;
  return table;
}

// The env var is read on every request (so a changed value takes effect without a
// restart) but parsed only when its text changes.
let cachedOverride: { text: string; table: PriceTable } | null = null;

/**
 * The effective table: `base` (default {@link DEFAULT_PRICE_TABLE}) with the entries of
 * `AGENT_PRICE_TABLE` from `env` laid over it, model by model.
 */
export function loadPriceTable(
  env: NodeJS.ProcessEnv = process.env,
  base: PriceTable = DEFAULT_PRICE_TABLE,
): PriceTable {
  const text = env[PRICE_TABLE_ENV];
  if (text === undefined || text.trim() === '') return base;
  if (cachedOverride?.text !== text) cachedOverride = { text, table: parsePriceTable(text) };
  return { ...base, ...cachedOverride.table };
}

/**
 * The table key for a model id: lower case, without a provider prefix
 * (`openai/gpt-4o`), a `-latest` suffix or a date snapshot suffix
 * (`-20250929`, `-2024-07-18`), so the ids the APIs echo back find their price.
 */
export function normalizeModelId(model: string): string {
  let id = model.trim().toLowerCase();
  const slash = id.lastIndexOf('/');
  if (slash >= 0) id = id.slice(slash + 1);
  return id
    .replace(/-latest$/, '')
    .replace(/-\d{8}$/, '')
    .replace(/-\d{4}-\d{2}-\d{2}$/, '');
}

/** The price of the first of `models` the table knows (exact id first, then normalised). */
export function findPrice(
  table: PriceTable,
  ...models: ReadonlyArray<string | null | undefined>
): ModelPrice | undefined {
  for (const model of models) {
    if (!model) continue;
    const price = table[model] ?? table[normalizeModelId(model)];
    if (price) return price;
  }
  return undefined;
}

const warnedModels = new Set<string>();

/** Forgets which unknown models were already warned about (tests). */
export function resetPricingWarnings(): void {
  warnedModels.clear();
}

/** Options of {@link usageOf}. */
export interface UsageOptions {
  readonly table: PriceTable;
  /** Receives the one-time warning about a model without a price. */
  readonly warn: (message: string) => void;
}

/**
 * The guard's {@link Usage} of one model request. `models` are tried in order (the id
 * the API echoed, then the id requested). A model without a price costs 0, and the
 * first time it is seen in this process a warning says so.
 */
export function usageOf(
  models: ReadonlyArray<string | null | undefined>,
  counts: TokenCounts,
  options: UsageOptions,
): Usage {
  const tokens = totalTokens(counts);
  const price = findPrice(options.table, ...models);
  if (price) return { tokens, costUsd: costUsd(price, counts) };
  const name = models.find((m): m is string => !!m) ?? '(unnamed model)';
  if (!warnedModels.has(name)) {
    warnedModels.add(name);
    options.warn(
      `No price for model "${name}": its cost counts as 0 and maxCostUsd cannot limit it. ` +
        `Add it to ${PRICE_TABLE_ENV}, e.g. {"${normalizeModelId(name)}": {"inputPerMTok": 1, "outputPerMTok": 2}}.`,
    );
  }
  return { tokens, costUsd: 0 };
}
