/**
 * Every served token counted (issue 40), durable, through the official OpenAI SDK against a
 * local Chat Completions server that answers slowly (2 s a reply) and cuts a reply off at the
 * spec's output limit (`finish_reason: length`). The plan activity's timeout (4.8 s; 2.4 s a
 * request) cannot hold the cut reply and the larger-limit ask after it (twice the output, about
 * twice the time, by the planner's own estimate), so the first attempt ends once its cut reply is
 * recorded and the second attempt asks with the larger limit directly (the cut reply is not asked
 * again). The run's counted tokens and cost equal what the server served, across both
 * attempts, and the tenant's spend store agrees.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { statusQuery, type RunResult } from '../../common/contracts';
import { costUsd, DEFAULT_PRICE_TABLE } from '../../planners/pricing';
import { ServedUsageStore, SpendStore } from '../../storage/spend';
import { startHarness, type Harness } from '../helpers/run-harness';
import { runResult } from '../helpers/run-result';

const KEY_ENV = 'SERVED_USAGE_KEY';
const REPLY_MS = 2000;
const LIMITS = { served: { maxUsd: 5, windowMs: 3_600_000 } };

interface Served {
  readonly maxTokens: number;
  readonly prompt: number;
  readonly completion: number;
  readonly sentAt: number;
}

describe('served usage across plan attempts (durable, OpenAI protocol)', () => {
  let h: Harness;
  let server: Server;
  const served: Served[] = [];
  const requests: number[] = [];

  beforeAll(async () => {
    process.env[KEY_ENV] = 'sk-test-served';
    // Cut off at 64 output tokens; at a larger limit, the finishing call.
    server = createServer((req, res) => {
      let raw = '';
      req.on('data', (c: Buffer) => (raw += c.toString()));
      req.on('end', () => {
        const body = JSON.parse(raw) as { max_tokens?: number; max_completion_tokens?: number };
        const maxTokens = body.max_completion_tokens ?? body.max_tokens ?? 0;
        requests.push(maxTokens);
        setTimeout(() => {
          if (res.destroyed) return; // never served: the client gave up
          const cut = maxTokens <= 64;
          const prompt = 300 + Math.floor(raw.length / 100);
          const completion = cut ? maxTokens : 41;
          served.push({ maxTokens, prompt, completion, sentAt: Date.now() });
          const message = cut
            ? { role: 'assistant', content: 'x'.repeat(200) }
            : {
                role: 'assistant',
                content: null,
                tool_calls: [
                  {
                    id: 'call_1',
                    type: 'function',
                    function: { name: 'complete_task', arguments: '{"summary":"a long body, written"}' },
                  },
                ],
              };
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(
            JSON.stringify({
              id: `chatcmpl-${served.length}`,
              object: 'chat.completion',
              created: 1,
              model: 'gpt-4o-mini',
              choices: [{ index: 0, message, finish_reason: cut ? 'length' : 'tool_calls' }],
              usage: {
                prompt_tokens: prompt,
                completion_tokens: completion,
                total_tokens: prompt + completion,
              },
            }),
          );
        }, REPLY_MS);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as AddressInfo).port;
    process.env.AGENT_MODEL_ENDPOINTS = JSON.stringify({
      'served-slow': { provider: 'openai', baseURL: `http://127.0.0.1:${port}/v1`, apiKeyEnv: KEY_ENV },
    });
    h = await startHarness({ deps: () => ({ spendLimits: LIMITS }) });
  });
  afterAll(async () => {
    await h?.close();
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r));
    delete process.env[KEY_ENV];
    delete process.env.AGENT_MODEL_ENDPOINTS;
  });

  it('counts the cut reply of the abandoned attempt and the larger-limit reply of the next: counted = served = spend', async () => {
    const run = await h.start({
      goal: 'write a very large body',
      planner: { kind: 'openai', model: 'gpt-4o-mini', maxTokens: 64, endpoint: 'served-slow' },
      tenant: 'served',
      // 2.4 s a request, 4.8 s an attempt: the cut reply (2 s) and a larger-limit ask (~4 s) do not fit.
      timeouts: { plannerStartToCloseMs: 4800, retryInitialMs: 100 },
      resumeWindowMs: 500,
    });
    const result: RunResult = await runResult(run);
    expect(result.terminal_state).toBe('COMPLETED');
    // Two requests in all: the cut one (attempt 1) and the larger-limit one (attempt 2); the cut
    // request was never sent again.
    expect(requests).toEqual([64, 128]);
    expect(served.map((s) => s.maxTokens)).toEqual([64, 128]);

    const servedTokens = served.reduce((a, s) => a + s.prompt + s.completion, 0);
    const price = DEFAULT_PRICE_TABLE['gpt-4o-mini']!;
    const servedUsd = served.reduce(
      (a, s) => a + costUsd(price, { inputTokens: s.prompt, outputTokens: s.completion }),
      0,
    );
    const status = await run.handle.query(statusQuery);
    expect(status.usage.tokens).toBe(servedTokens);
    expect(status.usage.costUsd).toBeCloseTo(servedUsd, 9);

    // The rows: one per attempt, both answered, carried by the second attempt's outcome.
    const rows = await ServedUsageStore.over(h.deps.ledger)!.rows(run.workflowId);
    expect(rows.map((r) => [Number(r.attempt), r.state, r.finish, Number(r.tokens)])).toEqual([
      [1, 'answered', 'truncated', served[0]!.prompt + served[0]!.completion],
      [2, 'answered', 'done', served[1]!.prompt + served[1]!.completion],
    ]);
    expect(new Set(rows.map((r) => r.delivered_to)).size).toBe(1);

    // The tenant's spend store settled both calls at what they cost.
    const spend = await SpendStore.over(h.deps.ledger, LIMITS).status('served');
    expect(spend.calls).toEqual({ settled: 2, inFlight: 0, refused: 0 });
    expect(spend.settledUsd).toBeCloseTo(servedUsd, 9);
  });
});
