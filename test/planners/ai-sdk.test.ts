/**
 * The AI SDK planner (issue 20) through the real `ai` package and its provider packages
 * against the local servers that speak each protocol (the same ones the hand-written
 * planners are tested against): OpenAI Chat Completions (`@ai-sdk/openai` `.chat`), the
 * Anthropic Messages API (`@ai-sdk/anthropic`) and an OpenAI-compatible server
 * (`@ai-sdk/openai-compatible`). Where the hand-written planner answers the same script,
 * both are run and their turns compared.
 */
import { createAiSdkPlanner } from '../../planners/ai-sdk';
import { createAnthropicPlanner } from '../../planners/anthropic';
import { createOpenAIPlanner } from '../../planners/openai';
import { MODEL_ENDPOINTS_ENV } from '../../planners/endpoints';
import {
  ContextExhaustedError,
  EndpointConfigError,
  EndpointNotConfiguredError,
  PlannerAuthError,
  PlannerUnavailableError,
} from '../../planners/errors';
import { resetPricingWarnings } from '../../planners/pricing';
import type { Planner, PlannerOutput, PlannerSpec } from '../../common/planner';
import { leaks, observe, turnInput } from './helpers';
import { startOpenAIServer, type OpenAIScript } from '../../testing/openai-server';
import { startAnthropicServer, type AnthropicScript } from './servers/anthropic-server';
import type { RunningServer } from '../../testing/http-script';

const KEY = 'sk-proj-aisdk-test-0123456789abcdefSECRET';
const KEY_ENV = 'LOCAL_MODEL_KEY';

const servers: RunningServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
  resetPricingWarnings();
});

function envWith(endpoints: Record<string, unknown>, key: string | undefined = KEY): NodeJS.ProcessEnv {
  return { ...(key ? { [KEY_ENV]: key } : {}), [MODEL_ENDPOINTS_ENV]: JSON.stringify(endpoints) };
}

function aiSdk(env: NodeJS.ProcessEnv): Planner {
  return createAiSdkPlanner({ env, maxRetries: 0, warn: jest.fn() });
}

function spec(endpoint: string, extra: Record<string, unknown> = {}): PlannerSpec {
  return { kind: 'ai-sdk', endpoint, model: 'gpt-4o-mini', maxTokens: 256, ...extra } as PlannerSpec;
}

/** Drives a planner through `observations` (one per call it returns) until it finishes. */
async function drive(p: Planner, s: PlannerSpec, results: ReadonlyArray<object>): Promise<PlannerOutput[]> {
  const turns: PlannerOutput[] = [];
  let memory: unknown = null;
  let observation = null;
  for (let i = 0; i <= results.length; i++) {
    const out = await p.next(turnInput(s, memory, observation));
    turns.push(out);
    if (out.turn.type !== 'call') break;
    memory = out.memory;
    observation = observe(out, (results[i] ?? { kind: 'SUCCESS', data: null }) as never);
  }
  return turns;
}

const OPENAI_SCRIPT: OpenAIScript = [
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
];
const RESULTS = [
  { kind: 'SUCCESS', data: { hits: ['x1'] } },
  { kind: 'PENDING', code: 'queued', retryAfterMs: 1000 },
];

