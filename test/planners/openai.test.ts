/**
 * The OpenAI-compatible planner through the real `openai` client against a local
 * server speaking Chat Completions with scripted replies (as vLLM / Ollama do).
 */
import { MissingApiKeyError, PlannerAuthError, PlannerRequestError } from '../../planners/errors';
import { createOpenAIPlanner, parseToolArguments } from '../../planners/openai';
import { resetPricingWarnings } from '../../planners/pricing';
import type { PlannerSpec } from '../../common/planner';
import { leaks, observe, turnInput } from './helpers';
import { startOpenAIServer, type OpenAIServer } from '../../testing/openai-server';

const KEY = 'sk-proj-test-0123456789abcdefSECRET';

let server: OpenAIServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
  resetPricingWarnings();
});

function spec(extra: Partial<Extract<PlannerSpec, { kind: 'openai' }>> = {}): PlannerSpec {
  return { kind: 'openai', model: 'gpt-4o-mini', maxTokens: 256, ...extra };
}

/** The built-in `openai` endpoint, moved to the test server by the worker's own OPENAI_BASE_URL. */
function planner(env: NodeJS.ProcessEnv = { OPENAI_API_KEY: KEY }, warn = jest.fn()) {
  return createOpenAIPlanner({ env: { OPENAI_BASE_URL: server?.baseURL, ...env }, maxRetries: 0, warn });
}

test('multi-turn: call → observation → call → finish, with the exact tool messages sent back', async () => {
  server = await startOpenAIServer(
    [
      {
        content: null,
        tool_calls: [{ id: 'call_A', name: 'search', arguments: '{"q":"x"}' }],
        usage: { prompt_tokens: 1000, completion_tokens: 200 },
        model: 'gpt-4o-mini-2024-07-18',
      },
      {
        content: 'Notifying.',
        tool_calls: [{ id: 'call_B', name: 'send_notification', arguments: '{"to":"ann","text":"found 1"}' }],
        usage: { prompt_tokens: 2000, completion_tokens: 100, cached_tokens: 1000 },
      },
      { content: 'Done: ann was notified.', usage: { prompt_tokens: 3000, completion_tokens: 50 } },
    ],
    { apiKey: KEY },
  );
  const p = planner();
  const s = spec({ system: 'You are careful.' });

  const t1 = await p.next(turnInput(s, null));
  // gpt-4o-mini: 0.15 in, 0.6 out, 0.075 cached, per MTok.
  expect(t1.turn).toEqual({
    type: 'call',
    tool: 'search',
    args: { q: 'x' },
    callId: 'call_A',
    usage: { tokens: 1200, costUsd: 0.00027 },
  });

  const t2 = await p.next(turnInput(s, t1.memory, observe(t1, { kind: 'SUCCESS', data: { hits: ['x1'] } })));
  expect(t2.turn).toEqual({
    type: 'call',
    tool: 'send_notification',
    args: { to: 'ann', text: 'found 1' },
    callId: 'call_B',
    usage: { tokens: 2100, costUsd: (1000 * 0.15 + 1000 * 0.075 + 100 * 0.6) / 1e6 },
  });

  const t3 = await p.next(
    turnInput(s, t2.memory, observe(t2, { kind: 'PENDING', code: 'queued', retryAfterMs: 1000 })),
  );
  expect(t3.turn).toEqual({
    type: 'finish',
    ended: 'text',
    finishReason: 'stop',
    summary: 'Done: ann was notified.',
    usage: { tokens: 3050, costUsd: 0.00048 },
  });

  const bodies = server.completionRequests();
  expect(bodies).toHaveLength(3);
  expect(bodies[0]).toMatchObject({
    model: 'gpt-4o-mini',
    max_tokens: 256,
    messages: [
      { role: 'system', content: 'You are careful.' },
      { role: 'user', content: 'Find x and notify ann.' },
    ],
  });
  expect(bodies[0]?.max_completion_tokens).toBeUndefined();
  expect((bodies[0]?.tools as unknown[])[0]).toEqual({
    type: 'function',
    function: {
      name: 'search',
      description: 'Search the index.',
      parameters: {
        type: 'object',
        properties: { q: { type: 'string' }, limit: { type: 'integer', default: 10 } },
        required: ['q'],
        additionalProperties: false,
      },
    },
  });
  expect(bodies[1]?.messages).toEqual([
    { role: 'system', content: 'You are careful.' },
    { role: 'user', content: 'Find x and notify ann.' },
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'call_A', type: 'function', function: { name: 'search', arguments: '{"q":"x"}' } }],
    },
    { role: 'tool', tool_call_id: 'call_A', content: '{"kind":"SUCCESS","data":{"hits":["x1"]}}' },
  ]);
  expect((bodies[2]?.messages as unknown[]).slice(4)).toEqual([
    {
      role: 'assistant',
      content: 'Notifying.',
      tool_calls: [
        {
          id: 'call_B',
          type: 'function',
          function: { name: 'send_notification', arguments: '{"to":"ann","text":"found 1"}' },
        },
      ],
    },
    {
      role: 'tool',
      tool_call_id: 'call_B',
      content: '{"kind":"PENDING","code":"queued","retryAfterMs":1000}',
    },
  ]);
  // The system prompt is sent per request, not stored: memory holds only the conversation.
  expect((t3.memory as { messages: Array<{ role: string }> }).messages.map((m) => m.role)).toEqual([
    'user',
    'assistant',
    'tool',
    'assistant',
    'tool',
    'assistant',
  ]);

  for (const req of server.requests) expect(req.headers.authorization).toBe(`Bearer ${KEY}`);
  for (const req of server.requests) expect(leaks(req.body, KEY)).toBe(false);
  for (const out of [t1, t2, t3]) expect(leaks(out, KEY)).toBe(false);
});

