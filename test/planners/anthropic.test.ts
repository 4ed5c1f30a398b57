/**
 * The Anthropic planner through the real `@anthropic-ai/sdk` client against a local
 * server speaking the Messages API with scripted replies.
 */
import { createAnthropicPlanner } from '../../planners/anthropic';
import {
  MissingApiKeyError,
  PlannerAuthError,
  PlannerProtocolError,
  PlannerUnavailableError,
} from '../../planners/errors';
import { resetPricingWarnings } from '../../planners/pricing';
import type { PlannerSpec } from '../../common/planner';
import { leaks, observe, turnInput } from './helpers';
import { presentedKey } from '../../testing/http-script';
import { startAnthropicServer, type AnthropicServer } from './servers/anthropic-server';

const KEY = 'sk-ant-test-0123456789abcdefSECRET';

let server: AnthropicServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
  resetPricingWarnings();
});

function spec(extra: Partial<Extract<PlannerSpec, { kind: 'anthropic' }>> = {}): PlannerSpec {
  return { kind: 'anthropic', model: 'claude-sonnet-4-6', maxTokens: 512, ...extra };
}

/** The built-in `anthropic` endpoint, moved to the test server by the worker's own ANTHROPIC_BASE_URL. */
function planner(env: NodeJS.ProcessEnv = { ANTHROPIC_API_KEY: KEY }, warn = jest.fn()) {
  return createAnthropicPlanner({ env: { ANTHROPIC_BASE_URL: server?.origin, ...env }, maxRetries: 0, warn });
}

test('multi-turn: call → observation → call → finish, with the exact tool_result blocks sent back', async () => {
  server = await startAnthropicServer(
    [
      {
        content: [
          { type: 'text', text: 'Let me search.' },
          { type: 'tool_use', id: 'toolu_A', name: 'search', input: { q: 'x' } },
        ],
        usage: { input_tokens: 1000, output_tokens: 200 },
        model: 'claude-sonnet-4-6-20260217',
      },
      {
        content: [
          {
            type: 'tool_use',
            id: 'toolu_B',
            name: 'send_notification',
            input: { to: 'ann', text: 'found 1' },
          },
        ],
        usage: { input_tokens: 2000, output_tokens: 100 },
      },
      {
        content: [{ type: 'text', text: 'Done: ann was notified.' }],
        usage: { input_tokens: 3000, output_tokens: 50 },
      },
    ],
    { apiKey: KEY },
  );
  const p = planner();
  const s = spec({ system: 'You are careful.' });

  const t1 = await p.next(turnInput(s, null));
  expect(t1.turn).toEqual({
    type: 'call',
    tool: 'search',
    args: { q: 'x' },
    callId: 'toolu_A',
    usage: { tokens: 1200, costUsd: 0.006 },
  });

  const o1 = observe(t1, { kind: 'SUCCESS', data: { hits: ['x1'] } });
  const t2 = await p.next(turnInput(s, t1.memory, o1));
  expect(t2.turn).toEqual({
    type: 'call',
    tool: 'send_notification',
    args: { to: 'ann', text: 'found 1' },
    callId: 'toolu_B',
    usage: { tokens: 2100, costUsd: 0.0075 },
  });

  const o2 = observe(t2, { kind: 'SUCCESS', data: { sent: true } });
  const t3 = await p.next(turnInput(s, t2.memory, o2));
  expect(t3.turn).toEqual({
    type: 'finish',
    ended: 'text',
    finishReason: 'end_turn',
    summary: 'Done: ann was notified.',
    usage: { tokens: 3050, costUsd: 0.00975 },
  });

  const bodies = server.messageRequests();
  expect(bodies).toHaveLength(3);
  // First request: goal as the user message, system prompt, tools with input_schema.
  expect(bodies[0]).toMatchObject({
    model: 'claude-sonnet-4-6',
    max_tokens: 512,
    system: 'You are careful.',
    messages: [{ role: 'user', content: 'Find x and notify ann.' }],
  });
  expect((bodies[0]?.tools as unknown[])[0]).toEqual({
    name: 'search',
    description: 'Search the index.',
    input_schema: {
      type: 'object',
      properties: { q: { type: 'string' }, limit: { type: 'integer', default: 10 } },
      required: ['q'],
      additionalProperties: false,
    },
  });
  // Second request: the assistant turn and exactly one tool_result for toolu_A.
  expect(bodies[1]?.messages).toEqual([
    { role: 'user', content: 'Find x and notify ann.' },
    {
      role: 'assistant',
      content: [
        { type: 'text', text: 'Let me search.' },
        { type: 'tool_use', id: 'toolu_A', name: 'search', input: { q: 'x' } },
      ],
    },
    {
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'toolu_A', content: '{"kind":"SUCCESS","data":{"hits":["x1"]}}' },
      ],
    },
  ]);
  const third = bodies[2]?.messages as unknown[];
  expect(third).toHaveLength(5);
  expect(third[4]).toEqual({
    role: 'user',
    content: [
      { type: 'tool_result', tool_use_id: 'toolu_B', content: '{"kind":"SUCCESS","data":{"sent":true}}' },
    ],
  });

  // The key travelled in a header of every request, and nowhere else.
  for (const req of server.requests) expect(presentedKey(req.headers)).toBe(KEY);
  for (const req of server.requests) expect(leaks(req.body, KEY)).toBe(false);
  for (const out of [t1, t2, t3]) expect(leaks(out, KEY)).toBe(false);
});

