/**
 * The turn engine, with a fake provider: the observation text the model reads, the
 * queue of parallel calls, and the protocol errors for memory that does not fit.
 */
import { PlannerProtocolError } from '../../planners/errors';
import {
  CONTINUE_PROMPT,
  NOT_EXECUTED_CONTENT,
  observationContent,
  runTurn,
  toolParameters,
  type ModelReply,
  type PendingCall,
  type ProviderAdapter,
} from '../../planners/llm-common';
import type { PlannerSpec } from '../../common/planner';
import { SEARCH_TOOL, observe, turnInput } from './helpers';

type Msg = { role: 'user' | 'assistant' | 'tool'; text: string };

/** A provider whose replies are scripted and whose messages are `{role, text}`. */
function fakeProvider(replies: Array<Omit<ModelReply<Msg>, 'message' | 'usage'>>) {
  const requests: Msg[][] = [];
  const adapter: ProviderAdapter<Msg> = {
    provider: 'anthropic',
    userMessage: (text) => ({ role: 'user', text }),
    isAssistant: (m) => m.role === 'assistant',
    appendToolResult: (messages, call: PendingCall, content, isError) =>
      messages.push({ role: 'tool', text: `${call.id}${isError ? '!' : ''} ${content}` }),
    async request(messages) {
      requests.push(messages.map((m) => ({ ...m })));
      const next = replies.shift();
      if (!next) throw new Error('no scripted reply left');
      return { ...next, message: { role: 'assistant', text: next.text }, usage: { tokens: 7, costUsd: 0.1 } };
    },
  };
  return { adapter, requests };
}

const FAKE_SPEC: PlannerSpec = { kind: 'anthropic', model: 'm', maxTokens: 10 };
const call = (id: string, q: string): PendingCall => ({ id, tool: 'search', args: { q } });

describe('observationContent', () => {
  it('writes compact JSON with the fields in a fixed order and cuts big data', () => {
    expect(observationContent({ tool: 't', kind: 'FATAL', code: 'permission_denied' })).toBe(
      '{"kind":"FATAL","code":"permission_denied"}',
    );
    expect(observationContent({ tool: 't', kind: 'SUCCESS', data: null })).toBe(
      '{"kind":"SUCCESS","data":null}',
    );
    const big = observationContent({ tool: 't', kind: 'SUCCESS', data: 'x'.repeat(100) }, 20);
    expect(JSON.parse(big)).toEqual({
      kind: 'SUCCESS',
      data_truncated: true,
      data_preview: `"${'x'.repeat(19)}`,
    });
  });
});

describe('toolParameters', () => {
  it('drops $schema and always describes an object', () => {
    expect(toolParameters(SEARCH_TOOL)).not.toHaveProperty('$schema');
    expect(toolParameters({ ...SEARCH_TOOL, inputSchema: {} })).toEqual({ type: 'object' });
  });
});

const OPTS = { maxObservationChars: 100, budgetChars: 100_000 };

describe('runTurn', () => {
  it('hands out the calls of one reply one per turn, asking the model only once all have results', async () => {
    const { adapter, requests } = fakeProvider([
      { calls: [call('a', '1'), call('b', '2')], text: '' },
      { calls: [], text: 'done' },
    ]);
    const t1 = await runTurn(turnInput(FAKE_SPEC, null), adapter, OPTS);
    expect(t1.turn).toMatchObject({ type: 'call', callId: 'a', usage: { tokens: 7 } });
    const t2 = await runTurn(
      turnInput(FAKE_SPEC, t1.memory, observe(t1, { kind: 'SUCCESS' })),
      adapter,
      OPTS,
    );
    expect(t2.turn).toEqual({
      type: 'call',
      tool: 'search',
      args: { q: '2' },
      callId: 'b',
      usage: { tokens: 0, costUsd: 0 },
    });
    expect(requests).toHaveLength(1);
    const t3 = await runTurn(turnInput(FAKE_SPEC, t2.memory, observe(t2, { kind: 'FATAL' })), adapter, OPTS);
    expect(t3.turn).toEqual({
      type: 'finish',
      summary: 'done',
      usage: { tokens: 7, costUsd: 0.1 },
      ended: 'text',
    });
    expect(requests[1]?.slice(2)).toEqual([
      { role: 'tool', text: 'a {"kind":"SUCCESS"}' },
      { role: 'tool', text: 'b! {"kind":"FATAL"}' },
    ]);
  });

  it('answers an awaited call the runtime never ran with NOT_EXECUTED, and re-asks after a finish', async () => {
    const { adapter, requests } = fakeProvider([
      { calls: [call('a', '1')], text: '' },
      { calls: [], text: 'first answer' },
      { calls: [], text: 'second answer' },
    ]);
    const t1 = await runTurn(turnInput(FAKE_SPEC, null), adapter, OPTS);
    const t2 = await runTurn(turnInput(FAKE_SPEC, t1.memory, null), adapter, OPTS);
    expect(requests[1]?.[2]).toEqual({ role: 'tool', text: `a! ${NOT_EXECUTED_CONTENT}` });
    await runTurn(turnInput(FAKE_SPEC, t2.memory, null), adapter, OPTS);
    expect(requests[2]?.at(-1)).toEqual({ role: 'user', text: CONTINUE_PROMPT });
  });

  it('refuses an observation nothing awaits, one for another call, and memory that is not its own', async () => {
    const { adapter } = fakeProvider([{ calls: [call('a', '1')], text: '' }]);
    const stray = { tool: 'search', kind: 'SUCCESS' } as const;
    await expect(runTurn(turnInput(FAKE_SPEC, null, stray), adapter, OPTS)).rejects.toThrow(
      PlannerProtocolError,
    );
    const t1 = await runTurn(turnInput(FAKE_SPEC, null), adapter, OPTS);
    await expect(
      runTurn(turnInput(FAKE_SPEC, t1.memory, { ...stray, callId: 'other' }), adapter, OPTS),
    ).rejects.toThrow(/does not answer the awaited call search \(a\)/);
    await expect(runTurn(turnInput(FAKE_SPEC, { v: 3 }), adapter, OPTS)).rejects.toThrow(
      PlannerProtocolError,
    );
  });
});
