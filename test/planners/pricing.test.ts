/**
 * The price table, model-id normalisation and cost arithmetic.
 */
import {
  DEFAULT_PRICE_TABLE,
  PriceTableError,
  costUsd,
  findPrice,
  loadPriceTable,
  normalizeModelId,
  parsePriceTable,
  resetPricingWarnings,
  usageOf,
} from '../../planners/pricing';

afterEach(() => resetPricingWarnings());

test('model ids the APIs echo back find their price', () => {
  expect(normalizeModelId('claude-sonnet-4-5-20250929')).toBe('claude-sonnet-4-5');
  expect(normalizeModelId('gpt-4o-mini-2024-07-18')).toBe('gpt-4o-mini');
  expect(normalizeModelId('openai/GPT-4o')).toBe('gpt-4o');
  expect(normalizeModelId('claude-3-5-haiku-latest')).toBe('claude-3-5-haiku');
  expect(findPrice(DEFAULT_PRICE_TABLE, 'gpt-4o-2024-08-06')).toBe(DEFAULT_PRICE_TABLE['gpt-4o']);
  // Longest-prefix guessing would price gpt-4o-mini as gpt-4o; exact ids only.
  expect(findPrice(DEFAULT_PRICE_TABLE, 'gpt-4o-mini')).toBe(DEFAULT_PRICE_TABLE['gpt-4o-mini']);
  expect(findPrice(DEFAULT_PRICE_TABLE, 'gpt-4o-turbo-x')).toBeUndefined();
  expect(findPrice(DEFAULT_PRICE_TABLE, null, 'unknown', 'claude-haiku-4-5')).toBe(
    DEFAULT_PRICE_TABLE['claude-haiku-4-5'],
  );
});

test('cost arithmetic, without float dust', () => {
  expect(costUsd({ inputPerMTok: 3, outputPerMTok: 15 }, { inputTokens: 1000, outputTokens: 200 })).toBe(
    0.006,
  );
  expect(costUsd({ inputPerMTok: 0.1, outputPerMTok: 0.2 }, { inputTokens: 1, outputTokens: 2 })).toBe(5e-7);
  // Cache prices default to the input price.
  expect(
    costUsd(
      { inputPerMTok: 1, outputPerMTok: 1 },
      { inputTokens: 0, outputTokens: 0, cacheReadTokens: 1e6, cacheWriteTokens: 1e6 },
    ),
  ).toBe(2);
});

test('AGENT_PRICE_TABLE extends and overrides the built-in table; junk is refused', () => {
  const table = loadPriceTable({
    AGENT_PRICE_TABLE:
      '{"gpt-4o": {"inputPerMTok": 9, "outputPerMTok": 9}, "Llama-3-70B-2024-01-01": {"inputPerMTok": 0, "outputPerMTok": 0}}',
  });
  expect(table['gpt-4o']).toEqual({ inputPerMTok: 9, outputPerMTok: 9 });
  expect(table['llama-3-70b']).toEqual({ inputPerMTok: 0, outputPerMTok: 0 });
  expect(table['gpt-4o-mini']).toBe(DEFAULT_PRICE_TABLE['gpt-4o-mini']);
  expect(loadPriceTable({})).toBe(DEFAULT_PRICE_TABLE);
  expect(() => parsePriceTable('{nope')).toThrow(PriceTableError);
  expect(() => parsePriceTable('{"m": {"inputPerMTok": 1}}')).toThrow(/outputPerMTok/);
  expect(() => parsePriceTable('{"m": {"inputPerMTok": 1, "outputPerMTok": 1, "perCall": 3}}')).toThrow(
    PriceTableError,
  );
});

test('an unknown model costs 0 and is warned about once per process', () => {
  const warn = jest.fn();
  const counts = { inputTokens: 7, outputTokens: 3 };
  expect(usageOf(['mystery-model'], counts, { table: DEFAULT_PRICE_TABLE, warn })).toEqual({
    tokens: 10,
    costUsd: 0,
  });
  expect(usageOf(['mystery-model'], counts, { table: DEFAULT_PRICE_TABLE, warn })).toEqual({
    tokens: 10,
    costUsd: 0,
  });
  expect(warn).toHaveBeenCalledTimes(1);
});
