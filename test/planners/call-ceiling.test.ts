/**
 * The gate before each model request (planners/call-ceiling.ts, docs/spec.md §7.13): the worst
 * case bounds what a request can be billed, the run's budgets left refuse a request that does
 * not fit, and a tenant reservation is settled at the actual cost, at 0 for an HTTP error
 * answer, and at its worst case when no answer came.
 */
import type { PlannerInput, SpendAccess } from '../../common/planner';
import {
  ceilingGate,
  FINAL_WORD_PROMPT_BYTES,
  finalWordReserve,
  finalWordRoomChars,
  REQUEST_OVERHEAD_TOKENS,
  requestBytes,
  worstCaseOf,
} from '../../planners/call-ceiling';
import {
  CostCeilingError,
  PlannerRequestError,
  PlannerUnavailableError,
  TokenCeilingError,
  UnreadableReplyError,
} from '../../planners/errors';
import { DEFAULT_PRICE_TABLE } from '../../planners/pricing';
import { createAnthropicPlanner } from '../../planners/anthropic';
import { createOpenAIPlanner } from '../../planners/openai';
import { turnInput } from './helpers';
import { startAnthropicServer } from './servers/anthropic-server';
import { startOpenAIServer } from '../../testing/openai-server';

const REQUEST = [{ role: 'user', content: 'héllo' }];
const BYTES = Buffer.byteLength(JSON.stringify(REQUEST));

type BudgetsLeft = NonNullable<PlannerInput['facts']>['budgetsLeft'];

function input(budgetsLeft: BudgetsLeft, spend?: SpendAccess): PlannerInput {
  return {
    runId: 'r',
    goal: 'g',
    planner: { kind: 'openai', model: 'gpt-4o-mini', maxTokens: 100 },
    tools: [],
    memory: null,
    observation: null,
    facts: {
      steps: 0,
      progressVersion: 0,
      completedOperations: 0,
      recentCompleted: [],
      stops: [],
      refusedResumes: [],
      budgetsLeft,
    },
    ...(spend ? { spend } : {}),
  };
}

function recordingSpend() {
  const reserved: Array<number | null> = [];
  const settled: number[] = [];
  const spend: SpendAccess = {
    tenant: 't',
    async reserve(worstUsd) {
      reserved.push(worstUsd);
      return { settle: async (usd) => void settled.push(usd) };
    },
  };
  return { spend, reserved, settled };
}

describe('worstCaseOf', () => {
  it('bounds input by the bytes sent plus the overhead, output by maxTokens, at the dearest input rate', () => {
    const price = { inputPerMTok: 1, outputPerMTok: 4, cacheWritePerMTok: 2 };
    const wc = worstCaseOf(REQUEST, 1000, 100, price);
    const input = BYTES + 1000 + REQUEST_OVERHEAD_TOKENS;
    expect(wc.tokens).toBe(input + 100);
    expect(wc.costUsd).toBeCloseTo((input * 2 + 100 * 4) / 1e6, 12);
    expect(worstCaseOf(REQUEST, 0, 100, undefined).costUsd).toBeNull();
  });

  it('answers the same for a request measured once (requestBytes) as for the request itself', () => {
    const price = { inputPerMTok: 1, outputPerMTok: 4 };
    const sent = requestBytes(REQUEST);
    expect(sent.bytes).toBe(BYTES);
    expect(worstCaseOf(sent, 1000, 100, price)).toEqual(worstCaseOf(REQUEST, 1000, 100, price));
    expect(finalWordReserve(sent, 7, price)).toEqual(finalWordReserve(REQUEST, 7, price));
  });
});