test('parallel tool_use blocks are handed out one per turn and answered in one user message', async () => {
  server = await startAnthropicServer([
    {
      content: [
        { type: 'tool_use', id: 'toolu_1', name: 'search', input: { q: 'a' } },
        { type: 'tool_use', id: 'toolu_2', name: 'search', input: { q: 'b' } },
        { type: 'tool_use', id: 'toolu_3', name: 'send_notification', input: { to: 'ann' } },
      ],
      usage: { input_tokens: 100, output_tokens: 20 },
    },
    { content: [{ type: 'text', text: 'ok' }] },
  ]);
  const p = planner();
  const s = spec();

  const t1 = await p.next(turnInput(s, null));
  expect(t1.turn).toMatchObject({
    type: 'call',
    callId: 'toolu_1',
    args: { q: 'a' },
    usage: { tokens: 120 },
  });
  const t2 = await p.next(turnInput(s, t1.memory, observe(t1, { kind: 'SUCCESS', data: 1 })));
  // Served from memory: no request, no usage.
  expect(t2.turn).toEqual({
    type: 'call',
    tool: 'search',
    args: { q: 'b' },
    callId: 'toolu_2',
    usage: { tokens: 0, costUsd: 0 },
  });
  expect(server.messageRequests()).toHaveLength(1);
  const t3 = await p.next(
    turnInput(s, t2.memory, observe(t2, { kind: 'RETRYABLE', code: 'rate_limited', retryAfterMs: 500 })),
  );
  expect(t3.turn).toMatchObject({ type: 'call', callId: 'toolu_3', usage: { tokens: 0, costUsd: 0 } });
  expect(server.messageRequests()).toHaveLength(1);
  const t4 = await p.next(
    turnInput(
      s,
      t3.memory,
      observe(t3, { kind: 'PRECONDITION', code: 'invalid_args', unmet: 'text: Required' }),
    ),
  );
  expect(t4.turn).toMatchObject({ type: 'finish', summary: 'ok' });

  const messages = server.messageRequests()[1]?.messages as unknown[];
  expect(messages).toHaveLength(3);
  expect(messages[2]).toEqual({
    role: 'user',
    content: [
      { type: 'tool_result', tool_use_id: 'toolu_1', content: '{"kind":"SUCCESS","data":1}' },
      {
        type: 'tool_result',
        tool_use_id: 'toolu_2',
        content: '{"kind":"RETRYABLE","code":"rate_limited","retryAfterMs":500}',
        is_error: true,
      },
      {
        type: 'tool_result',
        tool_use_id: 'toolu_3',
        content: '{"kind":"PRECONDITION","code":"invalid_args","unmet":"text: Required"}',
        is_error: true,
      },
    ],
  });
});

