/**
 * A durable run driven by a real LLM SDK (`@anthropic-ai/sdk`) against a local server that
 * speaks the Messages protocol: a model that loops is stopped by the guard exactly as
 * docs/spec.md §3 says, and its API key never reaches workflow history, traces or the result.
 * The server is an endpoint configured on the worker (AGENT_MODEL_ENDPOINTS); a run only
 * names it, and a run that brings its own URL or an unknown name sends nothing (issue #10).
 */
import { temporal } from '@temporalio/proto';
import { startAgentRun } from '../../client/api';
import { reportQuery, resumeUpdate, statusQuery, traceQuery, type RunResult } from '../../common/contracts';
import { startAnthropicServer } from '../planners/servers/anthropic-server';
import { startHarness, type Harness } from '../helpers/run-harness';
import { waitFor } from '../helpers/run-inputs';
import { runResult } from '../helpers/run-result';

const KEY = 'sk-ant-api03-durable-run-secret-0123456789';
/** The worker's own env var for the local endpoint's key. */
const KEY_ENV = 'LOCAL_CLAUDE_API_KEY';
const PLANNER = {
  kind: 'anthropic',
  model: 'claude-sonnet-4-6',
  maxTokens: 256,
  endpoint: 'local-claude',
} as const;

describe('a durable run with the Anthropic planner', () => {
  let h: Harness;
  let server: Awaited<ReturnType<typeof startAnthropicServer>>;

  beforeAll(async () => {
    // The worker's planner reads its key from the environment inside the activity.
    process.env[KEY_ENV] = KEY;
    server = await startAnthropicServer(() => ({
      content: [
        { type: 'text', text: 'Searching once more should do it.' },
        { type: 'tool_use', name: 'search', input: { query: 'temporal', requestId: `r-${Math.random()}` } },
      ],
      usage: { input_tokens: 120, output_tokens: 30 },
    }));
    // Worker configuration: the only place a model URL can come from.
    process.env.AGENT_MODEL_ENDPOINTS = JSON.stringify({
      'local-claude': { provider: 'anthropic', baseURL: server.origin, apiKeyEnv: KEY_ENV },
    });
    h = await startHarness();
  });
  afterAll(async () => {
    await h?.close();
    await server?.close();
    delete process.env[KEY_ENV];
    delete process.env.AGENT_MODEL_ENDPOINTS;
  });

  it('stops a looping model before its third identical search, and keeps the key out of history', async () => {
    const run = await h.start({
      goal: 'find out how Temporal survives crashes',
      planner: PLANNER,
      resumeWindowMs: 500,
    });
    const result: RunResult = await runResult(run);

    expect(result).toMatchObject({
      terminal_state: 'STOPPED_LOOP_GUARD',
      reason: 'same_call_repeat',
      executed: 2,
    });
    // An LLM run steers twice by default (docs/spec.md §3.3): the model is told, ignores it, stops.
    expect(result.decisions.map((d) => d.decision)).toEqual(['execute', 'execute', 'steer', 'steer', 'stop']);
    // The tool really ran twice, never a third time.
    expect(await h.counters(run.workflowId)).toEqual({ search: 2 });
    // Five model requests (sameCallLimit + steerLimit + 1) and the model's final word with tool use
    // off (issue 30: its tool call runs nothing, its text is the final message), each with the key.
    expect(server.messageRequests()).toHaveLength(6);
    expect(server.messageRequests()[5]).toMatchObject({ tool_choice: { type: 'none' } });
    expect(result.final_message).toBe('Searching once more should do it.');
    const auth = server.requests.map((r) => String(r.headers.authorization ?? r.headers['x-api-key'] ?? ''));
    expect(auth.every((a) => a.includes(KEY))).toBe(true);
    // Token usage reached the guard's budgets.
    const status = await run.handle.query('status');
    expect((status as { usage: { tokens: number } }).usage.tokens).toBe(6 * 150);

    const history = await run.handle.fetchHistory();
    const bytes = Buffer.from(temporal.api.history.v1.History.encode(history).finish());
    expect(bytes.length).toBeGreaterThan(1000);
    expect(bytes.includes(Buffer.from(KEY))).toBe(false);
    expect(bytes.includes(Buffer.from('sk-ant-'))).toBe(false);
    const trace = await run.handle.query(traceQuery, { limit: 1000 });
    expect(JSON.stringify(trace)).not.toContain(KEY);
    expect(JSON.stringify(result)).not.toContain(KEY);
  });

  it('resumes a stopped LLM run with the conversation intact, and tells the model what changed first', async () => {
    const run = await h.start({
      goal: 'keep researching',
      planner: PLANNER,
      // Without steering: the stop itself is what the model learns of, with the resume.
      guard: { steerLimit: 0 },
      resumeWindowMs: 60_000,
    });
    await waitFor(
      () => run.handle.query(statusQuery),
      (s) => s.waitingForResume,
    );
    const requestsBefore = server.messageRequests().length;
    // Nothing changed yet: refused, and the model is not asked.
    const refused = await run.handle.executeUpdate(resumeUpdate, {
      args: [{ actor: 'ops', reason: 'try again', requestId: 'resume-llm-0' }],
    });
    expect(refused.accepted).toBe(false);
    await h.deps.world.addDoc('doc-llm-1', 'temporal', 'Temporal replays history', 'New fact for the model.');
    const answer = await run.handle.executeUpdate(resumeUpdate, {
      args: [
        {
          actor: 'ops',
          reason: 'new docs indexed',
          requestId: 'resume-llm',
          note: 'Use the new document; the older results are stale.',
        },
      ],
    });
    expect(answer.accepted).toBe(true);
    // The demo world's version moved: verified without running the search again.
    expect(answer.reason).toMatch(/external state moved/);
    // The model loops again and the guard stops it again, two searches later.
    await waitFor(
      () => run.handle.query(statusQuery),
      (s) => s.waitingForResume && s.executed === 4,
    );
    expect(await h.counters(run.workflowId)).toEqual({ search: 4 });
    // Every request after the resume is well-formed for the API (the server rejects a
    // tool_use without its tool_result); the first one ends with the resume's note: who, why,
    // the operator's note, what was verified, and that what it read before may be stale.
    const after = server.messageRequests().slice(requestsBefore);
    expect(after.length).toBeGreaterThanOrEqual(2);
    const first = after[0] as { messages: { role: string; content: unknown }[] };
    const last = first.messages[first.messages.length - 1]!;
    expect(last.role).toBe('user');
    const told = JSON.stringify(last.content);
    expect(told).toContain('resumed by ops: new docs indexed');
    expect(told).toContain("Operator's note: Use the new document; the older results are stale.");
    expect(told).toContain('Verified before resuming: external state moved');
    expect(told).toContain('may be out of date: read again');
    // Said once, where it happened: the next request holds it in the same place, not twice.
    const second = JSON.stringify((after[1] as { messages: unknown[] }).messages);
    expect(second.split('resumed by ops').length - 1).toBe(1);
    await run.handle.terminate('test done');
  });

  it('stops NEEDS_HUMAN (planner_failed) when the key is missing, and continues once it is set', async () => {
    delete process.env[KEY_ENV];
    const run = await h.start({
      goal: 'research without a key',
      planner: PLANNER,
      resumeWindowMs: 60_000,
    });
    const stopped = await waitFor(
      () => run.handle.query(statusQuery),
      (s) => s.waitingForResume,
    );
    expect(stopped).toMatchObject({
      terminalState: 'NEEDS_HUMAN',
      guardReason: 'planner_failed',
      executed: 0,
    });
    const report = await run.handle.query(reportQuery);
    expect(report?.unmet_precondition).toMatch(/MissingApiKeyError: .*LOCAL_CLAUDE_API_KEY/);
    expect(await h.counters(run.workflowId)).toEqual({});

    process.env[KEY_ENV] = KEY;
    const answer = await run.handle.executeUpdate(resumeUpdate, {
      args: [{ actor: 'ops', reason: 'key configured', requestId: 'key-set' }],
    });
    expect(answer.accepted).toBe(true);
    await waitFor(
      () => run.handle.query(statusQuery),
      (s) => s.waitingForResume && s.guardReason === 'same_call_repeat',
    );
    expect(await h.counters(run.workflowId)).toEqual({ search: 2 });
    await run.handle.terminate('test done');
  });

  it('stops NEEDS_HUMAN (planner_failed) naming the configured endpoints when a run names an unknown one, and sends nothing', async () => {
    const before = server.requests.length;
    const run = await h.start({
      goal: 'research somewhere else',
      planner: { ...PLANNER, endpoint: 'not-configured' },
      resumeWindowMs: 60_000,
    });
    const stopped = await waitFor(
      () => run.handle.query(statusQuery),
      (s) => s.waitingForResume,
    );
    expect(stopped).toMatchObject({
      terminalState: 'NEEDS_HUMAN',
      guardReason: 'planner_failed',
      executed: 0,
    });
    const report = await run.handle.query(reportQuery);
    expect(report?.unmet_precondition).toMatch(
      /EndpointNotConfiguredError: planner endpoint "not-configured" is not configured on this worker; configured anthropic endpoints: anthropic, local-claude/,
    );
    expect(server.requests.length).toBe(before);
    expect(await h.counters(run.workflowId)).toEqual({});
    await run.handle.terminate('test done');
  });

  it('never sends a request (or the key) to a baseURL in the run input', async () => {
    const attacker = await startAnthropicServer([
      { content: [{ type: 'text', text: 'thanks for the key' }] },
    ]);
    try {
      const input = { goal: 'exfiltrate', planner: { ...PLANNER, baseURL: attacker.origin } };
      // The client API refuses it outright, naming the field …
      await expect(
        startAgentRun(h.env.client, { input: input as never, taskQueue: h.taskQueue }),
      ).rejects.toThrow(/planner\.baseURL is not accepted: a run cannot choose where the worker sends/);
      // … and a raw Temporal start gets no further: the workflow fails at once, naming the
      // field, before it plans anything.
      const run = await h.start(input as never);
      await expect(run.result()).rejects.toMatchObject({
        cause: {
          message: expect.stringMatching(/invalid run input: planner: planner\.baseURL is not accepted/),
        },
      });
      expect(attacker.requests).toHaveLength(0);
    } finally {
      await attacker.close();
    }
  });
});