describe('the AI SDK planner, openai endpoint (Chat Completions through @ai-sdk/openai .chat)', () => {
  it('gives the same turns, usage and price as the OpenAI planner for the same model replies', async () => {
    const viaSdk = await startOpenAIServer(OPENAI_SCRIPT, { apiKey: KEY });
    const viaOwn = await startOpenAIServer(OPENAI_SCRIPT, { apiKey: KEY });
    servers.push(viaSdk, viaOwn);
    const env = envWith({
      sdk: { provider: 'openai', baseURL: viaSdk.baseURL, apiKeyEnv: KEY_ENV },
      own: { provider: 'openai', baseURL: viaOwn.baseURL, apiKeyEnv: KEY_ENV },
    });
    const system = { system: 'You are careful.' };
    const sdkTurns = await drive(aiSdk(env), spec('sdk', system), RESULTS);
    const ownTurns = await drive(
      createOpenAIPlanner({ env, maxRetries: 0, warn: jest.fn() }),
      { kind: 'openai', model: 'gpt-4o-mini', maxTokens: 256, endpoint: 'own', ...system },
      RESULTS,
    );
    expect(sdkTurns.map((t) => t.turn)).toEqual(ownTurns.map((t) => t.turn));
    expect(sdkTurns.map((t) => t.turn)).toEqual([
      {
        type: 'call',
        tool: 'search',
        args: { q: 'x' },
        callId: 'call_A',
        usage: { tokens: 1200, costUsd: 0.00027 },
      },
      {
        type: 'call',
        tool: 'send_notification',
        args: { to: 'ann', text: 'found 1' },
        callId: 'call_B',
        usage: { tokens: 2100, costUsd: (1000 * 0.15 + 1000 * 0.075 + 100 * 0.6) / 1e6 },
      },
      {
        type: 'finish',
        summary: 'Done: ann was notified.',
        usage: { tokens: 3050, costUsd: 0.00048 },
        ended: 'text',
        finishReason: 'stop',
      },
    ]);
    // Three requests each, through /v1/chat/completions (not the Responses API), with the key.
    expect(viaSdk.completionRequests()).toHaveLength(3);
    expect(viaSdk.requests.every((r) => r.path === '/v1/chat/completions')).toBe(true);
    expect(viaSdk.requests.every((r) => r.headers.authorization === `Bearer ${KEY}`)).toBe(true);
    // The conversation the model sees is the one the OpenAI planner sends (system, tool messages).
    const sent = viaSdk.completionRequests()[2]!.messages as Array<Record<string, unknown>>;
    expect(sent.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'assistant', 'tool']);
    expect(sent[3]).toEqual({
      role: 'tool',
      tool_call_id: 'call_A',
      content: '{"kind":"SUCCESS","data":{"hits":["x1"]}}',
    });
    expect(viaSdk.completionRequests()[0]).toMatchObject({ model: 'gpt-4o-mini', max_tokens: 256 });
    expect((viaSdk.completionRequests()[0]!.tools as unknown[])[0]).toMatchObject({
      type: 'function',
      function: { name: 'search', parameters: { type: 'object', required: ['q'] } },
    });
    // The key is in no turn and no memory.
    expect(sdkTurns.some((t) => leaks(t, KEY))).toBe(false);
  });

  it('hands out parallel calls one per turn, and passes arguments that are not JSON on as their raw text', async () => {
    const server = await startOpenAIServer([
      {
        tool_calls: [
          { id: 'c1', name: 'search', arguments: '{"q":"a"}' },
          { id: 'c2', name: 'search', arguments: '{"q": broken' },
        ],
      },
      { content: 'ok' },
    ]);
    servers.push(server);
    const p = aiSdk(envWith({ local: { provider: 'openai', baseURL: server.baseURL } }));
    const turns = await drive(p, spec('local'), [
      { kind: 'SUCCESS', data: 1 },
      { kind: 'PRECONDITION', code: 'invalid_args' },
    ]);
    expect(turns.map((t) => t.turn.type === 'call' && [t.turn.callId, t.turn.args])).toEqual([
      ['c1', { q: 'a' }],
      ['c2', '{"q": broken'],
      false,
    ]);
    // Two requests: the second call came from the queue, and both results went back together.
    expect(server.completionRequests()).toHaveLength(2);
    const tools = (server.completionRequests()[1]!.messages as Array<Record<string, unknown>>).filter(
      (m) => m.role === 'tool',
    );
    expect(tools.map((m) => m.tool_call_id)).toEqual(['c1', 'c2']);
    // A server without a key configured gets the placeholder, never a worker key.
    expect(server.requests[0]!.headers.authorization).toBe('Bearer no-api-key');
  });

  it('retries once compacted tighter after context_length_exceeded, then stops context_exhausted', async () => {
    const refusal = {
      error: {
        status: 400,
        type: 'invalid_request_error',
        code: 'context_length_exceeded',
        message: "This model's maximum context length is 8192 tokens.",
      },
    };
    const server = await startOpenAIServer([refusal, { content: 'fits now' }, refusal, refusal]);
    servers.push(server);
    const p = aiSdk(envWith({ local: { provider: 'openai', baseURL: server.baseURL } }));
    const out = await p.next(turnInput(spec('local', { contextTokens: 8192 }), null));
    expect(out.turn).toMatchObject({ type: 'finish', summary: 'fits now' });
    expect(server.completionRequests()).toHaveLength(2);
    await expect(p.next(turnInput(spec('local', { contextTokens: 8192 }), null))).rejects.toThrow(
      ContextExhaustedError,
    );
    expect(server.completionRequests()).toHaveLength(4);
  });

  it('maps 401 to a PlannerAuthError with the key redacted, and 429 to a retryable error with retry-after', async () => {
    const server = await startOpenAIServer([
      {
        error: { status: 401, type: 'invalid_request_error', message: `Incorrect API key provided: ${KEY}` },
      },
      {
        error: {
          status: 429,
          type: 'rate_limit_error',
          message: 'slow down',
          headers: { 'retry-after': '7' },
        },
      },
    ]);
    servers.push(server);
    const p = aiSdk(envWith({ local: { provider: 'openai', baseURL: server.baseURL, apiKeyEnv: KEY_ENV } }));
    const auth = await p.next(turnInput(spec('local'), null)).catch((e: unknown) => e);
    expect(auth).toBeInstanceOf(PlannerAuthError);
    expect((auth as PlannerAuthError).status).toBe(401);
    expect((auth as Error).message).toMatch(/^AI SDK API 401 failed \(request req_test_401\)/);
    expect(JSON.stringify({ m: (auth as Error).message, s: (auth as Error).stack })).not.toContain(KEY);
    const limited = await p.next(turnInput(spec('local'), null)).catch((e: unknown) => e);
    expect(limited).toBeInstanceOf(PlannerUnavailableError);
    expect(limited).toMatchObject({ status: 429, retryAfterMs: 7000, retryable: true });
  });
});

