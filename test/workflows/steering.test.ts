/**
 * Steer before stop (docs/spec.md §3.3), durable, through the official OpenAI SDK against a
 * local server that speaks Chat Completions: a model that is told why its repeated search was
 * refused and then writes completes; with `steerLimit: 0` the same model stops as before; a
 * model that ignores every note stops within sameCallLimit + steerLimit + 1 proposals. The
 * assertions are the tools' own counters, not only the states.
 */
import { traceQuery, type RunResult } from '../../common/contracts';
import { startOpenAIServer, type OpenAIServer } from '../../testing/openai-server';
import type { RecordedRequest } from '../../testing/http-script';
import { startHarness, type Harness } from '../helpers/run-harness';
import { runResult } from '../helpers/run-result';

const KEY_ENV = 'STEER_LLM_KEY';
const PLANNER = { kind: 'openai', model: 'gpt-4o-mini', maxTokens: 256, endpoint: 'steer-llm' } as const;
const SEARCH = { name: 'search', arguments: '{"query":"steering"}' };

/** True once the model has been given the guard's note for a refused call. */
const told = (req: RecordedRequest) => JSON.stringify(req.body).includes('guard same_call_repeat');

describe('steering (durable, OpenAI protocol)', () => {
  let h: Harness;
  let recovering: OpenAIServer;
  let stubborn: OpenAIServer;
  let rechecker: OpenAIServer;
  let wanderer: OpenAIServer;

  beforeAll(async () => {
    process.env[KEY_ENV] = 'sk-test-steer';
    // Searches until told, then writes once and finishes.
    recovering = await startOpenAIServer((_i, req) => {
      const body = JSON.stringify(req.body);
      if (!told(req)) return { tool_calls: [SEARCH] };
      if (!/written.{0,4}true/.test(body))
        return { tool_calls: [{ name: 'write_record', arguments: '{"id":"steer-1","body":"found it"}' }] };
      return { tool_calls: [{ name: 'complete_task', arguments: '{"summary":"recovered after the note"}' }] };
    });
    // Ignores every note.
    stubborn = await startOpenAIServer(() => ({ tool_calls: [SEARCH] }));
    // Searches with new words each time (no repeat rule fires, nothing progresses) until the
    // no_progress note, then writes once and finishes (issue 40).
    const searchN = (i: number) => ({ name: 'search', arguments: JSON.stringify({ query: `check ${i}` }) });
    rechecker = await startOpenAIServer((i, req) => {
      const body = JSON.stringify(req.body);
      if (!body.includes('guard no_progress')) return { tool_calls: [searchN(i)] };
      if (!/written.{0,4}true/.test(body))
        return { tool_calls: [{ name: 'write_record', arguments: '{"id":"np-1","body":"done checking"}' }] };
      return { tool_calls: [{ name: 'complete_task', arguments: '{"summary":"stopped re-checking"}' }] };
    });
    // Searches with new words forever, note or not.
    wanderer = await startOpenAIServer((i) => ({ tool_calls: [searchN(i)] }));
    process.env.AGENT_MODEL_ENDPOINTS = JSON.stringify({
      'steer-llm': { provider: 'openai', baseURL: recovering.baseURL, apiKeyEnv: KEY_ENV },
      'steer-stubborn': { provider: 'openai', baseURL: stubborn.baseURL, apiKeyEnv: KEY_ENV },
      'np-rechecker': { provider: 'openai', baseURL: rechecker.baseURL, apiKeyEnv: KEY_ENV },
      'np-wanderer': { provider: 'openai', baseURL: wanderer.baseURL, apiKeyEnv: KEY_ENV },
    });
    h = await startHarness();
  });
  afterAll(async () => {
    await h?.close();
    await recovering?.close();
    await stubborn?.close();
    await rechecker?.close();
    await wanderer?.close();
    delete process.env[KEY_ENV];
    delete process.env.AGENT_MODEL_ENDPOINTS;
  });

  it('a model told why its search was refused writes and completes: search twice, write once', async () => {
    const before = recovering.completionRequests().length;
    const run = await h.start({ goal: 'find and record', planner: PLANNER, resumeWindowMs: 500 });
    const result: RunResult = await runResult(run);
    expect(result.terminal_state).toBe('COMPLETED');
    expect(result.decisions.map((d) => d.decision)).toEqual([
      'execute',
      'execute',
      'steer',
      'execute',
      'execute',
    ]);
    expect(result.decisions[2]).toMatchObject({
      decision: 'steer',
      reason: 'same_call_repeat',
      tool: 'search',
    });
    // The counters: the refused third search never reached the tool.
    expect(await h.counters(run.workflowId)).toEqual({ search: 2, write_record: 1, complete_task: 1 });
    expect(await h.worldCounters(run.workflowId)).toEqual({ search: 2, write_record: 1, complete_task: 1 });
    // The note the model read names the rule's reason code, the evidence and the earlier result.
    const requests = recovering.completionRequests().slice(before);
    const noted = requests.find((r) => JSON.stringify(r).includes('guard same_call_repeat'));
    const text = JSON.stringify(noted);
    expect(text).toContain('same_call_repeat');
    expect(text).toMatch(/already ran 2 times \(steps 1, 2\)/);
    expect(text).toContain('earlierSteps');
    // The trace records the steer with its rule.
    const trace = await run.handle.query(traceQuery, { decision: 'steer', limit: 100 });
    expect(trace.records).toHaveLength(1);
    expect(trace.records[0]).toMatchObject({ decision: 'steer', reason: 'same_call_repeat', tool: 'search' });
  });

  it('with steerLimit 0 the same model is stopped same_call_repeat as before, search twice', async () => {
    const run = await h.start({
      goal: 'find and record',
      planner: PLANNER,
      guard: { steerLimit: 0 },
      resumeWindowMs: 500,
    });
    const result: RunResult = await runResult(run);
    expect(result).toMatchObject({
      terminal_state: 'STOPPED_LOOP_GUARD',
      reason: 'same_call_repeat',
      executed: 2,
    });
    expect(result.decisions.map((d) => d.decision)).toEqual(['execute', 'execute', 'stop']);
    expect(result.report?.steers).toBeUndefined();
    expect(await h.counters(run.workflowId)).toEqual({ search: 2 });
  });

  it('a model that ignores every note stops same_call_repeat within sameCallLimit + steerLimit + 1 proposals', async () => {
    const before = stubborn.completionRequests().length;
    const run = await h.start({
      goal: 'search forever',
      planner: { ...PLANNER, endpoint: 'steer-stubborn' },
      resumeWindowMs: 500,
    });
    const result: RunResult = await runResult(run);
    expect(result).toMatchObject({
      terminal_state: 'STOPPED_LOOP_GUARD',
      reason: 'same_call_repeat',
      executed: 2,
    });
    expect(result.decisions.map((d) => d.decision)).toEqual(['execute', 'execute', 'steer', 'steer', 'stop']);
    // sameCallLimit + steerLimit + 1 proposals, then the model's final word (issue 30).
    expect(stubborn.completionRequests().length - before).toBe(2 + 2 + 1 + 1);
    expect(await h.counters(run.workflowId)).toEqual({ search: 2 });
    // The StopReport lists the steers that came before the stop; each steer cost a step.
    expect(result.report?.steers?.map((s) => s.reason)).toEqual(['same_call_repeat', 'same_call_repeat']);
    expect(result.report?.steps).toBe(4);
  });

  it('no_progress tells the model before it stops: three searches without progress get the note with the third result; the model writes and completes', async () => {
    const run = await h.start({
      goal: 'check, then record',
      planner: { ...PLANNER, endpoint: 'np-rechecker' },
      resumeWindowMs: 500,
    });
    const result: RunResult = await runResult(run);
    expect(result.terminal_state).toBe('COMPLETED');
    // The third search ran (its result is the model's) and carried the note.
    expect(result.decisions.slice(0, 3).map((d) => d.reason ?? d.after)).toEqual([
      'continue',
      'continue',
      'no_progress',
    ]);
    expect(await h.counters(run.workflowId)).toEqual({ search: 3, write_record: 1, complete_task: 1 });
    const noted = rechecker.completionRequests().find((r) => JSON.stringify(r).includes('guard no_progress'));
    const text = JSON.stringify(noted);
    expect(text).toMatch(
      /your last 3 calls \(search \(step 1\), search \(step 2\), search \(step 3\)\) learned nothing new/,
    );
    expect(text).toContain('3 more call(s) without progress stop the run');
    // The third search's own result is in the same tool message as the note.
    expect(text).toContain('check 2');
    const trace = await run.handle.query(traceQuery, { limit: 100 });
    expect(trace.records.filter((r) => r.reason === 'no_progress')).toHaveLength(1);
  });

  it('a model that goes on without progress after the note stops no_progress after noProgressGrace more calls', async () => {
    const run = await h.start({
      goal: 'search forever, rephrased',
      planner: { ...PLANNER, endpoint: 'np-wanderer' },
      resumeWindowMs: 500,
    });
    const result: RunResult = await runResult(run);
    expect(result).toMatchObject({
      terminal_state: 'STOPPED_LOOP_GUARD',
      reason: 'no_progress',
      executed: 6,
    });
    expect(await h.counters(run.workflowId)).toEqual({ search: 6 });
    expect(result.report?.steers?.map((s) => [s.reason, s.step])).toEqual([['no_progress', 3]]);
  });
});
