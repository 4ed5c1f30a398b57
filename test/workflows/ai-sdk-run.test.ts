/**
 * Durable runs through the AI SDK planner (issue 20) on the real dev server, against the
 * local servers that speak each protocol, compared with the same model behaviour through the
 * hand-written planners in the same test: one model script, five runs — the OpenAI planner,
 * the AI SDK on an `openai` endpoint (`@ai-sdk/openai` `.chat`), on an `openai-compatible`
 * endpoint, the Anthropic planner, and the AI SDK on an `anthropic` endpoint. The model
 * searches until the guard's note tells it the search is a repeat, then writes once and
 * completes; so the runs agree only if every wire delivers the tool results and the guard's
 * note to the model alike. The conversation lives in the (encrypted) conversation store.
 */
import { temporal } from '@temporalio/proto';
import { reportQuery, resumeUpdate, statusQuery, traceQuery, type RunResult } from '../../common/contracts';
import { openWorkerDeps } from '../../worker/create-worker';
import { openSqlite } from '../../storage/sqlite-driver';
import { waitFor } from '../helpers/run-inputs';
import type { PlannerSpec } from '../../common/planner';
import { startOpenAIServer, type OpenAIServer, type OpenAIStep } from '../../testing/openai-server';
import {
  startAnthropicServer,
  type AnthropicServer,
  type AnthropicStep,
} from '../planners/servers/anthropic-server';
import type { RecordedRequest } from '../../testing/http-script';
import { startHarness, type Harness } from '../helpers/run-harness';
import { runResult } from '../helpers/run-result';

const KEY = 'sk-aisdk-durable-secret-0123456789abcdef';
const KEY_ENV = 'AISDK_RUN_KEY';
/** Each run records under its own id: the ledger's operation keys are shared by all runs. */
const goal = (tag: string) => `find the steering doc and record it as aisdk-${tag}.`;

type Step = { tool: string; args: Record<string, unknown> };

/** The model: search until told of the repeat, then write once, then complete. */
function behaviour(req: RecordedRequest): Step {
  const body = JSON.stringify(req.body);
  if (!body.includes('guard same_call_repeat')) return { tool: 'search', args: { query: 'steering' } };
  const id = /record it as (aisdk-[a-z-]+)/.exec(body)?.[1] ?? 'aisdk-unknown';
  if (!/written.{0,4}true/.test(body)) return { tool: 'write_record', args: { id, body: 'found it' } };
  return { tool: 'complete_task', args: { summary: 'recorded after the note' } };
}

const openaiReply = (_i: number, req: RecordedRequest): OpenAIStep => {
  const s = behaviour(req);
  return {
    tool_calls: [{ name: s.tool, arguments: JSON.stringify(s.args) }],
    usage: { prompt_tokens: 100, completion_tokens: 20 },
  };
};
const anthropicReply = (_i: number, req: RecordedRequest): AnthropicStep => {
  const s = behaviour(req);
  return {
    content: [
      { type: 'text', text: `Calling ${s.tool}.` },
      { type: 'tool_use', name: s.tool, input: s.args },
    ],
    usage: { input_tokens: 100, output_tokens: 20 },
  };
};

interface Variant {
  readonly name: string;
  readonly planner: PlannerSpec;
  readonly requests: () => number;
}