describe('the AI SDK planner on the built-in openai endpoint', () => {
  it('sends OPENAI_API_KEY with the organisation and project headers there, and only there', async () => {
    const server = await startOpenAIServer([{ content: 'one' }, { content: 'two' }], { apiKey: KEY });
    servers.push(server);
    const env: NodeJS.ProcessEnv = {
      OPENAI_BASE_URL: server.baseURL,
      OPENAI_API_KEY: KEY,
      OPENAI_ORG_ID: 'org-test',
      OPENAI_PROJECT_ID: 'proj-test',
      [KEY_ENV]: KEY,
      [MODEL_ENDPOINTS_ENV]: JSON.stringify({
        other: { provider: 'openai', baseURL: server.baseURL, apiKeyEnv: KEY_ENV },
      }),
    };
    await aiSdk(env).next(turnInput(spec('openai'), null));
    await aiSdk(env).next(turnInput(spec('other'), null));
    const [own, other] = server.requests;
    expect(own!.headers).toMatchObject({ 'openai-organization': 'org-test', 'openai-project': 'proj-test' });
    expect(other!.headers['openai-organization']).toBeUndefined();
    expect(other!.headers['openai-project']).toBeUndefined();
  });
});

describe('the AI SDK planner, anthropic endpoint (@ai-sdk/anthropic)', () => {
  const script: AnthropicScript = [
    {
      content: [
        { type: 'text', text: 'Two things at once.' },
        { type: 'tool_use', id: 'toolu_1', name: 'search', input: { q: 'a' } },
        { type: 'tool_use', id: 'toolu_2', name: 'send_notification', input: { to: 'ann', text: 'hi' } },
      ],
      usage: {
        input_tokens: 100,
        output_tokens: 50,
        cache_read_input_tokens: 1000,
        cache_creation_input_tokens: 200,
      },
    },
    { content: [{ type: 'text', text: 'Both done.' }], usage: { input_tokens: 300, output_tokens: 20 } },
  ];
  const results = [
    { kind: 'SUCCESS', data: ['a1'] },
    { kind: 'FATAL', code: 'refused' },
  ];

  it('gives the same turns, usage and price as the Anthropic planner, with is_error and one user message of results', async () => {
    const viaSdk = await startAnthropicServer(script, { apiKey: KEY, nullCitations: false });
    const viaOwn = await startAnthropicServer(script, { apiKey: KEY, nullCitations: false });
    servers.push(viaSdk, viaOwn);
    const env = envWith({
      sdk: { provider: 'anthropic', baseURL: viaSdk.origin, apiKeyEnv: KEY_ENV },
      own: { provider: 'anthropic', baseURL: viaOwn.origin, apiKeyEnv: KEY_ENV },
    });
    const model = { model: 'claude-sonnet-4-6' };
    const sdkTurns = await drive(aiSdk(env), spec('sdk', model), results);
    const ownTurns = await drive(
      createAnthropicPlanner({ env, maxRetries: 0, warn: jest.fn() }),
      { kind: 'anthropic', maxTokens: 256, endpoint: 'own', ...model },
      results,
    );
    // Each wire names its finish reason in its own words (`stop` here, `end_turn` for Messages).
    const plain = (t: { turn: object }) => ({ ...t.turn, finishReason: undefined });
    expect(sdkTurns.map(plain)).toEqual(ownTurns.map(plain));
    expect(sdkTurns.map((t) => t.turn.type)).toEqual(['call', 'call', 'finish']);
    // Usage: every input token (cached or not) counted, priced at the cache rates.
    expect(sdkTurns[0]!.turn.usage.tokens).toBe(1350);
    expect(sdkTurns[0]!.turn.usage.costUsd).toBeGreaterThan(0);
    expect(sdkTurns[1]!.turn.usage).toEqual({ tokens: 0, costUsd: 0 });
    // Two requests; the second carries both results in one user message, the refused one as is_error.
    expect(viaSdk.messageRequests()).toHaveLength(2);
    expect(viaSdk.requests.every((r) => r.path === '/v1/messages' && r.headers['x-api-key'] === KEY)).toBe(
      true,
    );
    const messages = viaSdk.messageRequests()[1]!.messages as Array<{ role: string; content: unknown }>;
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(messages[2]!.content).toEqual([
      expect.objectContaining({ type: 'tool_result', tool_use_id: 'toolu_1' }),
      expect.objectContaining({ type: 'tool_result', tool_use_id: 'toolu_2', is_error: true }),
    ]);
    expect(viaSdk.messageRequests()[0]).toMatchObject({ model: 'claude-sonnet-4-6', max_tokens: 256 });
    expect(sdkTurns.some((t) => leaks(t, KEY))).toBe(false);
  });

  it('retries a "prompt is too long" refusal once, compacted tighter', async () => {
    const server = await startAnthropicServer(
      [
        {
          error: { status: 400, type: 'invalid_request_error', message: 'prompt is too long: 210000 tokens' },
        },
        { content: [{ type: 'text', text: 'fits' }] },
      ],
      { nullCitations: false },
    );
    servers.push(server);
    const p = aiSdk(envWith({ c: { provider: 'anthropic', baseURL: server.origin } }));
    const out = await p.next(turnInput(spec('c', { model: 'claude-sonnet-4-6' }), null));
    expect(out.turn).toMatchObject({ type: 'finish', summary: 'fits' });
    expect(server.messageRequests()).toHaveLength(2);
  });

  it('reads a reply whose text block has citations: null (a gateway form; ai 6 refused it, ai 7 reads it)', async () => {
    const reply: AnthropicScript = [{ content: [{ type: 'text', text: 'via a gateway' }] }];
    const gateway = await startAnthropicServer(reply);
    const gateway2 = await startAnthropicServer(reply);
    servers.push(gateway, gateway2);
    const viaSdk = await aiSdk(envWith({ gw: { provider: 'anthropic', baseURL: gateway.origin } })).next(
      turnInput(spec('gw', { model: 'claude-sonnet-4-6' }), null),
    );
    expect(viaSdk.turn).toMatchObject({ type: 'finish', summary: 'via a gateway' });
    expect(gateway.messageRequests()).toHaveLength(1);
    const own = createAnthropicPlanner({
      env: envWith({ gw: { provider: 'anthropic', baseURL: gateway2.origin } }),
      maxRetries: 0,
      warn: jest.fn(),
    });
    const ok = await own.next(
      turnInput({ kind: 'anthropic', model: 'claude-sonnet-4-6', maxTokens: 64, endpoint: 'gw' }, null),
    );
    expect(ok.turn).toMatchObject({ type: 'finish', summary: 'via a gateway' });
  });
});

