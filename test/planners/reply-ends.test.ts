/**
 * How a reply ends, on every wire (issue 30): a reply cut off at its output limit is asked again
 * once with twice the limit and never handed out as a call; a finish reason the wire does not
 * know is `other`; the final word goes with tool use off. Real SDKs against local servers.
 */
import { createAiSdkPlanner } from '../../planners/ai-sdk';
import { createAnthropicPlanner } from '../../planners/anthropic';
import { createOpenAIPlanner } from '../../planners/openai';
import { MODEL_ENDPOINTS_ENV } from '../../planners/endpoints';
import { resetPricingWarnings } from '../../planners/pricing';
import type { Planner, PlannerSpec } from '../../common/planner';
import { turnInput } from './helpers';
import { startOpenAIServer } from '../../testing/openai-server';
import { startAnthropicServer } from './servers/anthropic-server';
import type { RunningServer } from '../../testing/http-script';

const servers: RunningServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
  resetPricingWarnings();
});

const CUT_CALL = { name: 'send_notification', arguments: '{"to":"ann","te' };

/** The three wires, each against its own server scripted with `openai` / `anthropic` replies. */
async function wire(
  kind: 'openai' | 'anthropic' | 'ai-sdk',
  openaiSteps: Parameters<typeof startOpenAIServer>[0],
  anthropicSteps: Parameters<typeof startAnthropicServer>[0],
): Promise<{ p: Planner; s: PlannerSpec; bodies: () => Array<Record<string, unknown>> }> {
  if (kind === 'anthropic') {
    const server = await startAnthropicServer(anthropicSteps);
    servers.push(server);
    const env = { ANTHROPIC_API_KEY: 'k', ANTHROPIC_BASE_URL: server.origin };
    return {
      p: createAnthropicPlanner({ env, warn: jest.fn() }),
      s: { kind: 'anthropic', model: 'claude-sonnet-4-6', maxTokens: 100 },
      bodies: server.messageRequests,
    };
  }
  const server = await startOpenAIServer(openaiSteps);
  servers.push(server);
  if (kind === 'openai')
    return {
      p: createOpenAIPlanner({
        env: { OPENAI_API_KEY: 'k', OPENAI_BASE_URL: server.baseURL },
        warn: jest.fn(),
      }),
      s: { kind: 'openai', model: 'gpt-4o-mini', maxTokens: 100 },
      bodies: server.completionRequests,
    };
  const env = {
    [MODEL_ENDPOINTS_ENV]: JSON.stringify({
      local: { provider: 'openai-compatible', baseURL: server.baseURL },
    }),
  };
  return {
    p: createAiSdkPlanner({ env, warn: jest.fn() }),
    s: { kind: 'ai-sdk', endpoint: 'local', model: 'gpt-4o-mini', maxTokens: 100 },
    bodies: server.completionRequests,
  };
}

const limitOf = (body: Record<string, unknown> | undefined) =>
  body?.max_tokens ?? body?.max_completion_tokens;

describe.each(['openai', 'anthropic', 'ai-sdk'] as const)('the %s wire', (kind) => {
  it('never hands out a cut-off tool call: asked again with twice the limit, then `truncated`', async () => {
    const { p, s, bodies } = await wire(
      kind,
      () => ({
        tool_calls: [CUT_CALL],
        finish_reason: 'length',
        usage: { prompt_tokens: 50, completion_tokens: 100 },
      }),
      () => ({
        content: [{ type: 'tool_use', name: 'send_notification', input: { to: 'ann' } }],
        stop_reason: 'max_tokens',
        usage: { input_tokens: 50, output_tokens: 100 },
      }),
    );
    const out = await p.next(turnInput(s, null));
    expect(out.turn).toMatchObject({ type: 'finish', ended: 'truncated' });
    // Both replies' usage is the turn's.
    expect(out.turn.usage.tokens).toBe(300);
    expect(bodies().map(limitOf)).toEqual([100, 200]);
  });

  it('a reply cut off once is asked again; the whole call is handed out', async () => {
    const { p, s } = await wire(
      kind,
      [
        { tool_calls: [CUT_CALL], finish_reason: 'length' },
        { tool_calls: [{ name: 'search', arguments: '{"q":"x"}' }] },
      ],
      [
        { content: [{ type: 'text', text: 'I will' }], stop_reason: 'max_tokens' },
        { content: [{ type: 'tool_use', name: 'search', input: { q: 'x' } }] },
      ],
    );
    const out = await p.next(turnInput(s, null));
    expect(out.turn).toMatchObject({ type: 'call', tool: 'search', args: { q: 'x' } });
  });

  it('a finish reason that is not a normal end is `other`; a normal text end is `text`', async () => {
    const { p, s } = await wire(
      kind,
      [{ content: 'filtered', finish_reason: 'content_filter' }],
      [{ content: [{ type: 'text', text: 'filtered' }], stop_reason: 'refusal' }],
    );
    const out = await p.next(turnInput(s, null));
    expect(out.turn).toMatchObject({ type: 'finish', summary: 'filtered', ended: 'other' });
  });

  it('the final word goes with tool use off and a small limit; a call in it is dropped', async () => {
    const { p, s, bodies } = await wire(
      kind,
      // The AI SDK itself refuses a tool call under tool choice none (AI_ToolChoiceViolationError: a
      // failed final word, which changes nothing in a run): its server answers text only.
      [
        kind === 'ai-sdk'
          ? { content: 'I searched twice.' }
          : { content: 'I searched twice.', tool_calls: [{ name: 'search', arguments: '{"q":"x"}' }] },
      ],
      [
        {
          content: [
            { type: 'text', text: 'I searched twice.' },
            { type: 'tool_use', name: 'search', input: { q: 'x' } },
          ],
        },
      ],
    );
    const out = await p.next({ ...turnInput(s, null), finalWord: { reason: 'step_budget' } });
    expect(out.turn).toMatchObject({ type: 'finish', summary: 'I searched twice.' });
    const body = bodies()[0]!;
    expect(JSON.stringify(body.tool_choice)).toMatch(/none/);
    expect(limitOf(body)).toBe(256);
    expect(JSON.stringify(body.messages)).toContain('stopped by its loop guard (step_budget)');
  });
});
