/**
 * One request policy for a slow model (issue 30), durable, through the official OpenAI SDK: a
 * server that answers after the run's planner timeout gets one request per plan attempt (the
 * SDK retries nothing), each sent only after the one before was given up on, at most
 * 1 + the activity's retries in all; the run stops NEEDS_HUMAN `planner_timeout`, its report
 * saying the model did not answer in time and how to give it more.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RunResult } from '../../common/contracts';
import { startHarness, type Harness } from '../helpers/run-harness';
import { runResult } from '../helpers/run-result';

const KEY_ENV = 'SLOW_MODEL_KEY';

interface Seen {
  readonly at: number;
  closedAt: number | null;
  answered: boolean;
}

describe('a slow model (durable, OpenAI protocol)', () => {
  let h: Harness;
  let server: Server;
  const seen: Seen[] = [];

  beforeAll(async () => {
    process.env[KEY_ENV] = 'sk-test-slow';
    // Answers every request after 2.5 s, if the client is still there.
    server = createServer((req, res) => {
      const s: Seen = { at: Date.now(), closedAt: null, answered: false };
      seen.push(s);
      req.resume();
      res.on('close', () => (s.closedAt = Date.now()));
      setTimeout(() => {
        if (res.destroyed) return;
        s.answered = true;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            id: 'chatcmpl-slow',
            object: 'chat.completion',
            created: 1,
            model: 'gpt-4o-mini',
            choices: [{ index: 0, message: { role: 'assistant', content: 'late' }, finish_reason: 'stop' }],
            usage: { prompt_tokens: 10, completion_tokens: 1, total_tokens: 11 },
          }),
        );
      }, 2500);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as AddressInfo).port;
    process.env.AGENT_MODEL_ENDPOINTS = JSON.stringify({
      slow: { provider: 'openai', baseURL: `http://127.0.0.1:${port}/v1`, apiKeyEnv: KEY_ENV },
    });
    h = await startHarness();
  });
  afterAll(async () => {
    await h?.close();
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r));
    delete process.env[KEY_ENV];
    delete process.env.AGENT_MODEL_ENDPOINTS;
  });

  it('sends one request per attempt, none while another is open, and stops planner_timeout saying so', async () => {
    const run = await h.start({
      goal: 'answer slowly',
      planner: { kind: 'openai', model: 'gpt-4o-mini', maxTokens: 64, endpoint: 'slow' },
      timeouts: { plannerRequestMs: 1000, retryInitialMs: 100 },
      resumeWindowMs: 500,
    });
    const result: RunResult = await runResult(run);
    expect(result).toMatchObject({ terminal_state: 'NEEDS_HUMAN', reason: 'planner_timeout', executed: 0 });
    expect(result.report?.unmet_precondition).toMatch(/the model did not answer within 1 s/);
    expect(result.report?.unmet_precondition).toContain('--planner-timeout');
    expect(result.report?.resume_condition).toContain('--planner-timeout');
    expect(result.report?.resume_condition).not.toContain('configured (API key');
    // The plan activity's 5 attempts, one request each: 1 + 4 retries, no SDK retries.
    expect(seen).toHaveLength(5);
    expect(seen.every((s) => !s.answered && s.closedAt !== null)).toBe(true);
    for (let i = 1; i < seen.length; i++) expect(seen[i]!.at).toBeGreaterThanOrEqual(seen[i - 1]!.closedAt!);
    // Each was given up on at the run's 1 s, not the SDK's default.
    for (const s of seen) expect(s.closedAt! - s.at).toBeLessThan(2000);
    expect(await h.counters(run.workflowId)).toEqual({});
  });
});
