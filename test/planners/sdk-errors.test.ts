/**
 * The one SDK error wrapper, driven through the real `@anthropic-ai/sdk` and `openai`
 * clients against the local protocol servers: every HTTP status class, a network error,
 * a timeout and an activity cancellation end as the right planner error, with the key
 * scrubbed from the message.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Anthropic from '@anthropic-ai/sdk';
import { CancelledFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import OpenAI from 'openai';
import { createAiSdkPlanner } from '../../planners/ai-sdk';
import { createAnthropicPlanner } from '../../planners/anthropic';
import type { EndpointProvider } from '../../planners/endpoints';
import {
  PlannerAuthError,
  PlannerError,
  PlannerRequestError,
  PlannerUnavailableError,
} from '../../planners/errors';
import { createOpenAIPlanner } from '../../planners/openai';
import { failureToThrow, parseRetryAfter, wrapSdkError } from '../../planners/sdk-errors';
import type { Planner, PlannerSpec } from '../../common/planner';
import { turnInput } from './helpers';
import { startAnthropicServer } from './servers/anthropic-server';
import type { RunningServer } from '../../testing/http-script';
import { startOpenAIServer } from '../../testing/openai-server';

const KEY = 'sk-test-wrapper-0123456789SECRET';

interface Provider {
  /** A server whose only reply is an error of `status` (its message quotes the key). */
  failing(status: number, headers?: Record<string, string>): Promise<RunningServer & { baseURL: string }>;
  /** A planner whose `test-server` endpoint (configured in code, with a key of its own) is `baseURL`. */
  planner(baseURL: string, opts?: { timeoutMs?: number }): Planner;
  spec: PlannerSpec;
  /** The first word of its error messages. */
  display: string;
}

/** The AI SDK planner on an endpoint of `provider`, against that protocol's failing server. */
function aiSdk(provider: EndpointProvider, failing: Provider['failing']): Provider {
  return {
    failing,
    planner: (baseURL, opts) =>
      createAiSdkPlanner({
        env: { TEST_LLM_KEY: KEY },
        endpoints: { 'test-server': { provider, baseURL, apiKeyEnv: 'TEST_LLM_KEY' } },
        maxRetries: 0,
        ...opts,
      }),
    spec: { kind: 'ai-sdk', model: 'some-model', maxTokens: 16, endpoint: 'test-server' },
    display: 'AI SDK',
  };
}

const providers: Record<string, Provider> = {
  anthropic: {
    async failing(status, headers) {
      const s = await startAnthropicServer([
        { error: { status, type: 'api_error', message: `failed for x-api-key ${KEY}`, headers } },
      ]);
      return { ...s, baseURL: s.origin };
    },
    planner: (baseURL, opts) =>
      createAnthropicPlanner({
        env: { TEST_LLM_KEY: KEY },
        endpoints: { 'test-server': { provider: 'anthropic', baseURL, apiKeyEnv: 'TEST_LLM_KEY' } },
        maxRetries: 0,
        ...opts,
      }),
    spec: { kind: 'anthropic', model: 'claude-haiku-4-5', maxTokens: 16, endpoint: 'test-server' },
    display: 'Anthropic',
  },
  openai: {
    async failing(status, headers) {
      return startOpenAIServer([
        { error: { status, type: 'server_error', message: `failed for key ${KEY}`, headers } },
      ]);
    },
    planner: (baseURL, opts) =>
      createOpenAIPlanner({
        env: { TEST_LLM_KEY: KEY },
        endpoints: { 'test-server': { provider: 'openai', baseURL, apiKeyEnv: 'TEST_LLM_KEY' } },
        maxRetries: 0,
        ...opts,
      }),
    spec: { kind: 'openai', model: 'gpt-4o-mini', maxTokens: 16, endpoint: 'test-server' },
    display: 'OpenAI',
  },
};
// The AI SDK planner maps the same failures to the same planner errors on each protocol.
providers['ai-sdk (openai endpoint)'] = aiSdk('openai', providers.openai!.failing);
providers['ai-sdk (openai-compatible endpoint)'] = aiSdk('openai-compatible', providers.openai!.failing);
providers['ai-sdk (anthropic endpoint)'] = aiSdk('anthropic', providers.anthropic!.failing);

const servers: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function failureOf(p: Provider, baseURL: string, opts?: { timeoutMs?: number }): Promise<unknown> {
  return p
    .planner(baseURL, opts)
    .next(turnInput(p.spec, null))
    .then(
      () => {
        throw new Error('expected the turn to fail');
      },
      (err: unknown) => err,
    );
}