test('parallel tool_calls are handed out one per turn; the next request carries every tool message in order', async () => {
  server = await startOpenAIServer([
    {
      tool_calls: [
        { id: 'call_1', name: 'search', arguments: '{"q":"a"}' },
        { id: 'call_2', name: 'search', arguments: '{"q":"b"}' },
      ],
      usage: { prompt_tokens: 50, completion_tokens: 30 },
    },
    { content: 'both searched' },
  ]);
  const p = planner();
  const s = spec();
  const t1 = await p.next(turnInput(s, null));
  expect(t1.turn).toMatchObject({ type: 'call', callId: 'call_1', args: { q: 'a' }, usage: { tokens: 80 } });
  const t2 = await p.next(turnInput(s, t1.memory, observe(t1, { kind: 'SUCCESS', data: 'A' })));
  expect(t2.turn).toEqual({
    type: 'call',
    tool: 'search',
    args: { q: 'b' },
    callId: 'call_2',
    usage: { tokens: 0, costUsd: 0 },
  });
  expect(server.completionRequests()).toHaveLength(1);
  const t3 = await p.next(turnInput(s, t2.memory, observe(t2, { kind: 'SUCCESS', data: 'B', cached: true })));
  expect(t3.turn).toMatchObject({ type: 'finish', summary: 'both searched' });
  expect((server.completionRequests()[1]?.messages as unknown[]).slice(1)).toEqual([
    {
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: 'call_1', type: 'function', function: { name: 'search', arguments: '{"q":"a"}' } },
        { id: 'call_2', type: 'function', function: { name: 'search', arguments: '{"q":"b"}' } },
      ],
    },
    { role: 'tool', tool_call_id: 'call_1', content: '{"kind":"SUCCESS","data":"A"}' },
    { role: 'tool', tool_call_id: 'call_2', content: '{"kind":"SUCCESS","cached":true,"data":"B"}' },
  ]);
});