describe('the AI SDK planner, openai-compatible endpoint (@ai-sdk/openai-compatible)', () => {
  it('completes through /v1/chat/completions, with no Authorization header when no key is configured', async () => {
    const server = await startOpenAIServer([
      { tool_calls: [{ id: 'l1', name: 'search', arguments: '{"q":"local"}' }] },
      { content: 'local answer' },
    ]);
    servers.push(server);
    const p = aiSdk(envWith({ vllm: { provider: 'openai-compatible', baseURL: server.baseURL } }));
    const turns = await drive(p, spec('vllm', { model: 'qwen2.5-7b' }), [{ kind: 'SUCCESS', data: 'hit' }]);
    expect(turns.map((t) => t.turn.type)).toEqual(['call', 'finish']);
    expect(turns[0]!.turn).toMatchObject({ tool: 'search', args: { q: 'local' }, callId: 'l1' });
    expect(turns[1]!.turn).toMatchObject({ summary: 'local answer', usage: { tokens: 15, costUsd: 0 } });
    expect(server.completionRequests()).toHaveLength(2);
    expect(server.requests.map((r) => r.headers.authorization)).toEqual([undefined, undefined]);
  });

  it('sends the key of an endpoint that names one', async () => {
    const server = await startOpenAIServer([{ content: 'ok' }], { apiKey: KEY });
    servers.push(server);
    const p = aiSdk(
      envWith({ vllm: { provider: 'openai-compatible', baseURL: server.baseURL, apiKeyEnv: KEY_ENV } }),
    );
    expect((await p.next(turnInput(spec('vllm'), null))).turn).toMatchObject({ summary: 'ok' });
  });
});

