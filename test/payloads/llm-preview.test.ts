/**
 * Issue 9: a large tool result reaches the workflow by reference, and the model still sees
 * its usual preview. A durable run with the real `openai` SDK against the local Chat
 * Completions server (test/planners/servers): the tool returns 300 KB, the plan activity
 * resolves the reference, and the tool message the server receives carries the first
 * 20,000 characters of the data as `data_preview` — while no history event carries it.
 */
import { temporal } from '@temporalio/proto';
import { z } from 'zod';
import { PayloadStore } from '../../storage/payloads';
import { defineTool } from '../../tools/define-tool';
import { startOpenAIServer, type OpenAIServer } from '../../testing/openai-server';
import { startHarness, type Harness } from '../helpers/run-harness';
import { runResult } from '../helpers/run-result';

jest.setTimeout(120_000);

const KEY_ENV = 'LOCAL_PAYLOAD_OPENAI_KEY';
const KEY = 'sk-local-payload-test-0123456789abcdef';
const doc = (bytes: number) => 'doc:'.padEnd(bytes, 'y');

const bigRead = defineTool({
  name: 'big_read',
  description: 'Read a large document.',
  effect: 'read',
  schema: z.object({ bytes: z.number().int().positive() }).strict(),
  async execute(args, ctx) {
    await ctx.tx.run(
      'INSERT INTO world_tool_calls (run_id, tool, count) VALUES (?, ?, 1) ON CONFLICT (run_id, tool) DO UPDATE SET count = world_tool_calls.count + 1',
      [ctx.runId, 'big_read'],
    );
    return { data: { text: doc(args.bytes) } };
  },
});

describe('a large tool result with the OpenAI planner', () => {
  let h: Harness;
  let server: OpenAIServer;

  beforeAll(async () => {
    process.env[KEY_ENV] = KEY;
    server = await startOpenAIServer(
      [
        {
          content: null,
          tool_calls: [{ id: 'call_big', name: 'big_read', arguments: '{"bytes":300000}' }],
          usage: { prompt_tokens: 100, completion_tokens: 20 },
        },
        // Only the finishing tool completes a run (issue 30).
        {
          tool_calls: [
            { id: 'call_done', name: 'complete_task', arguments: '{"summary":"Read the document."}' },
          ],
          usage: { prompt_tokens: 6000, completion_tokens: 10 },
        },
      ],
      { apiKey: KEY },
    );
    process.env.AGENT_MODEL_ENDPOINTS = JSON.stringify({
      'local-openai': { provider: 'openai', baseURL: server.baseURL, apiKeyEnv: KEY_ENV },
    });
    h = await startHarness({ tools: [bigRead] });
  });
  afterAll(async () => {
    await h?.close();
    await server?.close();
    delete process.env[KEY_ENV];
    delete process.env.AGENT_MODEL_ENDPOINTS;
  });

  it('the model gets the 20,000-character preview; history gets a reference; the run COMPLETES', async () => {
    const run = await h.start({
      goal: 'read the big document',
      planner: { kind: 'openai', model: 'gpt-4o-mini', maxTokens: 256, endpoint: 'local-openai' },
      resumeWindowMs: 500,
    });
    expect(await runResult(run)).toMatchObject({
      terminal_state: 'COMPLETED',
      summary: 'Read the document.',
    });
    expect(await h.counters(run.workflowId)).toEqual({ big_read: 1, complete_task: 1 });

    const requests = server.completionRequests();
    expect(requests).toHaveLength(2);
    const messages = requests[1]?.messages as Array<{ role: string; tool_call_id?: string; content: string }>;
    const tool = messages.find((m) => m.role === 'tool');
    expect(tool?.tool_call_id).toBe('call_big');
    const seen = JSON.parse(tool?.content ?? '{}') as Record<string, unknown>;
    expect(seen).toEqual({
      kind: 'SUCCESS',
      data_truncated: true,
      data_preview: JSON.stringify({ text: doc(300_000) }).slice(0, 20_000),
    });

    expect(await PayloadStore.over(h.deps.ledger).stats(run.workflowId)).toEqual({
      rows: 1,
      bytes: JSON.stringify({ text: doc(300_000) }).length,
    });
    const history = await run.handle.fetchHistory();
    const sizes = (history.events ?? []).map(
      (e) => temporal.api.history.v1.HistoryEvent.encode(e).finish().length,
    );
    expect(Math.max(...sizes)).toBeLessThan(64 * 1024);
  });
});