test('usage and cost: cache tokens, the AGENT_PRICE_TABLE override, and an unknown model (cost 0, one warning)', async () => {
  server = await startAnthropicServer([
    {
      content: [{ type: 'text', text: 'a' }],
      usage: {
        input_tokens: 1000,
        output_tokens: 1000,
        cache_read_input_tokens: 10000,
        cache_creation_input_tokens: 2000,
      },
    },
    { content: [{ type: 'text', text: 'b' }], usage: { input_tokens: 1_000_000, output_tokens: 1_000_000 } },
    {
      content: [{ type: 'text', text: 'c' }],
      usage: { input_tokens: 10, output_tokens: 10 },
      model: 'my-local-claude',
    },
    {
      content: [{ type: 'text', text: 'd' }],
      usage: { input_tokens: 10, output_tokens: 10 },
      model: 'my-local-claude',
    },
  ]);
  const warn = jest.fn();
  const s = spec();

  // Built-in sonnet price: 3 in, 15 out, cache read 0.3, cache write 3.75 per MTok.
  const a = await planner({ ANTHROPIC_API_KEY: KEY }, warn).next(turnInput(s, null));
  expect(a.turn.usage).toEqual({
    tokens: 14000,
    costUsd: (1000 * 3 + 1000 * 15 + 10000 * 0.3 + 2000 * 3.75) / 1e6,
  });

  const env = {
    ANTHROPIC_API_KEY: KEY,
    AGENT_PRICE_TABLE: '{"claude-sonnet-4-6": {"inputPerMTok": 1, "outputPerMTok": 2}}',
  };
  const b = await planner(env, warn).next(turnInput(s, null));
  expect(b.turn.usage).toEqual({ tokens: 2_000_000, costUsd: 3 });

  const c = await planner({ ANTHROPIC_API_KEY: KEY }, warn).next(
    turnInput(spec({ model: 'my-local-claude' }), null),
  );
  const d = await planner({ ANTHROPIC_API_KEY: KEY }, warn).next(
    turnInput(spec({ model: 'my-local-claude' }), null),
  );
  expect(c.turn.usage).toEqual({ tokens: 20, costUsd: 0 });
  expect(d.turn.usage).toEqual({ tokens: 20, costUsd: 0 });
  expect(warn).toHaveBeenCalledTimes(1);
  expect(warn.mock.calls[0]?.[0]).toContain('my-local-claude');
});

test('a missing key is a clear error naming ANTHROPIC_API_KEY, and no request is made', async () => {
  server = await startAnthropicServer([{ content: [{ type: 'text', text: 'never' }] }]);
  const err = await planner({})
    .next(turnInput(spec(), null))
    .catch((e: unknown) => e);
  expect(err).toBeInstanceOf(MissingApiKeyError);
  expect((err as Error).name).toBe('MissingApiKeyError');
  expect((err as Error).message).toContain('ANTHROPIC_API_KEY');
  expect(server.requests).toHaveLength(0);
});

test('the key and base URL come from process.env by default, and the key never enters memory or output', async () => {
  server = await startAnthropicServer(
    [{ content: [{ type: 'tool_use', id: 'toolu_Z', name: 'search', input: { q: KEY.slice(0, 5) } }] }],
    { apiKey: KEY },
  );
  const saved = { key: process.env.ANTHROPIC_API_KEY, url: process.env.ANTHROPIC_BASE_URL };
  process.env.ANTHROPIC_API_KEY = KEY;
  process.env.ANTHROPIC_BASE_URL = server.origin;
  try {
    const out = await createAnthropicPlanner({ maxRetries: 0 }).next(
      turnInput({ kind: 'anthropic', model: 'claude-haiku-4-5', maxTokens: 100 }, null),
    );
    expect(out.turn.type).toBe('call');
    expect(leaks(out.memory, KEY)).toBe(false);
    expect(leaks(out.turn, KEY)).toBe(false);
    expect(server.requests).toHaveLength(1);
  } finally {
    if (saved.key === undefined) delete process.env.ANTHROPIC_API_KEY;
    else process.env.ANTHROPIC_API_KEY = saved.key;
    if (saved.url === undefined) delete process.env.ANTHROPIC_BASE_URL;
    else process.env.ANTHROPIC_BASE_URL = saved.url;
  }
});

