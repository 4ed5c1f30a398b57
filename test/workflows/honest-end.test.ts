/**
 * An honest end (issue 30), durable, through the official OpenAI SDK against a local server
 * that speaks Chat Completions and counts the tokens it served: a reply with no tool call is
 * never COMPLETED (the model is told, then the run ends PARTIAL `model_stopped` with the text as
 * its final message), a write put in a ```json fence runs nothing, a reply cut off at its
 * output limit never runs, and on every end the run's token total equals the server's.
 */
import { statusQuery, traceQuery, type RunResult } from '../../common/contracts';
import { startOpenAIServer, type OpenAIServer, type OpenAIStep } from '../../testing/openai-server';
import type { RecordedRequest } from '../../testing/http-script';
import { startHarness, type Harness } from '../helpers/run-harness';
import { runResult } from '../helpers/run-result';

const KEY_ENV = 'HONEST_END_KEY';
const planner = (endpoint: string) =>
  ({ kind: 'openai', model: 'gpt-4o-mini', maxTokens: 256, endpoint }) as const;

/** A server whose replies come from `reply(n, request)`, each with its own usage, all counted. */
async function countingServer(
  reply: (n: number, req: RecordedRequest) => OpenAIStep,
): Promise<OpenAIServer & { served: () => number }> {
  let served = 0;
  const server = await startOpenAIServer((n, req) => {
    const step = reply(n, req);
    if ('error' in step) return step;
    // Every reply is billed, one the planner cannot read too.
    const usage = { prompt_tokens: 100 + 3 * n, completion_tokens: 7 + n };
    served += usage.prompt_tokens + usage.completion_tokens;
    return { ...step, usage };
  });
  return Object.assign(server, { served: () => served });
}

const messagesOf = (req: RecordedRequest | Record<string, unknown> | undefined) =>
  JSON.stringify((req as { messages?: unknown } | undefined)?.messages ?? null);