/** A server that accepts connections and never answers. */
async function silentServer(): Promise<{ baseURL: string; close(): Promise<void> }> {
  const server: Server = createServer(() => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const STATUS_TABLE: Array<[number, new (...args: never[]) => PlannerError, boolean]> = [
  [400, PlannerRequestError, false],
  [401, PlannerAuthError, false],
  [403, PlannerAuthError, false],
  [404, PlannerRequestError, false],
  [422, PlannerRequestError, false],
  [408, PlannerUnavailableError, true],
  [409, PlannerUnavailableError, true],
  [429, PlannerUnavailableError, true],
  [500, PlannerUnavailableError, true],
  [503, PlannerUnavailableError, true],
  [529, PlannerUnavailableError, true],
];

describe.each(Object.entries(providers))('wrapSdkError through the %s SDK', (_name, provider) => {
  it.each(STATUS_TABLE)(
    'maps %i to %p (retryable: %p), key scrubbed',
    async (status, errorClass, retryable) => {
      const server = await provider.failing(status);
      servers.push(server);
      const err = (await failureOf(provider, server.baseURL)) as PlannerError & { status: number | null };
      expect(err).toBeInstanceOf(errorClass);
      expect(err).toMatchObject({ retryable, status });
      expect(err.message).toMatch(
        new RegExp(`^${provider.display} API ${status} failed \\(request req_test_${status}\\): `),
      );
      expect(err.message).not.toContain(KEY);
      expect(err.stack ?? '').not.toContain(KEY);
      expect(err.cause).toBeUndefined();
    },
  );

  it('reads retry-after into retryAfterMs', async () => {
    const server = await provider.failing(503, { 'retry-after': '2' });
    servers.push(server);
    expect(await failureOf(provider, server.baseURL)).toMatchObject({ status: 503, retryAfterMs: 2000 });
  });

  it('maps a refused connection to a retryable PlannerUnavailableError without a status', async () => {
    const server = await silentServer();
    await server.close();
    const err = await failureOf(provider, server.baseURL);
    expect(err).toBeInstanceOf(PlannerUnavailableError);
    expect(err).toMatchObject({ status: null, retryAfterMs: null, retryable: true });
  });

  it('maps a timeout to a retryable PlannerUnavailableError', async () => {
    const server = await silentServer();
    servers.push(server);
    const err = await failureOf(provider, server.baseURL, { timeoutMs: 100 });
    expect(err).toBeInstanceOf(PlannerUnavailableError);
    expect(err).toMatchObject({ status: null });
  });

  it("rethrows the activity's cancellation, not a planner error, when the activity is cancelled mid-request", async () => {
    const server = await silentServer();
    servers.push(server);
    const env = new MockActivityEnvironment();
    const turn = env.run(() => provider.planner(server.baseURL).next(turnInput(provider.spec, null)));
    setTimeout(() => env.cancel(), 50);
    const err = await turn.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CancelledFailure);
    expect(err).not.toBeInstanceOf(PlannerError);
  });
});

describe('wrapSdkError without a response', () => {
  it('maps an SDK abort to PlannerUnavailableError', () => {
    const err = wrapSdkError('OpenAI', OpenAI, new OpenAI.APIUserAbortError(), [KEY]);
    expect(err).toBeInstanceOf(PlannerUnavailableError);
    expect(err.message).toBe('OpenAI API request failed: request aborted');
  });

  it('maps anything that is not an API error to a non-retryable PlannerRequestError, scrubbed', () => {
    const err = wrapSdkError('Anthropic', Anthropic, new TypeError(`bad option apiKey=${KEY}`), [KEY]);
    expect(err).toBeInstanceOf(PlannerRequestError);
    expect(err).toMatchObject({ status: null, retryable: false });
    expect(err.message).toBe('Anthropic client failed: TypeError: bad option apiKey=[REDACTED]');
    expect(wrapSdkError('Anthropic', Anthropic, 'a string', []).message).toBe(
      'Anthropic client failed: a string',
    );
  });
});

describe('parseRetryAfter', () => {
  it('reads delay-seconds and HTTP dates, and nothing else', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfter('7', now)).toBe(7000);
    expect(parseRetryAfter('1.5', now)).toBe(1500);
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:00:03 GMT', now)).toBe(3000);
    expect(parseRetryAfter('Wed, 31 Dec 2025 23:59:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeNull();
    expect(parseRetryAfter(null, now)).toBeNull();
  });
});

describe('failureToThrow', () => {
  it('prefers the cancellation reason of an aborted signal over the wrapped error', () => {
    const controller = new AbortController();
    const wrap = () => new PlannerRequestError('wrapped', null);
    expect(failureToThrow(new Error('x'), controller.signal, wrap)).toBeInstanceOf(PlannerRequestError);
    expect(failureToThrow(new Error('x'), undefined, wrap)).toBeInstanceOf(PlannerRequestError);
    const reason = new CancelledFailure('CANCELLED');
    controller.abort(reason);
    expect(failureToThrow(new Error('x'), controller.signal, wrap)).toBe(reason);
  });
});
