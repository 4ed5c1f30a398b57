/**
 * Sub-agents under an LLM planner (docs/spec.md §7.14), durable, through the official OpenAI
 * SDK against a local Chat Completions server: the root model delegates with `spawn_agent`,
 * the child model (the same planner spec, its own conversation) sees only the tools it was
 * given and writes once; the root's usage includes the child's, priced per model.
 */
import { statusQuery, type RunResult } from '../../common/contracts';
import { startOpenAIServer, type OpenAIServer } from '../../testing/openai-server';
import type { RecordedRequest } from '../../testing/http-script';
import { startHarness, type Harness } from '../helpers/run-harness';
import { runResult } from '../helpers/run-result';

const KEY_ENV = 'SUBAGENT_LLM_KEY';
const PLANNER = { kind: 'openai', model: 'gpt-4o-mini', maxTokens: 256, endpoint: 'tree-llm' } as const;
const USAGE = { prompt_tokens: 1000, completion_tokens: 100 };

type Msg = { role: string; content?: unknown };
const messages = (req: RecordedRequest) => ((req.body as { messages?: Msg[] }).messages ?? []) as Msg[];
const goalOf = (req: RecordedRequest) => String(messages(req).find((m) => m.role === 'user')?.content ?? '');
const toolNames = (body: Record<string, unknown>) =>
  ((body.tools as { function: { name: string } }[] | undefined) ?? []).map((t) => t.function.name).sort();
const toolResults = (req: RecordedRequest) => messages(req).filter((m) => m.role === 'tool').length;

describe('sub-agents under an LLM planner (durable, OpenAI protocol)', () => {
  let h: Harness;
  let model: OpenAIServer;
  let looping: OpenAIServer;

  beforeAll(async () => {
    process.env[KEY_ENV] = 'sk-test-tree';
    model = await startOpenAIServer((_i, req) => {
      const child = goalOf(req).startsWith('CHILD-GOAL');
      const seen = toolResults(req);
      if (child)
        return seen === 0
          ? {
              tool_calls: [{ name: 'write_record', arguments: '{"id":"tree-1","body":"by the child"}' }],
              usage: USAGE,
            }
          : {
              tool_calls: [{ name: 'complete_task', arguments: '{"summary":"child wrote tree-1"}' }],
              usage: USAGE,
            };
      if (seen === 0)
        return {
          tool_calls: [
            {
              name: 'spawn_agent',
              arguments: JSON.stringify({
                goal: 'CHILD-GOAL write tree-1',
                tools: ['write_record', 'complete_task'],
              }),
            },
          ],
          usage: USAGE,
        };
      return { tool_calls: [{ name: 'complete_task', arguments: '{"summary":"delegated"}' }], usage: USAGE };
    });
    // A root that keeps spawning children whose models loop on cost (a new search each turn).
    looping = await startOpenAIServer((_i, req) => {
      const goal = goalOf(req);
      const n = toolResults(req);
      if (goal.startsWith('LOOP-CHILD'))
        return {
          tool_calls: [{ name: 'search', arguments: JSON.stringify({ query: `${goal} ${n}` }) }],
          usage: USAGE,
        };
      const spawn = { goal: `LOOP-CHILD-${n}`, tools: ['search'], budget: { maxCostUsd: 0.002 } };
      return { tool_calls: [{ name: 'spawn_agent', arguments: JSON.stringify(spawn) }], usage: USAGE };
    });
    process.env.AGENT_MODEL_ENDPOINTS = JSON.stringify({
      'tree-llm': { provider: 'openai', baseURL: model.baseURL, apiKeyEnv: KEY_ENV },
      'tree-loop': { provider: 'openai', baseURL: looping.baseURL, apiKeyEnv: KEY_ENV },
    });
    h = await startHarness();
  });
  afterAll(async () => {
    await h?.close();
    await model?.close();
    await looping?.close();
    delete process.env[KEY_ENV];
    delete process.env.AGENT_MODEL_ENDPOINTS;
  });

  it('the root delegates, the child sees only its tools and writes once, and the root pays for both', async () => {
    const before = model.completionRequests().length;
    const run = await h.start({
      goal: 'ROOT-GOAL get tree-1 written',
      planner: PLANNER,
      subAgents: {},
      guard: { maxSteps: 10, maxCostUsd: 1 },
      resumeWindowMs: 500,
    });
    const result: RunResult = await runResult(run);
    expect(result).toMatchObject({ terminal_state: 'COMPLETED', summary: 'delegated' });
    const childId = `${run.workflowId}/sub-1`;
    expect(await h.counters(childId)).toEqual({ write_record: 1, complete_task: 1 });
    expect(await h.counters(run.workflowId)).toEqual({ complete_task: 1 });

    const requests = model.completionRequests().slice(before);
    expect(requests).toHaveLength(4); // root spawn, child write, child finish, root finish
    const rootTools = toolNames(requests[0]!);
    expect(rootTools).toContain('spawn_agent');
    expect(rootTools).toContain('deploy');
    // The child was offered exactly the tools it was given: no spawn_agent, no deploy.
    expect(toolNames(requests[1]!)).toEqual(['complete_task', 'write_record']);

    // Four model calls at gpt-4o-mini's list price, two of them the child's, all on the root.
    const perCall = (1000 * 0.15 + 100 * 0.6) / 1e6;
    const st = await run.handle.query(statusQuery);
    expect(st.usage.tokens).toBe(4 * 1100);
    expect(st.usage.costUsd).toBeCloseTo(4 * perCall, 10);
    expect(st.children?.[0]?.used).toMatchObject({ steps: 2, tokens: 2200 });
    expect(st.children?.[0]?.used?.costUsd).toBeCloseTo(2 * perCall, 10);
  });

  it("a tree whose children loop on cost is billed no more than the root's maxCostUsd", async () => {
    const cap = 0.005;
    const run = await h.start({
      goal: 'LOOP-ROOT delegate',
      planner: { ...PLANNER, endpoint: 'tree-loop' },
      subAgents: {},
      guard: { maxSteps: 500, noProgressLimit: 500, maxCostUsd: cap },
      resumeWindowMs: 500,
    });
    const result: RunResult = await runResult(run);
    expect(result).toMatchObject({ terminal_state: 'STOPPED_LOOP_GUARD', reason: 'cost_budget' });
    const st = await run.handle.query(statusQuery);
    // Each child got at most 0.002 and was stopped by its own budget; the tree stopped on the root's.
    expect((st.children ?? []).length).toBeGreaterThanOrEqual(2);
    for (const c of st.children ?? []) {
      expect(c.state).toBe('STOPPED_LOOP_GUARD');
      expect(c.used!.costUsd).toBeLessThanOrEqual(0.002 + 1e-12);
    }
    // The bill, by the server's own count, stays within the root's budget and uses most of it.
    const perCall = (1000 * 0.15 + 100 * 0.6) / 1e6;
    const billed = looping.completionRequests().length * perCall;
    expect(billed).toBeLessThanOrEqual(cap + 1e-12);
    expect(billed).toBeGreaterThan(cap * 0.6);
    expect(st.usage.costUsd).toBeCloseTo(billed, 10);
  });
});