describe('an honest end (durable, OpenAI protocol, counted tokens)', () => {
  let h: Harness;
  const servers: Record<string, OpenAIServer & { served: () => number }> = {};

  beforeAll(async () => {
    process.env[KEY_ENV] = 'sk-test-honest';
    // Talks, never calls a tool.
    servers.talker = await countingServer((n) => ({
      content: n === 0 ? "I'm sorry, but I'm not able to continue with the search process." : '   ',
    }));
    // Puts its write in a ```json fence first, then calls the tools properly.
    servers.fence = await countingServer((_n, req) => {
      const text = messagesOf(req.body as Record<string, unknown>);
      if (!text.includes('no tool ran'))
        return {
          content: '```json\n{"name":"write_record","arguments":{"id":"fence-1","body":"x"}}\n```',
        };
      if (!/written.{0,4}true/.test(text))
        return { tool_calls: [{ name: 'write_record', arguments: '{"id":"fence-1","body":"x"}' }] };
      return { tool_calls: [{ name: 'complete_task', arguments: '{"summary":"wrote fence-1"}' }] };
    });
    // Every reply is cut off in the middle of a write.
    servers.cut = await countingServer(() => ({
      tool_calls: [{ name: 'write_record', arguments: '{"id":"cut-1","bo' }],
      finish_reason: 'length',
    }));
    // Cut off once, then a whole write and the finishing tool.
    servers.cutOnce = await countingServer((n, req) => {
      if (n === 0) return { content: 'Let me write the rec', finish_reason: 'length' };
      if (!/written.{0,4}true/.test(messagesOf(req.body as Record<string, unknown>)))
        return { tool_calls: [{ name: 'write_record', arguments: '{"id":"cut-2","body":"whole"}' }] };
      return { tool_calls: [{ name: 'complete_task', arguments: '{"summary":"wrote cut-2"}' }] };
    });
    // Searches for something new each time (the step budget stops it).
    // Asked for its final word (tool use off), it says what it did.
    const lastWord = (req: RecordedRequest) =>
      (req.body as { tool_choice?: unknown }).tool_choice === 'none'
        ? { content: 'I searched; the docs are left.' }
        : null;
    servers.searcher = await countingServer(
      (n, req) =>
        lastWord(req) ?? {
          tool_calls: [{ name: 'search', arguments: JSON.stringify({ query: `topic ${n}` }) }],
        },
    );
    // Searches for something new each time until its token budget stops it; its final word is text.
    servers.thrifty = await countingServer(
      (n, req) =>
        lastWord(req) ?? {
          tool_calls: [{ name: 'search', arguments: JSON.stringify({ query: `subject ${n}` }) }],
        },
    );
    // The same search, whatever it is told (the steer limit stops it).
    // Its final word is one more tool call: ignored, nothing runs.
    servers.stubborn = await countingServer(() => ({
      tool_calls: [{ name: 'search', arguments: '{"query":"same"}' }],
    }));
    // Its write's arguments are not JSON (handed back: invalid_args), then a reply without a choice.
    servers.garbled = await countingServer((n) =>
      n === 0
        ? { tool_calls: [{ name: 'write_record', arguments: '{"id": "g-1", "body": ' }] }
        : { unreadable: 'no_choices' },
    );
    process.env.AGENT_MODEL_ENDPOINTS = JSON.stringify(
      Object.fromEntries(
        Object.entries(servers).map(([name, s]) => [
          name,
          { provider: 'openai', baseURL: s.baseURL, apiKeyEnv: KEY_ENV },
        ]),
      ),
    );
    h = await startHarness();
  });
  afterAll(async () => {
    await h?.close();
    for (const s of Object.values(servers)) await s.close();
    delete process.env[KEY_ENV];
    delete process.env.AGENT_MODEL_ENDPOINTS;
  });

  /** The Temporal UI's current details of a run (the SDK's metadata query). */
  async function detailsOf(handle: Awaited<ReturnType<Harness['start']>>['handle']): Promise<string> {
    const meta = await handle.query<{ currentDetails?: string }>('__temporal_workflow_metadata');
    return meta.currentDetails ?? '';
  }

  async function tokensOf(handle: Awaited<ReturnType<Harness['start']>>['handle']): Promise<number> {
    return (await handle.query(statusQuery)).usage.tokens;
  }

  it('a model that only talks is told twice, then the run ends PARTIAL model_stopped with its words', async () => {
    const run = await h.start({ goal: 'find the docs', planner: planner('talker'), resumeWindowMs: 500 });
    const result: RunResult = await runResult(run);
    expect(result).toMatchObject({
      terminal_state: 'PARTIAL',
      reason: 'model_stopped',
      executed: 0,
      final_message: '   ',
    });
    expect(result.report).toMatchObject({ guard_reason: 'model_stopped', final_message: '   ' });
    expect(await h.counters(run.workflowId)).toEqual({});
    // 1 + textReplyLimit (2) requests; the second was told what it said and how to finish.
    const requests = servers.talker!.completionRequests();
    expect(requests).toHaveLength(3);
    const note = messagesOf(requests[1]);
    expect(note).toContain('not able to continue with the search process');
    expect(note).toContain('no tool ran');
    expect(note).toContain('complete_task');
    expect(messagesOf(requests[2])).toContain('Your last reply was empty');
    const trace = await run.handle.query(traceQuery, { decision: 'text_reply', limit: 10 });
    expect(trace.records.map((r) => r.reason)).toEqual(['no_tool_call', 'no_tool_call']);
    expect(await tokensOf(run.handle)).toBe(servers.talker!.served());
    // The UI's details say how it ended and give the model's last words.
    const details = await detailsOf(run.handle);
    expect(details).toContain('**ended** the model stopped talking without finishing the task');
    expect(details).toContain('**final message**    ');
  });

  it('a write in a ```json fence runs nothing; told so, the model calls the tools and completes', async () => {
    const run = await h.start({ goal: 'write fence-1', planner: planner('fence'), resumeWindowMs: 500 });
    const result = await runResult(run);
    expect(result).toMatchObject({ terminal_state: 'COMPLETED', summary: 'wrote fence-1' });
    expect(await h.counters(run.workflowId)).toEqual({ write_record: 1, complete_task: 1 });
    expect(servers.fence!.completionRequests()).toHaveLength(3);
    expect(await tokensOf(run.handle)).toBe(servers.fence!.served());
    const details = await detailsOf(run.handle);
    expect(details).toContain('**ended** the task was declared done');
    expect(details).toContain('**summary** wrote fence-1');
  });

  it('a reply cut off in a tool call never runs: asked again with twice maxTokens, then NEEDS_HUMAN', async () => {
    const run = await h.start({ goal: 'write cut-1', planner: planner('cut'), resumeWindowMs: 500 });
    const result = await runResult(run);
    expect(result).toMatchObject({
      terminal_state: 'NEEDS_HUMAN',
      reason: 'model_output_truncated',
      executed: 0,
    });
    expect(result.report?.resume_condition).toContain('--max-output-tokens');
    expect(await h.counters(run.workflowId)).toEqual({});
    const requests = servers.cut!.completionRequests();
    expect(requests.map((r) => r.max_tokens)).toEqual([256, 512]);
    expect(await tokensOf(run.handle)).toBe(servers.cut!.served());
  });

  it('a reply cut off once is asked again; the whole one runs and the run completes', async () => {
    const run = await h.start({ goal: 'write cut-2', planner: planner('cutOnce'), resumeWindowMs: 500 });
    const result = await runResult(run);
    expect(result).toMatchObject({ terminal_state: 'COMPLETED', summary: 'wrote cut-2' });
    expect(await h.counters(run.workflowId)).toEqual({ write_record: 1, complete_task: 1 });
    // The cut text never went back into the conversation.
    expect(messagesOf(servers.cutOnce!.completionRequests()[2])).not.toContain('Let me write the rec');
    expect(await tokensOf(run.handle)).toBe(servers.cutOnce!.served());
  });

  it('a proposal the step budget refuses still has its tokens counted', async () => {
    const run = await h.start({
      goal: 'research',
      planner: planner('searcher'),
      guard: { maxSteps: 2 },
      resumeWindowMs: 500,
    });
    const result = await runResult(run);
    expect(result).toMatchObject({
      terminal_state: 'STOPPED_LOOP_GUARD',
      reason: 'step_budget',
      executed: 2,
    });
    expect(result.final_message).toBe('I searched; the docs are left.');
    expect(result.report?.final_message).toBe('I searched; the docs are left.');
    expect(await detailsOf(run.handle)).toContain('**final message** I searched; the docs are left.');
    expect(await h.counters(run.workflowId)).toEqual({ search: 2 });
    // Two searches, the refused third, and the final word: tool use off, the stop named.
    const requests = servers.searcher!.completionRequests();
    expect(requests).toHaveLength(4);
    expect(requests[3]).toMatchObject({ tool_choice: 'none', max_tokens: 256 });
    expect(messagesOf(requests[3])).toContain('stopped by its loop guard (step_budget)');
    expect(await tokensOf(run.handle)).toBe(servers.searcher!.served());
  });

  it('a run the steer limit stops has every reply counted', async () => {
    const run = await h.start({ goal: 'research', planner: planner('stubborn'), resumeWindowMs: 500 });
    const result = await runResult(run);
    expect(result).toMatchObject({ terminal_state: 'STOPPED_LOOP_GUARD', reason: 'same_call_repeat' });
    expect(await h.counters(run.workflowId)).toEqual({ search: 2 });
    // Five proposals (sameCallLimit + steerLimit + 1) and a final word whose call runs nothing.
    expect(servers.stubborn!.completionRequests()).toHaveLength(6);
    expect(result.final_message).toBe('');
    expect(await tokensOf(run.handle)).toBe(servers.stubborn!.served());
  });

  it('replies that failed to parse are counted: args that are not JSON, then a reply with no choice', async () => {
    const run = await h.start({ goal: 'write g-1', planner: planner('garbled'), resumeWindowMs: 500 });
    const result = await runResult(run);
    expect(result).toMatchObject({ terminal_state: 'NEEDS_HUMAN', reason: 'planner_failed' });
    expect(result.report?.unmet_precondition).toContain('the chat completion has no choices');
    // The broken args were refused (the model told so), nothing ran.
    expect(await h.counters(run.workflowId)).toEqual({});
    const requests = servers.garbled!.completionRequests();
    expect(requests).toHaveLength(2);
    expect(messagesOf(requests[1])).toContain('invalid_args');
    const stop = await run.handle.query(traceQuery, { decision: 'stop', limit: 10 });
    expect(stop.records.map((r) => r.error_code)).toEqual(['UnreadableReplyError']);
    // Both billed replies are in the run's totals.
    expect(await tokensOf(run.handle)).toBe(servers.garbled!.served());
  });

  it('a token_budget stop still has room for the final word: asked within the cap, every token counted', async () => {
    const maxTokens = 12_000;
    const run = await h.start({
      goal: 'research',
      planner: planner('thrifty'),
      guard: { maxTokens, noProgressLimit: 100, sameCallLimit: 50 },
      resumeWindowMs: 500,
    });
    const result = await runResult(run);
    expect(result).toMatchObject({ terminal_state: 'STOPPED_LOOP_GUARD', reason: 'token_budget' });
    expect(result.report?.unmet_precondition).toContain('plus the final word kept in reserve');
    const requests = servers.thrifty!.completionRequests();
    expect(requests.length).toBeGreaterThanOrEqual(3);
    // The last request is the final word: tool use off, 256 output tokens; its text is the report's.
    expect(requests[requests.length - 1]).toMatchObject({ tool_choice: 'none', max_tokens: 256 });
    expect(result.final_message).toBe('I searched; the docs are left.');
    expect(await h.counters(run.workflowId)).toEqual({ search: requests.length - 1 });
    // The cap holds with the final word in it, and the run counted what the server served.
    const served = servers.thrifty!.served();
    expect(served).toBeLessThanOrEqual(maxTokens);
    expect(await tokensOf(run.handle)).toBe(served);
    console.log(`token_budget final word: ${requests.length} requests, ${served} tokens served`);
  });
});
