/**
 * The scripted model of `agent-loop-guard/testing` as the official `openai` SDK sees it: turns
 * from a list or from a function of the conversation, several calls in one reply, a text reply,
 * an API error, a list that runs out (a 400 naming the turn) and a bad turn (a TypeError before
 * the server starts).
 */
import OpenAI from 'openai';
import { startScriptedModel, type ChatMessage, type ScriptedModel } from '../../testing';

const servers: ScriptedModel[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

async function model(...args: Parameters<typeof startScriptedModel>) {
  const m = await startScriptedModel(...args);
  servers.push(m);
  return { m, sdk: new OpenAI({ baseURL: m.baseURL, apiKey: 'none', maxRetries: 0 }) };
}

const ask = (sdk: OpenAI, messages: OpenAI.ChatCompletionMessageParam[]) =>
  sdk.chat.completions.create({ model: 'scripted-model', messages });

describe('startScriptedModel', () => {
  it('answers turn by turn: one call, several calls, a text; then a 400 naming the missing turn', async () => {
    const { m, sdk } = await model([
      { tool: 'get_balance', args: { account: 'acc-1' } },
      { calls: [{ tool: 'a' }, { tool: 'b', args: { x: 1 } }] },
      { text: 'done' },
    ]);
    const first = await ask(sdk, [{ role: 'user', content: 'go' }]);
    const call = first.choices[0]!.message.tool_calls![0]! as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect([
      call.function.name,
      JSON.parse(call.function.arguments),
      first.choices[0]!.finish_reason,
    ]).toEqual(['get_balance', { account: 'acc-1' }, 'tool_calls']);
    const second = await ask(sdk, [{ role: 'user', content: 'go' }]);
    expect(
      (second.choices[0]!.message.tool_calls as OpenAI.ChatCompletionMessageFunctionToolCall[]).map(
        (c) => [c.function.name, c.function.arguments] as const,
      ),
    ).toEqual([
      ['a', '{}'],
      ['b', '{"x":1}'],
    ]);
    const third = await ask(sdk, [{ role: 'user', content: 'go' }]);
    expect([third.choices[0]!.message.content, third.choices[0]!.finish_reason]).toEqual(['done', 'stop']);
    await expect(ask(sdk, [{ role: 'user', content: 'go' }])).rejects.toMatchObject({
      status: 400,
      message: expect.stringMatching(/the script has 3 turns and the model was asked for turn 4/),
    });
    expect(m.turns).toBe(4);
  });

  it('answers from the conversation when the script is a function, and records what it was sent', async () => {
    const seen: number[] = [];
    const { m, sdk } = await model((messages: readonly ChatMessage[], turn) => {
      seen.push(turn);
      return messages.some((x) => x.role === 'tool')
        ? { tool: 'complete_task', args: { summary: 'read it' } }
        : { tool: 'get_balance', args: { account: 'acc-1' } };
    });
    const first = await ask(sdk, [{ role: 'user', content: 'go' }]);
    const id = first.choices[0]!.message.tool_calls![0]!.id;
    const second = await ask(sdk, [
      { role: 'user', content: 'go' },
      first.choices[0]!.message as OpenAI.ChatCompletionMessageParam,
      { role: 'tool', tool_call_id: id, content: '{"cents":1}' },
    ]);
    expect(
      (second.choices[0]!.message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall).function
        .name,
    ).toBe('complete_task');
    expect(seen).toEqual([0, 1]);
    expect(m.conversations().map((c) => c.length)).toEqual([1, 3]);
  });

  it('fails a request as scripted, and turns a throwing function into a 400 naming it', async () => {
    let n = 0;
    const { sdk } = await model(() => {
      if (n++ === 0) return { error: { status: 429, message: 'slow down' } };
      throw new Error('no idea');
    });
    await expect(ask(sdk, [{ role: 'user', content: 'go' }])).rejects.toMatchObject({ status: 429 });
    await expect(ask(sdk, [{ role: 'user', content: 'go' }])).rejects.toMatchObject({
      status: 400,
      message: expect.stringMatching(/the script function threw on turn 1: no idea/),
    });
  });

  it('refuses a list with a turn that is not one before it starts (a TypeError naming the turn)', async () => {
    await expect(
      startScriptedModel([{ tool: 'ok' }, { tool: 'x', args: [1] } as never, { nothing: 1 } as never]),
    ).rejects.toThrow(/turn 1: the args of x must be an object/);
    await expect(startScriptedModel([{ toll: 'get_balance' } as never])).rejects.toThrow(
      /turn 0: a turn is \{ tool, args \}, \{ calls \}, \{ text \} or \{ error \}/,
    );
  });
});