describe('durable runs through the AI SDK planner, compared with the hand-written planners', () => {
  let h: Harness;
  const openai: OpenAIServer[] = [];
  const anthropic: AnthropicServer[] = [];
  let variants: Variant[];

  beforeAll(async () => {
    process.env[KEY_ENV] = KEY;
    for (let i = 0; i < 3; i++) openai.push(await startOpenAIServer(openaiReply, { apiKey: KEY }));
    for (let i = 0; i < 2; i++)
      anthropic.push(await startAnthropicServer(anthropicReply, { apiKey: KEY, nullCitations: false }));
    const [o1, o2, o3] = openai as [OpenAIServer, OpenAIServer, OpenAIServer];
    const [a1, a2] = anthropic as [AnthropicServer, AnthropicServer];
    process.env.AGENT_MODEL_ENDPOINTS = JSON.stringify({
      'own-openai': { provider: 'openai', baseURL: o1.baseURL, apiKeyEnv: KEY_ENV },
      'sdk-openai': { provider: 'openai', baseURL: o2.baseURL, apiKeyEnv: KEY_ENV },
      'sdk-compatible': { provider: 'openai-compatible', baseURL: o3.baseURL, apiKeyEnv: KEY_ENV },
      'own-claude': { provider: 'anthropic', baseURL: a1.origin, apiKeyEnv: KEY_ENV },
      'sdk-claude': { provider: 'anthropic', baseURL: a2.origin, apiKeyEnv: KEY_ENV },
    });
    const gpt = { model: 'gpt-4o-mini', maxTokens: 256 };
    const claude = { model: 'claude-sonnet-4-6', maxTokens: 256 };
    variants = [
      {
        name: 'openai planner',
        planner: { kind: 'openai', endpoint: 'own-openai', ...gpt },
        requests: () => o1.completionRequests().length,
      },
      {
        name: 'ai-sdk openai',
        planner: { kind: 'ai-sdk', endpoint: 'sdk-openai', ...gpt },
        requests: () => o2.completionRequests().length,
      },
      {
        name: 'ai-sdk openai-compatible',
        planner: { kind: 'ai-sdk', endpoint: 'sdk-compatible', ...gpt },
        requests: () => o3.completionRequests().length,
      },
      {
        name: 'anthropic planner',
        planner: { kind: 'anthropic', endpoint: 'own-claude', ...claude },
        requests: () => a1.messageRequests().length,
      },
      {
        name: 'ai-sdk anthropic',
        planner: { kind: 'ai-sdk', endpoint: 'sdk-claude', ...claude },
        requests: () => a2.messageRequests().length,
      },
    ];
    h = await startHarness();
  });
  afterAll(async () => {
    await h?.close();
    for (const s of [...openai, ...anthropic]) await s.close();
    delete process.env[KEY_ENV];
    delete process.env.AGENT_MODEL_ENDPOINTS;
  });

  it('completes with the same guard decisions, tool counters, usage and cost on every wire', async () => {
    const runs = await Promise.all(
      variants.map(async (v) => {
        const tag = v.name.replace(/ /g, '-');
        const run = await h.start({ goal: goal(tag), planner: v.planner, resumeWindowMs: 500 });
        const result: RunResult = await runResult(run);
        const status = await run.handle.query(statusQuery);
        return {
          name: v.name,
          run,
          result,
          decisions: result.decisions.map((d) => [d.decision, d.tool, d.reason ?? null]),
          counters: await h.counters(run.workflowId),
          world: await h.worldCounters(run.workflowId),
          usage: status.usage,
          requests: v.requests(),
        };
      }),
    );
    for (const r of runs) {
      expect([r.name, r.result.terminal_state]).toEqual([r.name, 'COMPLETED']);
      // search twice, the third refused and steered, then one write and the completion.
      expect([r.name, r.counters]).toEqual([r.name, { search: 2, write_record: 1, complete_task: 1 }]);
      expect([r.name, r.world]).toEqual([r.name, { search: 2, write_record: 1, complete_task: 1 }]);
      // Five model requests: three searches (the third steered), the write, the completion.
      expect([r.name, r.requests]).toEqual([r.name, 5]);
    }
    const [ownOpenAI, sdkOpenAI, sdkCompatible, ownClaude, sdkClaude] = runs as [
      (typeof runs)[number],
      (typeof runs)[number],
      (typeof runs)[number],
      (typeof runs)[number],
      (typeof runs)[number],
    ];
    expect(ownOpenAI.decisions).toEqual([
      ['execute', 'search', null],
      ['execute', 'search', null],
      ['steer', 'search', 'same_call_repeat'],
      ['execute', 'write_record', null],
      ['execute', 'complete_task', null],
    ]);
    for (const r of [sdkOpenAI, sdkCompatible, ownClaude, sdkClaude]) {
      expect([r.name, r.decisions]).toEqual([r.name, ownOpenAI.decisions]);
      expect([r.name, r.result.executed]).toEqual([r.name, ownOpenAI.result.executed]);
    }
    // Usage and price reach the guard's budgets alike on each protocol (5 × 120 tokens).
    expect(ownOpenAI.usage.tokens).toBe(600);
    for (const r of [sdkOpenAI, sdkCompatible]) expect([r.name, r.usage]).toEqual([r.name, ownOpenAI.usage]);
    expect(sdkClaude.usage).toEqual(ownClaude.usage);
    expect(ownClaude.usage.costUsd).toBeGreaterThan(0);

    // The key is in no history, trace or result; the conversation is in the store, sealed.
    const db = openSqlite(h.dbUrl.slice('sqlite:'.length), { readOnly: true });
    try {
      for (const r of runs) {
        const history = await r.run.handle.fetchHistory();
        const bytes = Buffer.from(temporal.api.history.v1.History.encode(history).finish());
        expect([r.name, bytes.includes(Buffer.from(KEY))]).toEqual([r.name, false]);
        const trace = await r.run.handle.query(traceQuery, { limit: 1000 });
        expect(JSON.stringify([trace, r.result])).not.toContain(KEY);
        const rows = db
          .prepare('SELECT message FROM agent_conversation WHERE conversation_id = ?')
          .all(r.run.workflowId) as unknown as Array<{ message: string }>;
        // goal, 5 replies, 4 tool results (a tool message or a user message of results).
        expect([r.name, rows.length]).toEqual([r.name, 10]);
        expect(rows.some((row) => row.message.includes('find the steering doc'))).toBe(false);
      }
    } finally {
      db.close();
    }
  });
  it('stops NEEDS_HUMAN planner_failed when the key is missing, names the reason, and continues once it is set', async () => {
    delete process.env[KEY_ENV];
    const v = variants[1]!;
    const before = v.requests();
    try {
      const run = await h.start({ goal: goal('no-key'), planner: v.planner, resumeWindowMs: 60_000 });
      const stopped = await waitFor(
        () => run.handle.query(statusQuery),
        (st) => st.waitingForResume,
      );
      expect(stopped).toMatchObject({
        terminalState: 'NEEDS_HUMAN',
        guardReason: 'planner_failed',
        executed: 0,
      });
      const report = await run.handle.query(reportQuery);
      expect(report?.unmet_precondition).toMatch(/MissingApiKeyError: AISDK_RUN_KEY is not set/);
      expect(v.requests()).toBe(before);
      expect(await h.counters(run.workflowId)).toEqual({});
      // The health check (the lift rule) passes once the key is back: the run goes on.
      process.env[KEY_ENV] = KEY;
      const answer = await run.handle.executeUpdate(resumeUpdate, {
        args: [{ actor: 'ops', reason: 'key configured', requestId: 'aisdk-key-set' }],
      });
      expect(answer.accepted).toBe(true);
      const result: RunResult = await runResult(run);
      expect(result.terminal_state).toBe('COMPLETED');
      expect(await h.counters(run.workflowId)).toEqual({ search: 2, write_record: 1, complete_task: 1 });
    } finally {
      process.env[KEY_ENV] = KEY;
    }
  });

  it('stops NEEDS_HUMAN context_exhausted when the model refuses every request as too long, its tools untouched', async () => {
    const refusing = await startOpenAIServer(() => ({
      error: {
        status: 400,
        type: 'invalid_request_error',
        code: 'context_length_exceeded',
        message: "This model's maximum context length is 8192 tokens.",
      },
    }));
    const endpoints = process.env.AGENT_MODEL_ENDPOINTS!;
    process.env.AGENT_MODEL_ENDPOINTS = JSON.stringify({
      ...JSON.parse(endpoints),
      refusing: { provider: 'openai-compatible', baseURL: refusing.baseURL },
    });
    try {
      const run = await h.start({
        goal: goal('too-long'),
        planner: {
          kind: 'ai-sdk',
          endpoint: 'refusing',
          model: 'small',
          maxTokens: 256,
          contextTokens: 8192,
        },
        resumeWindowMs: 60_000,
      });
      const stopped = await waitFor(
        () => run.handle.query(statusQuery),
        (st) => st.waitingForResume,
      );
      expect(stopped).toMatchObject({
        terminalState: 'NEEDS_HUMAN',
        guardReason: 'context_exhausted',
        executed: 0,
      });
      // The request and its one tighter retry; no activity retry asks again.
      expect(refusing.completionRequests()).toHaveLength(2);
      expect(await h.counters(run.workflowId)).toEqual({});
      await run.handle.terminate('test done');
    } finally {
      process.env.AGENT_MODEL_ENDPOINTS = endpoints;
      await refusing.close();
    }
  });
});

describe('a worker whose model endpoints are unusable', () => {
  it('refuses to start, naming the endpoint and the unknown provider', async () => {
    const saved = process.env.AGENT_MODEL_ENDPOINTS;
    process.env.AGENT_MODEL_ENDPOINTS = JSON.stringify({
      'local-gemini': { provider: 'gemini', baseURL: 'http://127.0.0.1:9/v1' },
    });
    try {
      await expect(openWorkerDeps({ ledgerUrl: 'sqlite::memory:', configPath: null })).rejects.toThrow(
        /AGENT_MODEL_ENDPOINTS: endpoint "local-gemini": provider: provider "gemini" is not a known provider \(known: anthropic, openai, openai-compatible\)/,
      );
    } finally {
      if (saved === undefined) delete process.env.AGENT_MODEL_ENDPOINTS;
      else process.env.AGENT_MODEL_ENDPOINTS = saved;
    }
  });
});