test('malformed arguments are passed on as the raw string (the runtime rejects them as invalid_args)', async () => {
  expect(parseToolArguments('{"q": "x"')).toBe('{"q": "x"');
  expect(parseToolArguments('')).toEqual({});
  expect(parseToolArguments(undefined)).toEqual({});
  server = await startOpenAIServer([
    { tool_calls: [{ id: 'call_bad', name: 'search', arguments: '{"q": "x"' }] },
    { tool_calls: [{ id: 'call_good', name: 'search', arguments: '{"q": "x"}' }] },
  ]);
  const p = planner();
  const s = spec();
  const t1 = await p.next(turnInput(s, null));
  expect(t1.turn).toMatchObject({ type: 'call', tool: 'search', args: '{"q": "x"', callId: 'call_bad' });
  const t2 = await p.next(
    turnInput(
      s,
      t1.memory,
      observe(t1, { kind: 'PRECONDITION', code: 'invalid_args', unmet: 'expected object, received string' }),
    ),
  );
  expect(t2.turn).toMatchObject({ type: 'call', args: { q: 'x' }, callId: 'call_good' });
  // The assistant message keeps the model's raw text, as the protocol requires.
  expect((server.completionRequests()[1]?.messages as unknown[]).slice(1)).toEqual([
    {
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: 'call_bad', type: 'function', function: { name: 'search', arguments: '{"q": "x"' } },
      ],
    },
    {
      role: 'tool',
      tool_call_id: 'call_bad',
      content: '{"kind":"PRECONDITION","code":"invalid_args","unmet":"expected object, received string"}',
    },
  ]);
});

test('a server that omits tool-call ids still gets each result paired with its call', async () => {
  server = await startOpenAIServer([
    { tool_calls: [{ id: '', name: 'search', arguments: '{"q":"a"}' }] },
    { content: 'ok' },
  ]);
  const p = planner();
  const s = spec();
  const t1 = await p.next(turnInput(s, null));
  expect(t1.turn).toMatchObject({ type: 'call', callId: 'call_1_0' });
  await p.next(turnInput(s, t1.memory, observe(t1, { kind: 'SUCCESS' })));
  expect((server.completionRequests()[1]?.messages as Array<Record<string, unknown>>)[2]).toEqual({
    role: 'tool',
    tool_call_id: 'call_1_0',
    content: '{"kind":"SUCCESS"}',
  });
});

test('usage: the AGENT_PRICE_TABLE override, and a local model (cost 0, warned once)', async () => {
  server = await startOpenAIServer([
    { content: 'a', usage: { prompt_tokens: 500_000, completion_tokens: 250_000 } },
    { content: 'b', usage: { prompt_tokens: 10, completion_tokens: 10 } },
    { content: 'c', usage: { prompt_tokens: 10, completion_tokens: 10 } },
    { content: 'd', usage: { prompt_tokens: 1_000_000, completion_tokens: 0 } },
  ]);
  const warn = jest.fn();
  const env = {
    OPENAI_API_KEY: KEY,
    AGENT_PRICE_TABLE: '{"gpt-4o-mini": {"inputPerMTok": 2, "outputPerMTok": 4}}',
  };
  const a = await planner(env, warn).next(turnInput(spec(), null));
  expect(a.turn.usage).toEqual({ tokens: 750_000, costUsd: 2 });

  const local = spec({ model: 'Qwen/Qwen2.5-7B-Instruct' });
  const b = await planner({ OPENAI_API_KEY: 'local' }, warn).next(turnInput(local, null));
  const c = await planner({ OPENAI_API_KEY: 'local' }, warn).next(turnInput(local, null));
  expect(b.turn.usage).toEqual({ tokens: 20, costUsd: 0 });
  expect(c.turn.usage).toEqual({ tokens: 20, costUsd: 0 });
  expect(warn).toHaveBeenCalledTimes(1);
  expect(warn.mock.calls[0]?.[0]).toContain('Qwen/Qwen2.5-7B-Instruct');

  // ...and the operator prices the local model (a provider prefix is ignored).
  const priced = {
    OPENAI_API_KEY: 'local',
    AGENT_PRICE_TABLE: '{"qwen2.5-7b-instruct": {"inputPerMTok": 0.05, "outputPerMTok": 0.1}}',
  };
  const d = await planner(priced, warn).next(turnInput(local, null));
  expect(d.turn.usage).toEqual({ tokens: 1_000_000, costUsd: 0.05 });
});

