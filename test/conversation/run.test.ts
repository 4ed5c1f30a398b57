/**
 * Long LLM runs on a real dev server with the real SDKs against local protocol servers
 * (issue 9): the conversation lives in the store, not in history; a small context window gets
 * compacted requests; a model that cannot fit stops NEEDS_HUMAN `context_exhausted` with its
 * checkpoint, its tools untouched; a retried `plan` activity neither asks the model again nor
 * appends to the conversation.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { temporal } from '@temporalio/proto';
import { createActivities } from '../../activities/create-activities';
import type { SqlLedger } from '../../storage/ledger';
import { messageBudgetChars } from '../../planners/context-window';
import type { PlanOutput } from '../../activities/types';
import { resumeUpdate, statusQuery, type RunResult } from '../../common/contracts';
import { waitFor } from '../helpers/run-inputs';
import { agentctl, cliEnv } from '../client/cli-helpers';
import { startAnthropicServer } from '../planners/servers/anthropic-server';
import { startOpenAIServer } from '../../testing/openai-server';
import { startHarness, type Harness } from '../helpers/run-harness';
import { runResult } from '../helpers/run-result';

const NOTE = 3000;
const body = (n: number) => `${n}:`.padEnd(NOTE, 'n');
const GUARD = { maxSteps: 200, maxMs: 600_000 };

describe('long LLM runs (conversation store, compaction)', () => {
  let h: Harness;
  let openai: Awaited<ReturnType<typeof startOpenAIServer>>;
  let anthropic: Awaited<ReturnType<typeof startAnthropicServer>>;
  const TURNS = 20;

  beforeAll(async () => {
    // OpenAI: always refuses for the window (context_exhausted).
    openai = await startOpenAIServer(() => ({
      error: {
        status: 400,
        type: 'invalid_request_error',
        code: 'context_length_exceeded',
        message:
          "This model's maximum context length is 8192 tokens. However, your messages resulted in 9001 tokens.",
      },
    }));
    // Anthropic: one ~3 KB note per turn, then an answer.
    anthropic = await startAnthropicServer((n) =>
      n < TURNS
        ? {
            content: [
              { type: 'text', text: `Writing note ${n + 1}.` },
              { type: 'tool_use', name: 'write_record', input: { id: `note-${n + 1}`, body: body(n + 1) } },
            ],
            usage: { input_tokens: 100, output_tokens: 800 },
          }
        : {
            // Only the finishing tool completes a run (issue 30): a text answer would not.
            content: [
              { type: 'tool_use', name: 'complete_task', input: { summary: `All ${TURNS} notes written.` } },
            ],
            usage: { input_tokens: 100, output_tokens: 5 },
          },
    );
    process.env.AGENT_MODEL_ENDPOINTS = JSON.stringify({
      'refusing-gpt': { provider: 'openai', baseURL: openai.baseURL },
      'small-claude': { provider: 'anthropic', baseURL: anthropic.origin },
    });
    h = await startHarness();
  });
  afterAll(async () => {
    await h?.close();
    await openai?.close();
    await anthropic?.close();
    delete process.env.AGENT_MODEL_ENDPOINTS;
  });

  it('compacts a small window, completes, and keeps the conversation out of history', async () => {
    const planner = {
      kind: 'anthropic',
      model: 'small',
      maxTokens: 256,
      endpoint: 'small-claude',
      contextTokens: 8192,
    } as const;
    const run = await h.start({ goal: `Write notes note-1 … note-${TURNS}.`, planner, guard: GUARD });
    const result: RunResult = await runResult(run);
    expect(result).toMatchObject({ terminal_state: 'COMPLETED', executed: TURNS + 1 });
    expect(await h.counters(run.workflowId)).toEqual({ write_record: TURNS, complete_task: 1 });

    const requests = anthropic.messageRequests();
    expect(requests).toHaveLength(TURNS + 1);
    const tools = (requests[0]!.tools as unknown[]).length;
    expect(tools).toBeGreaterThan(0);
    const budget = messageBudgetChars(
      { ...planner },
      JSON.stringify(h.deps.registry.descriptors().map((t) => [t.name, t.description, t.inputSchema])).length,
    );
    const sizes = requests.map((r) => JSON.stringify(r.messages).length);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(budget + 2 * sizes.length); // message JSON plus array commas
    // The late requests are compacted: the goal and the run-state note, then a model message.
    const late = requests[TURNS]!.messages as Array<{ role: string; content: unknown }>;
    expect(String(late[0]!.content)).toContain('[Run state.');
    expect(String(late[0]!.content)).toMatch(/Operations completed: \d+ \(newest: record:note-/);
    expect(late[1]!.role).toBe('assistant');

    // No history event carries the conversation: the largest is about one note, not twenty.
    const history = await run.handle.fetchHistory();
    const sizesInHistory = (history.events ?? []).map(
      (e) => temporal.api.history.v1.HistoryEvent.encode(e).finish().length,
    );
    expect(Math.max(...sizesInHistory)).toBeLessThan(4 * NOTE);
    const bytes = sizesInHistory.reduce((a, b) => a + b, 0);
    expect(bytes / TURNS).toBeLessThan(25_000);

    // Out of history, still encrypted: the rows are sealed with the worker's payload codec.
    const raw = await (h.deps.ledger as SqlLedger<unknown>)
      .database()
      .unit('read', (tx) =>
        tx.all<{ message: string }>('SELECT message FROM agent_conversation WHERE conversation_id = ?', [
          run.workflowId,
        ]),
      );
    expect(raw).toHaveLength(1 + 2 * TURNS + 1);
    expect(raw.every((r) => r.message.startsWith('codec1:'))).toBe(true);
    expect(raw.some((r) => r.message.includes('note-') || r.message.includes('Write notes'))).toBe(false);

    // agentctl shows what the history no longer holds: the conversation, from the worker's database.
    const cli = await agentctl(['conversation', run.workflowId, '--last', '3', '--width', '60'], cliEnv(h));
    expect(cli.stderr).toBe('');
    expect(cli.code).toBe(0);
    const lines = cli.stdout.trim().split('\n');
    expect(lines[0]).toMatch(
      new RegExp(`^${run.workflowId}: ${1 + 2 * TURNS + 1} messages, \\d+ characters; the newest 3:$`),
    );
    expect(lines.slice(1).map((l) => l.split(':')[0])).toEqual([
      `#${2 * TURNS - 1} assistant`,
      `#${2 * TURNS} user`,
      `#${2 * TURNS + 1} assistant`,
    ]);
    expect(lines[3]).toContain('complete_task');
    const missing = await agentctl(['conversation', 'no-such-run'], cliEnv(h));
    expect(missing).toMatchObject({ code: 3 });
    expect(missing.stderr).toContain('no conversation stored for no-such-run');
  });

  it('stops NEEDS_HUMAN context_exhausted after one tighter retry, with its checkpoint and no tool call', async () => {
    const before = openai.completionRequests().length;
    const run = await h.start({
      goal: 'Say something.',
      planner: { kind: 'openai', model: 'gpt-x', endpoint: 'refusing-gpt' },
      resumeWindowMs: 1000,
    });
    const result: RunResult = await runResult(run);
    expect(result).toMatchObject({ terminal_state: 'NEEDS_HUMAN', reason: 'context_exhausted', executed: 0 });
    expect(result.checkpoint).not.toBeNull();
    expect(result.report?.resume_condition).toMatch(/contextTokens/);
    // The first request and the one tighter retry; the activity is not retried on top.
    expect(openai.completionRequests().length - before).toBe(2);
    expect(await h.counters(run.workflowId)).toEqual({});
  });

  it('a retried plan activity returns the stored turn: no second model request, no second append', async () => {
    const acts = createActivities(h.deps);
    const planner = { kind: 'anthropic', model: 'small', maxTokens: 256, endpoint: 'small-claude' } as const;
    const input = { runId: 'wf-retry', goal: 'Write a note.', planner, memory: null, observation: null };
    const env = new MockActivityEnvironment({
      activityId: '7',
      workflowExecution: { workflowId: 'wf-retry', runId: 'exec-1' },
    });
    const db = (h.deps.ledger as SqlLedger<unknown>).database();
    const rows = () =>
      db.unit('read', (tx) =>
        tx.get<{ n: number }>('SELECT count(*) AS n FROM agent_conversation WHERE conversation_id = ?', [
          'wf-retry',
        ]),
      );
    const before = anthropic.messageRequests().length;
    const first = (await env.run(acts.plan, input)) as PlanOutput;
    const afterFirst = await rows();
    const second = (await env.run(acts.plan, input)) as PlanOutput;
    expect(second).toEqual(first);
    expect(anthropic.messageRequests().length - before).toBe(1);
    expect(await rows()).toEqual(afterFirst);
    expect(Number(afterFirst?.n)).toBe(2); // the goal and the model's reply
    // Another scheduled activity (a new activity id) is a new turn.
    const other = new MockActivityEnvironment({
      activityId: '8',
      workflowExecution: { workflowId: 'wf-retry', runId: 'exec-1' },
    });
    await other.run(acts.plan, input);
    expect(anthropic.messageRequests().length - before).toBe(2);
  });

  it('resume --from continues the conversation under the new run, which asks from where the old one stopped', async () => {
    // One search; then the model's window refuses (twice: context_exhausted); after the resume, it finishes.
    const tooLong = {
      error: {
        status: 400,
        type: 'invalid_request_error',
        message: 'prompt is too long: 9000 tokens > 8192 maximum',
      },
    };
    const model = await startAnthropicServer((n) =>
      n === 0
        ? {
            content: [{ type: 'tool_use', name: 'search', input: { query: 'once' } }],
            usage: { input_tokens: 10, output_tokens: 5 },
          }
        : n < 3
          ? tooLong
          : {
              content: [{ type: 'tool_use', name: 'complete_task', input: { summary: 'Enough searching.' } }],
              usage: { input_tokens: 10, output_tokens: 5 },
            },
    );
    const endpoints = process.env.AGENT_MODEL_ENDPOINTS!;
    process.env.AGENT_MODEL_ENDPOINTS = JSON.stringify({
      ...JSON.parse(endpoints),
      refusing: { provider: 'anthropic', baseURL: model.origin },
    });
    try {
      const planner = { kind: 'anthropic', model: 'm', maxTokens: 64, endpoint: 'refusing' } as const;
      const first = await h.start({ goal: 'Search once.', planner, resumeWindowMs: 300 });
      const stopped: RunResult = await runResult(first);
      expect(stopped).toMatchObject({
        terminal_state: 'NEEDS_HUMAN',
        reason: 'context_exhausted',
        executed: 1,
      });
      // The checkpoint carries a reference into the store, not the conversation.
      const memory = stopped.checkpoint!.plannerMemory as {
        v: number;
        ref: { conversation: string; length: number };
      };
      expect(memory).toMatchObject({ v: 2, ref: { conversation: first.workflowId, length: 2 } });

      const second = await h.start({ goal: 'Search once.', planner, checkpoint: stopped.checkpoint! });
      // The new run checks the checkpoint's seal first; it takes updates once it waits.
      await waitFor(
        () => second.handle.query(statusQuery),
        (st) => st.waitingForResume,
      );
      const answer = await second.handle.executeUpdate(resumeUpdate, {
        args: [{ actor: 'ops', reason: 'window raised on the server', requestId: 'resume-from-1' }],
      });
      expect(answer.accepted).toBe(true);
      const done: RunResult = await runResult(second);
      expect(done).toMatchObject({ terminal_state: 'COMPLETED', summary: 'Enough searching.' });
      // The new run asked from where the old one stopped: the goal, the search call and its result.
      const request = model.messageRequests()[3]!.messages as Array<{ role: string }>;
      expect(request.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
      expect(JSON.stringify(request[2])).toContain('tool_result');
      expect(await h.counters(first.workflowId)).toEqual({ search: 1 });
      expect(await h.counters(second.workflowId)).toEqual({ complete_task: 1 });
      // ... and its conversation is its own (retention follows the run that uses it).
      const db = (h.deps.ledger as SqlLedger<unknown>).database();
      const own = await db.unit('read', (tx) =>
        tx.get<{ n: number }>('SELECT count(*) AS n FROM agent_conversation WHERE conversation_id = ?', [
          second.workflowId,
        ]),
      );
      expect(Number(own?.n)).toBe(4); // goal, call, result, final answer
    } finally {
      process.env.AGENT_MODEL_ENDPOINTS = endpoints;
      await model.close();
    }
  });

  it('a model reply with args above 64 KB reaches the workflow by reference, and the tool gets the real args', async () => {
    const big = 'b'.repeat(100_000);
    const model = await startOpenAIServer((n) =>
      n === 0
        ? {
            tool_calls: [
              {
                id: 'call_big',
                name: 'write_record',
                arguments: JSON.stringify({ id: 'big-note', body: big }),
              },
            ],
          }
        : { tool_calls: [{ id: 'call_done', name: 'complete_task', arguments: '{"summary":"Written."}' }] },
    );
    const endpoints = process.env.AGENT_MODEL_ENDPOINTS!;
    process.env.AGENT_MODEL_ENDPOINTS = JSON.stringify({
      ...JSON.parse(endpoints),
      big: { provider: 'openai', baseURL: model.baseURL },
    });
    try {
      const run = await h.start({
        goal: 'Write one big note.',
        planner: { kind: 'openai', model: 'm', endpoint: 'big', contextTokens: 200_000 },
      });
      const result: RunResult = await runResult(run);
      expect(result).toMatchObject({ terminal_state: 'COMPLETED', executed: 2 });
      expect(await h.counters(run.workflowId)).toEqual({ write_record: 1, complete_task: 1 });
      const row = await h.deps.world.tx.get<{ n: number }>(
        'SELECT length(body) AS n FROM world_records WHERE id = ?',
        ['big-note'],
      );
      expect(Number(row?.n)).toBe(big.length);
      const history = await run.handle.fetchHistory();
      const largest = Math.max(
        ...(history.events ?? []).map((e) => temporal.api.history.v1.HistoryEvent.encode(e).finish().length),
      );
      expect(largest).toBeLessThan(20_000);
      // The model's next request carried its own call verbatim (the conversation is in the store, whole).
      expect(JSON.stringify(model.completionRequests()[1]!.messages)).toContain(big);
    } finally {
      process.env.AGENT_MODEL_ENDPOINTS = endpoints;
      await model.close();
    }
  });
});