test('a 401 that echoes the key becomes a PlannerAuthError whose message and stack are redacted', async () => {
  server = await startAnthropicServer([
    {
      error: {
        status: 401,
        type: 'authentication_error',
        message: `invalid x-api-key: ${KEY} (also Bearer ${KEY})`,
      },
    },
  ]);
  const err = (await planner()
    .next(turnInput(spec(), null))
    .catch((e: unknown) => e)) as PlannerAuthError;
  expect(err).toBeInstanceOf(PlannerAuthError);
  expect(err.name).toBe('PlannerAuthError');
  expect(err.retryable).toBe(false);
  expect(err.message).toContain('401');
  expect(err.message).toContain('[REDACTED]');
  expect(err.message).not.toContain(KEY);
  expect(err.stack ?? '').not.toContain(KEY);
  expect(err.cause).toBeUndefined();
  expect(leaks({ ...err, message: err.message }, KEY)).toBe(false);
});

test('429 and 529 are retryable PlannerUnavailableErrors carrying retry-after', async () => {
  server = await startAnthropicServer([
    {
      error: { status: 429, type: 'rate_limit_error', message: 'slow down', headers: { 'retry-after': '7' } },
    },
    { error: { status: 529, type: 'overloaded_error', message: 'Overloaded' } },
  ]);
  const first = (await planner()
    .next(turnInput(spec(), null))
    .catch((e: unknown) => e)) as PlannerUnavailableError;
  expect(first).toBeInstanceOf(PlannerUnavailableError);
  expect(first).toMatchObject({
    name: 'PlannerUnavailableError',
    retryable: true,
    status: 429,
    retryAfterMs: 7000,
  });
  const second = (await planner()
    .next(turnInput(spec(), null))
    .catch((e: unknown) => e)) as PlannerUnavailableError;
  expect(second).toMatchObject({ name: 'PlannerUnavailableError', status: 529 });
});

test('an observation for another call is a protocol error; a missing one becomes NOT_EXECUTED', async () => {
  server = await startAnthropicServer([
    { content: [{ type: 'tool_use', id: 'toolu_Q', name: 'search', input: { q: 'x' } }] },
    { content: [{ type: 'text', text: 'giving up' }] },
  ]);
  const p = planner();
  const s = spec();
  const t1 = await p.next(turnInput(s, null));
  const wrong = await p
    .next(turnInput(s, t1.memory, { callId: 'toolu_OTHER', tool: 'search', kind: 'SUCCESS' }))
    .catch((e: unknown) => e);
  expect(wrong).toBeInstanceOf(PlannerProtocolError);

  // As after a resume from a guard stop: the workflow asks again without an observation.
  const t2 = await p.next(turnInput(s, t1.memory, null));
  expect(t2.turn).toMatchObject({ type: 'finish', summary: 'giving up' });
  const sent = server.messageRequests()[1]?.messages as unknown[];
  expect(sent[2]).toEqual({
    role: 'user',
    content: [
      {
        type: 'tool_result',
        tool_use_id: 'toolu_Q',
        content: '{"kind":"NOT_EXECUTED","unmet":"the runtime did not execute this call"}',
        is_error: true,
      },
    ],
  });
});

test('memory is plain JSON and the caller’s memory object is not mutated', async () => {
  server = await startAnthropicServer([
    { content: [{ type: 'tool_use', id: 'toolu_M', name: 'search', input: { q: 'x' } }] },
    { content: [{ type: 'text', text: 'done' }] },
  ]);
  const p = planner();
  const s = spec();
  const t1 = await p.next(turnInput(s, null));
  const snapshot = JSON.stringify(t1.memory);
  expect(JSON.parse(snapshot)).toEqual(t1.memory);
  await p.next(turnInput(s, JSON.parse(snapshot), observe(t1, { kind: 'SUCCESS' })));
  expect(JSON.stringify(t1.memory)).toBe(snapshot);
  const foreign = await p
    .next(turnInput(s, { v: 1, provider: 'openai', messages: [], awaiting: null, queue: [] }))
    .catch((e: unknown) => e);
  expect(foreign).toBeInstanceOf(PlannerProtocolError);
});