describe('ceilingGate', () => {
  const table = DEFAULT_PRICE_TABLE;
  const opts = (i: PlannerInput) => ({
    input: i,
    model: 'gpt-4o-mini',
    maxTokens: 100,
    fixedBytes: 0,
    table,
  });
  const worst = worstCaseOf(REQUEST, 0, 100, table['gpt-4o-mini']);

  it('refuses a request whose worst case is above the tokens or the cost left, and lets one that fits exactly', async () => {
    await expect(ceilingGate(opts(input({ tokens: worst.tokens - 1 })))(REQUEST)).rejects.toThrow(
      TokenCeilingError,
    );
    await expect(
      ceilingGate(opts(input({ costUsd: (worst.costUsd as number) - 1e-9 })))(REQUEST),
    ).rejects.toThrow(CostCeilingError);
    await expect(
      ceilingGate(opts(input({ tokens: worst.tokens, costUsd: worst.costUsd as number })))(REQUEST),
    ).resolves.toBeDefined();
    await expect(ceilingGate(opts(input({})))(REQUEST)).resolves.toBeDefined();
  });

  it('a run that keeps room for its final word checks each request with the final word reserved (issue 30)', async () => {
    const kept = finalWordReserve(REQUEST, 0, table['gpt-4o-mini']);
    expect(kept.tokens).toBe(BYTES + FINAL_WORD_PROMPT_BYTES + REQUEST_OVERHEAD_TOKENS + 256);
    const reserving = (left: BudgetsLeft, spend?: SpendAccess) => {
      const i = input(left, spend);
      return { ...i, facts: { ...i.facts!, reserveFinalWord: true } };
    };
    // Fits alone, not with the final word kept: refused, saying so; without the reserve it goes.
    await expect(ceilingGate(opts(reserving({ tokens: worst.tokens })))(REQUEST)).rejects.toThrow(
      /plus the final word kept in reserve/,
    );
    await expect(ceilingGate(opts(input({ tokens: worst.tokens })))(REQUEST)).resolves.toBeDefined();
    await expect(
      ceilingGate(opts(reserving({ tokens: worst.tokens + kept.tokens })))(REQUEST),
    ).resolves.toBeDefined();
    const cost = (worst.costUsd as number) + (kept.costUsd as number);
    await expect(ceilingGate(opts(reserving({ costUsd: cost - 1e-9 })))(REQUEST)).rejects.toThrow(
      CostCeilingError,
    );
    // The tenant reserves the call's own worst case: the final word reserves its own when asked.
    const r = recordingSpend();
    await ceilingGate(opts(reserving({ costUsd: cost }, r.spend)))(REQUEST);
    expect(r.reserved).toEqual([worst.costUsd]);
  });

  it("the final word's room is what the run's tokens and cost leave after everything but the conversation", () => {
    const price = table['gpt-4o-mini'];
    const besides = 100 + FINAL_WORD_PROMPT_BYTES + REQUEST_OVERHEAD_TOKENS + 256;
    expect(finalWordRoomChars({ tokens: besides + 5000 }, 100, price)).toBe(5000);
    expect(finalWordRoomChars({ tokens: 10 }, 100, price)).toBe(0);
    expect(finalWordRoomChars({}, 100, price)).toBeNull();
    // $0.15 / $0.60 per million: $0.001 leaves (0.001 - 256 * 0.6e-6) / 0.15e-6 input tokens.
    const byCost = Math.floor(((0.001 - 256 * 0.6e-6) * 1e6) / 0.15) - (besides - 256);
    expect(finalWordRoomChars({ costUsd: 0.001 }, 100, price)).toBe(byCost);
    expect(finalWordRoomChars({ tokens: 1e9, costUsd: 0.001 }, 100, price)).toBe(byCost);
  });

  it('the run ceiling comes first: a refused request reserves nothing', async () => {
    const r = recordingSpend();
    await expect(ceilingGate(opts(input({ tokens: 1 }, r.spend)))(REQUEST)).rejects.toThrow(
      TokenCeilingError,
    );
    expect(r.reserved).toEqual([]);
  });

  it('settles the actual cost, 0 for an HTTP error answer, the worst case when no answer came', async () => {
    const r = recordingSpend();
    const gate = ceilingGate(opts(input({}, r.spend)));
    await (await gate(REQUEST)).answered({ tokens: 10, costUsd: 0.0001 });
    await (await gate(REQUEST)).failed(new PlannerRequestError('bad request', 400));
    await (await gate(REQUEST)).failed(new PlannerUnavailableError('overloaded', 529, null));
    await (await gate(REQUEST)).failed(new PlannerUnavailableError('timeout', null, null));
    await (await gate(REQUEST)).failed(new Error('cancelled'));
    expect(r.reserved).toEqual(Array(5).fill(worst.costUsd));
    expect(r.settled).toEqual([0.0001, 0, 0, worst.costUsd, worst.costUsd]);
  });

  it('a model without a price reserves null (the tenant refuses it under a cap)', async () => {
    const r = recordingSpend();
    await ceilingGate({ ...opts(input({}, r.spend)), model: 'local-llama' })(REQUEST);
    expect(r.reserved).toEqual([null]);
  });
});

