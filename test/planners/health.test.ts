/**
 * The planner's health check, the lift rule of a `planner_failed` stop (docs/spec.md §7.4):
 * it passes only when a turn's configuration resolves and the endpoint answers, and its
 * probe never carries the key.
 */
import { createServer } from 'node:net';
import { MODEL_ENDPOINTS_ENV } from '../../planners/endpoints';
import { createOpenAIPlanner } from '../../planners/openai';
import type { PlannerSpec } from '../../common/planner';
import { startOpenAIServer } from '../../testing/openai-server';

const KEY = 'vllm-health-key-0123456789';
const spec: PlannerSpec = { kind: 'openai', model: 'm', maxTokens: 16, endpoint: 'local' };

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

const envFor = (baseURL: string, key: string | undefined = KEY): NodeJS.ProcessEnv => ({
  ...(key ? { VLLM_KEY: key } : {}),
  [MODEL_ENDPOINTS_ENV]: JSON.stringify({ local: { provider: 'openai', baseURL, apiKeyEnv: 'VLLM_KEY' } }),
});

describe('LLM planner health check', () => {
  it('passes when the endpoint answers, and the probe carries no key', async () => {
    const server = await startOpenAIServer([{ content: 'unused' }]);
    try {
      const planner = createOpenAIPlanner({ env: envFor(server.baseURL) });
      expect(await planner.health?.(spec)).toBeNull();
      for (const r of server.requests) expect(JSON.stringify(r)).not.toContain(KEY);
    } finally {
      await server.close();
    }
  });

  it('fails, saying why, when the key is missing, the endpoint unknown or unreachable', async () => {
    const down = `http://127.0.0.1:${await freePort()}/v1`;
    const noKey = createOpenAIPlanner({ env: envFor('http://127.0.0.1:1/v1', '') });
    expect(await noKey.health?.(spec)).toMatch(/VLLM_KEY/);
    const unknown = createOpenAIPlanner({ env: envFor(down) });
    expect(await unknown.health?.({ ...spec, endpoint: 'nowhere' })).toMatch(/nowhere/);
    const unreachable = createOpenAIPlanner({ env: envFor(down) });
    expect(await unreachable.health?.(spec)).toMatch(/fetch failed|ECONNREFUSED/);
  });
});
