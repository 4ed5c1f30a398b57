/**
 * Model endpoints are worker configuration (issue #10): a run names one, it never
 * carries a URL, and a key only goes to the host its endpoint names. Checked through
 * the real SDKs against local protocol servers, with an "attacker" server that must
 * receive nothing at all.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createAnthropicPlanner } from '../../planners/anthropic';
import {
  loadModelEndpoints,
  MODEL_ENDPOINTS_ENV,
  MODEL_ENDPOINTS_FILE_ENV,
  OFFICIAL_BASE_URLS,
  resolveEndpoint,
} from '../../planners/endpoints';
import {
  EndpointConfigError,
  EndpointNotConfiguredError,
  InvalidPlannerSpecError,
} from '../../planners/errors';
import { NO_API_KEY } from '../../planners/llm-planner';
import { createOpenAIPlanner } from '../../planners/openai';
import { NON_RETRYABLE_PLANNER_ERRORS, type PlannerSpec } from '../../common/planner';
import { turnInput } from './helpers';
import { startAnthropicServer } from './servers/anthropic-server';
import { presentedKey, type RunningServer } from '../../testing/http-script';
import { startOpenAIServer } from '../../testing/openai-server';

const WORKER_OPENAI_KEY = 'sk-proj-worker-default-key-SECRET-0123';
const WORKER_ANTHROPIC_KEY = 'sk-ant-api03-worker-default-key-SECRET';
const VLLM_KEY = 'vllm-endpoint-key-0123456789';

const servers: RunningServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});
async function track<S extends RunningServer>(s: Promise<S>): Promise<S> {
  const server = await s;
  servers.push(server);
  return server;
}

const failureOf = (p: Promise<unknown>): Promise<unknown> =>
  p.then(
    () => {
      throw new Error('expected the turn to fail');
    },
    (e: unknown) => e,
  );

describe('a run input cannot choose where the worker sends its keys', () => {
  it.each(['openai', 'anthropic'] as const)(
    '%s: a spec carrying baseURL is refused before any request, and the attacker server receives nothing',
    async (kind) => {
      const attacker =
        kind === 'openai'
          ? await track(startOpenAIServer([{ content: 'stolen' }]))
          : await track(startAnthropicServer([{ content: [{ type: 'text', text: 'stolen' }] }]));
      const env = { OPENAI_API_KEY: WORKER_OPENAI_KEY, ANTHROPIC_API_KEY: WORKER_ANTHROPIC_KEY };
      const planner =
        kind === 'openai'
          ? createOpenAIPlanner({ env, maxRetries: 0 })
          : createAnthropicPlanner({ env, maxRetries: 0 });
      // What an old client, or a raw Temporal start, could still put into the run input.
      const spec = { kind, model: 'm', maxTokens: 16, baseURL: attacker.origin } as unknown as PlannerSpec;
      const err = await failureOf(planner.next(turnInput(spec, null)));
      expect(err).toBeInstanceOf(InvalidPlannerSpecError);
      expect(NON_RETRYABLE_PLANNER_ERRORS).toContain((err as Error).name);
      expect((err as Error).message).toMatch(/planner\.baseURL is not accepted.*planner\.endpoint/);
      expect(attacker.requests).toHaveLength(0);
    },
  );

  it('a run naming an unknown endpoint fails non-retryably, naming the configured ones, and nothing is sent', async () => {
    const server = await track(startOpenAIServer([{ content: 'never' }]));
    const planner = createOpenAIPlanner({
      env: {
        OPENAI_API_KEY: WORKER_OPENAI_KEY,
        VLLM_API_KEY: VLLM_KEY,
        [MODEL_ENDPOINTS_ENV]: JSON.stringify({
          'local-vllm': { provider: 'openai', baseURL: server.baseURL, apiKeyEnv: 'VLLM_API_KEY' },
        }),
      },
      maxRetries: 0,
    });
    const err = await failureOf(
      planner.next(turnInput({ kind: 'openai', model: 'm', maxTokens: 16, endpoint: 'elsewhere' }, null)),
    );
    expect(err).toBeInstanceOf(EndpointNotConfiguredError);
    expect(NON_RETRYABLE_PLANNER_ERRORS).toContain((err as Error).name);
    expect((err as Error).message).toBe(
      'planner endpoint "elsewhere" is not configured on this worker; configured openai endpoints: openai, local-vllm ' +
        `(set ${MODEL_ENDPOINTS_ENV} or ${MODEL_ENDPOINTS_FILE_ENV} on the worker)`,
    );
    expect(server.requests).toHaveLength(0);
  });

  it('an endpoint configured on the worker works, with its own key and never the default one', async () => {
    const server = await track(startOpenAIServer([{ content: 'hello from vLLM' }], { apiKey: VLLM_KEY }));
    const planner = createOpenAIPlanner({
      env: {
        OPENAI_API_KEY: WORKER_OPENAI_KEY,
        OPENAI_ORG_ID: 'org-of-the-openai-account',
        VLLM_API_KEY: VLLM_KEY,
        [MODEL_ENDPOINTS_ENV]: JSON.stringify({
          'local-vllm': { provider: 'openai', baseURL: server.baseURL, apiKeyEnv: 'VLLM_API_KEY' },
        }),
      },
      maxRetries: 0,
      warn: () => {},
    });
    const out = await planner.next(
      turnInput({ kind: 'openai', model: 'qwen', maxTokens: 32, endpoint: 'local-vllm' }, null),
    );
    expect(out.turn).toMatchObject({ type: 'finish', summary: 'hello from vLLM' });
    expect(server.requests).toHaveLength(1);
    expect(presentedKey(server.requests[0]!.headers)).toBe(VLLM_KEY);
    const wire = JSON.stringify(server.requests);
    expect(wire).not.toContain(WORKER_OPENAI_KEY);
    // The OpenAI account's organisation belongs with OPENAI_API_KEY only.
    expect(wire).not.toContain('org-of-the-openai-account');
    // A custom endpoint gets `max_tokens` (what compatible servers know).
    expect(server.completionRequests()[0]).toMatchObject({ max_tokens: 32 });
  });

  it('an endpoint from AGENT_MODEL_ENDPOINTS_FILE works; one without apiKeyEnv sends no secret at all', async () => {
    const server = await track(
      startAnthropicServer([{ content: [{ type: 'text', text: 'local claude' }] }], { apiKey: NO_API_KEY }),
    );
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'alg-endpoints-')), 'endpoints.json');
    fs.writeFileSync(
      file,
      JSON.stringify({ 'claude-proxy': { provider: 'anthropic', baseURL: server.origin } }),
    );
    const planner = createAnthropicPlanner({
      env: { ANTHROPIC_API_KEY: WORKER_ANTHROPIC_KEY, [MODEL_ENDPOINTS_FILE_ENV]: file },
      maxRetries: 0,
    });
    const out = await planner.next(
      turnInput(
        { kind: 'anthropic', model: 'claude-sonnet-4-6', maxTokens: 32, endpoint: 'claude-proxy' },
        null,
      ),
    );
    expect(out.turn).toMatchObject({ type: 'finish', summary: 'local claude' });
    expect(presentedKey(server.requests[0]!.headers)).toBe(NO_API_KEY);
    expect(JSON.stringify(server.requests)).not.toContain(WORKER_ANTHROPIC_KEY);
  });

  it('an endpoint of the other provider is refused naming the right ones', async () => {
    const endpoints = loadModelEndpoints({});
    expect(() => resolveEndpoint('openai', 'anthropic', endpoints)).toThrow(
      /"anthropic" is a anthropic endpoint, but the run's planner is openai; configured openai endpoints: openai/,
    );
  });
});

describe('loadModelEndpoints', () => {
  it('has the official endpoints by default, moved only by the worker env', () => {
    expect(loadModelEndpoints({})).toEqual({
      anthropic: {
        provider: 'anthropic',
        baseURL: OFFICIAL_BASE_URLS.anthropic,
        apiKeyEnv: 'ANTHROPIC_API_KEY',
      },
      openai: { provider: 'openai', baseURL: OFFICIAL_BASE_URLS.openai, apiKeyEnv: 'OPENAI_API_KEY' },
    });
    expect(loadModelEndpoints({ OPENAI_BASE_URL: 'http://gw:4000/v1' }).openai?.baseURL).toBe(
      'http://gw:4000/v1',
    );
    expect(resolveEndpoint('openai', undefined, loadModelEndpoints({})).official).toBe(true);
  });

  it('refuses to send a default key to any other host', () => {
    const env = {
      [MODEL_ENDPOINTS_ENV]: JSON.stringify({
        sneaky: { provider: 'openai', baseURL: 'http://10.0.0.5/v1', apiKeyEnv: 'OPENAI_API_KEY' },
      }),
    };
    expect(() => loadModelEndpoints(env)).toThrow(EndpointConfigError);
    expect(() => loadModelEndpoints(env)).toThrow(
      'endpoint "sneaky" would send OPENAI_API_KEY to http://10.0.0.5/v1, but that key only goes to https://api.openai.com/v1',
    );
    // The other provider's key is refused too, even towards its own official host.
    expect(() =>
      loadModelEndpoints(
        {},
        { x: { provider: 'openai', baseURL: OFFICIAL_BASE_URLS.anthropic, apiKeyEnv: 'ANTHROPIC_API_KEY' } },
      ),
    ).toThrow(/would send ANTHROPIC_API_KEY/);
    // The same key to its own default base URL (trailing slash aside) is fine.
    expect(
      loadModelEndpoints(
        {},
        { o: { provider: 'openai', baseURL: 'https://api.openai.com/v1/', apiKeyEnv: 'OPENAI_API_KEY' } },
      ).o,
    ).toBeDefined();
  });

  it.each([
    ['not JSON', '{', /AGENT_MODEL_ENDPOINTS is not valid JSON/],
    ['an array', '[]', /must be a JSON object/],
    [
      'a bad name',
      '{"__proto__": {"provider": "openai", "baseURL": "http://h/v1"}}',
      /endpoint name "__proto__"/,
    ],
    ['a bad provider', '{"x": {"provider": "cohere", "baseURL": "http://h"}}', /endpoint "x": provider/],
    ['a non-http URL', '{"x": {"provider": "openai", "baseURL": "file:///etc/passwd"}}', /http: or https:/],
    [
      'credentials in the URL',
      '{"x": {"provider": "openai", "baseURL": "http://u:p@h/v1"}}',
      /must not carry credentials/,
    ],
    [
      'an unknown field',
      '{"x": {"provider": "openai", "baseURL": "http://h", "apiKey": "sk-1"}}',
      /endpoint "x"/,
    ],
    [
      'a bad key variable name',
      '{"x": {"provider": "openai", "baseURL": "http://h", "apiKeyEnv": "a b"}}',
      /apiKeyEnv/,
    ],
  ])('refuses %s with a clear EndpointConfigError', (_what, json, message) => {
    const load = () => loadModelEndpoints({ [MODEL_ENDPOINTS_ENV]: json });
    expect(load).toThrow(EndpointConfigError);
    expect(load).toThrow(message);
  });

  it('an unreadable endpoints file is a clear error', () => {
    expect(() => loadModelEndpoints({ [MODEL_ENDPOINTS_FILE_ENV]: '/nonexistent/endpoints.json' })).toThrow(
      /AGENT_MODEL_ENDPOINTS_FILE: cannot read \/nonexistent\/endpoints.json/,
    );
  });

  it('finds own endpoints only: "constructor" or "toString" is not configured', () => {
    const endpoints = loadModelEndpoints({});
    for (const name of ['constructor', 'toString', 'hasOwnProperty']) {
      expect(() => resolveEndpoint('openai', name, endpoints)).toThrow(EndpointNotConfiguredError);
    }
  });
});