describe('every planner on createLlmPlanner gets the gate (the real SDKs, local servers)', () => {
  const facts = (budgetsLeft: BudgetsLeft): PlannerInput['facts'] => ({
    steps: 3,
    progressVersion: 0,
    completedOperations: 0,
    recentCompleted: [],
    stops: [],
    refusedResumes: [],
    budgetsLeft,
  });

  it.each(['openai', 'anthropic'] as const)('%s: a request that does not fit is never sent', async (kind) => {
    const server =
      kind === 'openai'
        ? await startOpenAIServer(() => ({
            content: 'done',
            usage: { prompt_tokens: 10, completion_tokens: 5 },
          }))
        : await startAnthropicServer(() => ({
            content: [{ type: 'text', text: 'done' }],
            usage: { input_tokens: 10, output_tokens: 5 },
          }));
    const requests = () => server.requests.length;
    try {
      const planner =
        kind === 'openai'
          ? createOpenAIPlanner({
              endpoints: { local: { provider: 'openai', baseURL: (server as { baseURL: string }).baseURL } },
              maxRetries: 0,
              warn: () => {},
            })
          : createAnthropicPlanner({
              endpoints: { local: { provider: 'anthropic', baseURL: server.origin } },
              maxRetries: 0,
              warn: () => {},
            });
      const spec =
        kind === 'openai'
          ? ({ kind, model: 'gpt-4o-mini', maxTokens: 256, endpoint: 'local' } as const)
          : ({ kind, model: 'claude-sonnet-4-6', maxTokens: 256, endpoint: 'local' } as const);
      const base = turnInput(spec, null);
      await expect(planner.next({ ...base, facts: facts({ costUsd: 0.0001 }) })).rejects.toThrow(
        CostCeilingError,
      );
      await expect(planner.next({ ...base, facts: facts({ tokens: 200 }) })).rejects.toThrow(
        TokenCeilingError,
      );
      expect(requests()).toBe(0);
      // With room, the same turn is sent once.
      const out = await planner.next({ ...base, facts: facts({ costUsd: 1, tokens: 100_000 }) });
      expect(out.turn.type).toBe('finish');
      expect(requests()).toBe(1);
    } finally {
      await server.close();
    }
  });

  it.each(['openai', 'anthropic'] as const)(
    '%s: a billed reply that cannot be read carries its usage, and the tenant is settled at its cost (issue 30)',
    async (kind) => {
      const server =
        kind === 'openai'
          ? await startOpenAIServer([
              { unreadable: 'no_choices', usage: { prompt_tokens: 1000, completion_tokens: 50 } },
              { unreadable: 'no_message', usage: { prompt_tokens: 1000, completion_tokens: 50 } },
            ])
          : await startAnthropicServer([
              { content: [], unreadable: true, usage: { input_tokens: 1000, output_tokens: 50 } },
            ]);
      try {
        const planner =
          kind === 'openai'
            ? createOpenAIPlanner({
                endpoints: {
                  local: { provider: 'openai', baseURL: (server as { baseURL: string }).baseURL },
                },
                warn: () => {},
              })
            : createAnthropicPlanner({
                endpoints: { local: { provider: 'anthropic', baseURL: server.origin } },
                warn: () => {},
              });
        const spec =
          kind === 'openai'
            ? ({ kind, model: 'gpt-4o-mini', maxTokens: 256, endpoint: 'local' } as const)
            : ({ kind, model: 'claude-sonnet-4-6', maxTokens: 256, endpoint: 'local' } as const);
        // gpt-4o-mini $0.15 / $0.60, claude-sonnet-4-6 $3 / $15 per million tokens.
        const cost = kind === 'openai' ? (1000 * 0.15 + 50 * 0.6) / 1e6 : (1000 * 3 + 50 * 15) / 1e6;
        for (let i = 0; i < (kind === 'openai' ? 2 : 1); i++) {
          const r = recordingSpend();
          const err = await planner
            .next({ ...turnInput(spec, null), facts: facts({}), spend: r.spend })
            .catch((e: unknown) => e);
          expect(err).toBeInstanceOf(UnreadableReplyError);
          expect((err as UnreadableReplyError).name).toBe('UnreadableReplyError');
          expect((err as UnreadableReplyError).usage.tokens).toBe(1050);
          expect((err as UnreadableReplyError).usage.costUsd).toBeCloseTo(cost, 12);
          // Settled at what the reply cost, not left at the reserved worst case.
          expect(r.settled).toHaveLength(1);
          expect(r.settled[0]).toBeCloseTo(cost, 12);
          expect(r.reserved[0]).toBeGreaterThan(cost);
        }
      } finally {
        await server.close();
      }
    },
  );
});