test('a malformed AGENT_PRICE_TABLE is a clear, non-retryable error', async () => {
  server = await startOpenAIServer([{ content: 'never' }]);
  const err = await planner({
    OPENAI_API_KEY: KEY,
    AGENT_PRICE_TABLE: '{"gpt-4o": {"inputPerMTok": -1, "outputPerMTok": 1}}',
  })
    .next(turnInput(spec(), null))
    .catch((e: unknown) => e);
  expect(err).toMatchObject({ name: 'PriceTableError', retryable: false });
  expect((err as Error).message).toContain('AGENT_PRICE_TABLE');
  expect(server.requests).toHaveLength(0);
});

test('a missing key is a clear error naming OPENAI_API_KEY, and no request is made', async () => {
  server = await startOpenAIServer([{ content: 'never' }]);
  const err = await planner({ OPENAI_API_KEY: '  ' })
    .next(turnInput(spec(), null))
    .catch((e: unknown) => e);
  expect(err).toBeInstanceOf(MissingApiKeyError);
  expect((err as Error).message).toContain('OPENAI_API_KEY');
  expect(server.requests).toHaveLength(0);
});

test('key and base URL from process.env; a custom base URL gets max_tokens unless max_completion_tokens is asked for', async () => {
  server = await startOpenAIServer([{ content: 'hi' }, { content: 'hi' }], { apiKey: KEY });
  const saved = { key: process.env.OPENAI_API_KEY, url: process.env.OPENAI_BASE_URL };
  process.env.OPENAI_API_KEY = KEY;
  process.env.OPENAI_BASE_URL = server.baseURL;
  try {
    const out = await createOpenAIPlanner({ maxRetries: 0 }).next(
      turnInput({ kind: 'openai', model: 'gpt-5-mini', maxTokens: 64 }, null),
    );
    expect(out.turn).toMatchObject({ type: 'finish', summary: 'hi' });
    expect(leaks(out, KEY)).toBe(false);
    expect(server.completionRequests()[0]).toMatchObject({ model: 'gpt-5-mini', max_tokens: 64 });
    await createOpenAIPlanner({ maxRetries: 0, maxTokensParam: 'max_completion_tokens' }).next(
      turnInput({ kind: 'openai', model: 'gpt-5-mini', maxTokens: 64 }, null),
    );
    expect(server.completionRequests()[1]).toMatchObject({ max_completion_tokens: 64 });
    expect(server.completionRequests()[1]?.max_tokens).toBeUndefined();
  } finally {
    if (saved.key === undefined) delete process.env.OPENAI_API_KEY;
    else process.env.OPENAI_API_KEY = saved.key;
    if (saved.url === undefined) delete process.env.OPENAI_BASE_URL;
    else process.env.OPENAI_BASE_URL = saved.url;
  }
});

test('401 and 400 become non-retryable errors with the key redacted', async () => {
  server = await startOpenAIServer([
    {
      error: {
        status: 401,
        type: 'invalid_request_error',
        message: `Incorrect API key provided: ${KEY}.`,
        code: 'invalid_api_key',
      },
    },
    { error: { status: 400, type: 'invalid_request_error', message: 'The model `nope` does not exist' } },
  ]);
  const auth = (await planner()
    .next(turnInput(spec(), null))
    .catch((e: unknown) => e)) as PlannerAuthError;
  expect(auth).toBeInstanceOf(PlannerAuthError);
  expect(auth).toMatchObject({ name: 'PlannerAuthError', retryable: false, status: 401 });
  expect(auth.message).not.toContain(KEY);
  expect(auth.stack ?? '').not.toContain(KEY);
  const bad = (await planner()
    .next(turnInput(spec(), null))
    .catch((e: unknown) => e)) as PlannerRequestError;
  expect(bad).toBeInstanceOf(PlannerRequestError);
  expect(bad.message).toContain('does not exist');
});
