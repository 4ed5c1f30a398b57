/**
 * A model that loops, driven through the real SDKs and the pure loop guard: the guard,
 * not the prompt, stops it (docs/spec.md §3 rule 5), and the planner's token usage feeds the
 * guard's cost budget (rule 3).
 */
import { createAnthropicPlanner } from '../../planners/anthropic';
import { createOpenAIPlanner } from '../../planners/openai';
import type { Observation, Planner, PlannerSpec } from '../../common/planner';
import { LoopGuard, normalizeCall, type GuardConfigInput } from '../../guard';
import { turnInput } from './helpers';
import { startAnthropicServer } from './servers/anthropic-server';
import type { RunningServer } from '../../testing/http-script';
import { startOpenAIServer } from '../../testing/openai-server';

interface Harness {
  readonly server: RunningServer;
  readonly planner: Planner;
  readonly spec: PlannerSpec;
  /** How many model requests the server answered. */
  readonly modelRequests: () => number;
}

type Usage = { input: number; output: number };

/** The looping model of each protocol: every reply proposes `search {q:"x"}` again. */
const harnesses: Record<string, (usage: Usage) => Promise<Harness>> = {
  anthropic: async (usage) => {
    const server = await startAnthropicServer(() => ({
      content: [
        { type: 'text', text: 'I will search again.' },
        { type: 'tool_use', name: 'search', input: { q: 'x' } },
      ],
      usage: { input_tokens: usage.input, output_tokens: usage.output },
    }));
    return {
      server,
      planner: createAnthropicPlanner({
        env: { ANTHROPIC_API_KEY: 'sk-ant-test-loop', ANTHROPIC_BASE_URL: server.origin },
        maxRetries: 0,
        warn: () => {},
      }),
      spec: { kind: 'anthropic', model: 'claude-sonnet-4-6', maxTokens: 256 },
      modelRequests: () => server.messageRequests().length,
    };
  },
  openai: async (usage) => {
    // Same call, differently spelled JSON each time: the fingerprint sees through it.
    const spellings = ['{"q":"x"}', '{ "q": "x" }', '{"q":" x "}'];
    const server = await startOpenAIServer((i) => ({
      tool_calls: [{ name: 'search', arguments: spellings[i % spellings.length] as string }],
      usage: { prompt_tokens: usage.input, completion_tokens: usage.output },
    }));
    return {
      server,
      planner: createOpenAIPlanner({
        env: { LOCAL_LLM_KEY: 'sk-test-loop' },
        endpoints: {
          'local-vllm': { provider: 'openai', baseURL: server.baseURL, apiKeyEnv: 'LOCAL_LLM_KEY' },
        },
        maxRetries: 0,
        warn: () => {},
      }),
      spec: { kind: 'openai', model: 'gpt-4o-mini', maxTokens: 256, endpoint: 'local-vllm' },
      modelRequests: () => server.completionRequests().length,
    };
  },
};

/**
 * The runtime loop in miniature: planner → guard.before → (fake) tool → guard.after →
 * observation → planner …, at a fixed progress version (the search changes nothing).
 */
async function drive(h: Harness, config: GuardConfigInput, maxTurns = 10) {
  const guard = new LoopGuard(config, { startMs: 0 });
  let memory: unknown = null;
  let observation: Observation | null = null;
  let toolRuns = 0;
  const decisions: string[] = [];
  for (let i = 0; i < maxTurns; i++) {
    const now = i * 1000;
    const out = await h.planner.next(turnInput(h.spec, memory, observation));
    memory = out.memory;
    if (out.turn.type !== 'call') return { stop: null, toolRuns, decisions, proposals: i + 1 };
    const { tool, args, callId, usage } = out.turn;
    const { fingerprint } = normalizeCall(tool, args);
    const call = { tool, fingerprint, operationKey: null, usage };
    const before = guard.before(call, now);
    decisions.push(before.decision);
    if (before.decision === 'stop') return { stop: before, toolRuns, decisions, proposals: i + 1 };
    toolRuns += 1;
    const data = { hits: [] };
    const after = guard.after(call, { kind: 'SUCCESS', data }, 0, now);
    if (after.decision === 'stop') return { stop: after, toolRuns, decisions, proposals: i + 1 };
    observation = { callId, tool, kind: 'SUCCESS', data };
  }
  throw new Error('the guard never stopped the looping model');
}

describe.each(Object.keys(harnesses))('a looping %s model', (name) => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.server.close();
    h = undefined;
  });

  test('is stopped with same_call_repeat on its 3rd proposal; the tool ran exactly twice', async () => {
    h = await (harnesses[name] as (u: Usage) => Promise<Harness>)({ input: 100, output: 20 });
    const result = await drive(h, {});
    expect(result.stop).toMatchObject({
      decision: 'stop',
      reason: 'same_call_repeat',
      terminalState: 'STOPPED_LOOP_GUARD',
    });
    expect(result.proposals).toBe(3);
    expect(result.decisions).toEqual(['execute', 'execute', 'stop']);
    expect(result.toolRuns).toBe(2);
    // Three replies, each answered before the next request (the server checks the pairing).
    expect(h.modelRequests()).toBe(3);
  });

  test('its token cost feeds the guard: a tight maxCostUsd stops it first, with cost_budget', async () => {
    // 0.1M in + 0.1M out per reply: $1.8 at Sonnet 4.6 list price, $0.075 for gpt-4o-mini.
    h = await (harnesses[name] as (u: Usage) => Promise<Harness>)({ input: 100_000, output: 100_000 });
    const perReply = name === 'anthropic' ? 1.8 : 0.075;
    const result = await drive(h, { maxCostUsd: perReply * 1.5 });
    expect(result.stop).toMatchObject({ decision: 'stop', reason: 'cost_budget' });
    expect(result.proposals).toBe(2);
    expect(result.toolRuns).toBe(1);
  });
});