describe('the AI SDK planner: bad input', () => {
  it('an endpoint of an unknown provider is a configuration error naming it; nothing is sent', async () => {
    const server = await startOpenAIServer([{ content: 'unused' }]);
    servers.push(server);
    const p = aiSdk(envWith({ g: { provider: 'gemini', baseURL: server.baseURL } }));
    const err = await p.next(turnInput(spec('g'), null)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EndpointConfigError);
    expect((err as Error).message).toMatch(
      /endpoint "g": provider: provider "gemini" is not a known provider \(known: anthropic, openai, openai-compatible\)/,
    );
    expect(server.requests).toHaveLength(0);
  });

  it('an unknown endpoint names the configured ones of every provider', async () => {
    const p = aiSdk(envWith({ a: { provider: 'openai-compatible', baseURL: 'http://127.0.0.1:9/v1' } }));
    const err = await p.next(turnInput(spec('nowhere'), null)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EndpointNotConfiguredError);
    expect((err as Error).message).toMatch(
      /planner endpoint "nowhere" is not configured on this worker; configured anthropic\/openai\/openai-compatible endpoints: anthropic, openai, a/,
    );
  });

  it('the spec needs an endpoint and a model, and takes no URL', async () => {
    const p = aiSdk({});
    await expect(p.next(turnInput({ kind: 'ai-sdk', model: 'm' } as never, null))).rejects.toThrow(
      /planner\.endpoint/,
    );
    await expect(p.next(turnInput({ kind: 'ai-sdk', endpoint: 'e' } as never, null))).rejects.toThrow(
      /planner\.model/,
    );
    await expect(
      p.next(turnInput({ kind: 'ai-sdk', endpoint: 'e', model: 'm', baseURL: 'http://evil' } as never, null)),
    ).rejects.toThrow(/planner\.baseURL is not accepted/);
  });

  it('the hand-written planners do not take an openai-compatible endpoint', async () => {
    const p = createOpenAIPlanner({
      env: envWith({ c: { provider: 'openai-compatible', baseURL: 'http://127.0.0.1:9/v1' } }),
    });
    await expect(
      p.next(turnInput({ kind: 'openai', model: 'm', maxTokens: 8, endpoint: 'c' }, null)),
    ).rejects.toThrow(/"c" is a openai-compatible endpoint, but the run's planner is openai/);
  });

  it('the health check passes when the endpoint answers and says why when it does not', async () => {
    const server = await startAnthropicServer([]);
    servers.push(server);
    const env = envWith({
      up: { provider: 'anthropic', baseURL: server.origin, apiKeyEnv: KEY_ENV },
      down: { provider: 'openai-compatible', baseURL: 'http://127.0.0.1:9/v1' },
    });
    const p = aiSdk(env);
    expect(await p.health?.(spec('up'))).toBeNull();
    expect(await p.health?.(spec('down'))).toMatch(/fetch failed|ECONNREFUSED/);
    expect(await aiSdk(envWith({}, '')).health?.(spec('up'))).toMatch(/not configured/);
    for (const r of server.requests) expect(JSON.stringify(r)).not.toContain(KEY);
  });
});
