/**
 * The long-run model server (scripts/long-model/server.ts) through the real `openai` and
 * `@anthropic-ai/sdk` clients: the context-window refusal, determinism, the final answer
 * after N notes, the tool-protocol check, and note detection from text.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import {
  highestNoteIn,
  noteBody,
  startLongModelServer,
  type LongModelServer,
} from '../../scripts/long-model/server';

type ChatMessage = OpenAI.Chat.Completions.ChatCompletionMessageParam;

const servers: LongModelServer[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

async function start(turns: number, windowChars = 300_000, noteChars = 300): Promise<LongModelServer> {
  const s = await startLongModelServer({ turns, windowChars, noteChars });
  servers.push(s);
  return s;
}

const tools: OpenAI.Chat.Completions.ChatCompletionFunctionTool[] = [
  {
    type: 'function',
    function: { name: 'write_record', description: 'write', parameters: { type: 'object' } },
  },
];

function openai(s: LongModelServer): OpenAI {
  return new OpenAI({ baseURL: s.baseURL, apiKey: 'dummy', maxRetries: 0 });
}

function anthropic(s: LongModelServer): Anthropic {
  return new Anthropic({ baseURL: s.origin, apiKey: 'dummy', maxRetries: 0 });
}

async function chat(
  client: OpenAI,
  messages: ChatMessage[],
): Promise<OpenAI.Chat.Completions.ChatCompletion> {
  return client.chat.completions.create({ model: 'long-model', messages, tools, max_tokens: 1024 });
}

/** Runs the OpenAI conversation for `turns` replies, answering every tool call. */
async function converse(client: OpenAI, messages: ChatMessage[], turns: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < turns; i++) {
    const msg = (await chat(client, messages)).choices[0]!.message;
    messages.push({ role: 'assistant', content: msg.content, tool_calls: msg.tool_calls });
    for (const tc of msg.tool_calls ?? []) {
      // The last turn finishes with the finishing tool (issue 30): recorded with its summary.
      const done = tc.type === 'function' && tc.function.name === 'complete_task';
      ids.push(done ? `done:${(JSON.parse(tc.function.arguments) as { summary: string }).summary}` : tc.id);
      messages.push({ role: 'tool', tool_call_id: tc.id, content: '{"kind":"SUCCESS"}' });
    }
    if (!msg.tool_calls) ids.push(`final:${msg.content}`);
  }
  return ids;
}

describe('long-model server, OpenAI protocol', () => {
  test('writes note-1 … note-N with write_record, one per request, then finishes with complete_task', async () => {
    const s = await start(3);
    const messages: ChatMessage[] = [
      { role: 'system', content: 'You write notes.' },
      { role: 'user', content: 'Write notes note-<n> for n = 1 … 3.' },
    ];
    const first = (await chat(openai(s), messages)).choices[0]!;
    expect(first.finish_reason).toBe('tool_calls');
    expect(first.message.tool_calls).toHaveLength(1);
    const tc = first.message.tool_calls![0]!;
    expect(tc.id).toBe('call_note_1');
    expect(tc.type === 'function' && tc.function.name).toBe('write_record');
    const args = JSON.parse(tc.type === 'function' ? tc.function.arguments : '{}') as {
      id: string;
      body: string;
    };
    expect(args).toEqual({ id: 'note-1', body: noteBody(1, 300) });
    expect(args.body).toHaveLength(300);

    const rest = await converse(openai(s), messages.slice(), 4);
    expect(rest).toEqual(['call_note_1', 'call_note_2', 'call_note_3', 'done:All 3 notes written.']);
    const st = s.stats();
    expect(st).toMatchObject({
      requests: 5,
      accepted: 5,
      refusedForContext: 0,
      protocolErrors: 0,
      finished: 1,
      lastNote: 3,
    });
    expect(st.perRequest.map((r) => r.note)).toEqual([1, 1, 2, 3, 0]);
  });

  test('deterministic: the same request gets the same reply (tool-call id, args, usage)', async () => {
    const s = await start(10);
    const messages: ChatMessage[] = [{ role: 'user', content: 'go' }];
    await converse(openai(s), messages, 2);
    const a = await chat(openai(s), messages);
    const b = await chat(openai(s), messages);
    expect(b.choices).toEqual(a.choices);
    expect(b.usage).toEqual(a.usage);
    expect(a.choices[0]!.message.tool_calls![0]!.id).toBe('call_note_3');
    // usage: prompt = ceil(conversation chars / 4), completion = ceil(noteChars / 4)
    expect(a.usage?.prompt_tokens).toBe(Math.ceil(JSON.stringify(messages).length / 4));
    expect(a.usage?.completion_tokens).toBe(75);
  });

  test('a conversation larger than the window is refused like the real API, and counted', async () => {
    const s = await start(10, 2_000);
    const messages: ChatMessage[] = [{ role: 'user', content: 'x'.repeat(2_100) }];
    const chars = JSON.stringify(messages).length;
    const err = (await chat(openai(s), messages).catch((e: unknown) => e)) as InstanceType<
      typeof OpenAI.BadRequestError
    >;
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err.status).toBe(400);
    expect(err.code).toBe('context_length_exceeded');
    expect(err.param).toBe('messages');
    expect(err.message).toContain(
      `maximum context length is 500 tokens. However, your messages resulted in ${Math.ceil(chars / 4)} tokens.`,
    );
    // Just inside the window: accepted.
    const fits: ChatMessage[] = [{ role: 'user', content: 'x'.repeat(2_000 - 30) }];
    expect(JSON.stringify(fits).length).toBeLessThanOrEqual(2_000);
    await chat(openai(s), fits);
    const st = s.stats();
    expect(st).toMatchObject({ requests: 2, accepted: 1, refusedForContext: 1, protocolErrors: 0 });
    expect(st.maxRequestChars).toBe(chars);
    expect(st.maxAcceptedRequestChars).toBe(JSON.stringify(fits).length);
    expect(st.perRequest[0]).toMatchObject({ chars, note: null, status: 400 });
  });

  test('a tool call left unanswered is a 400 protocol error', async () => {
    const s = await start(10);
    const messages: ChatMessage[] = [{ role: 'user', content: 'go' }];
    const msg = (await chat(openai(s), messages)).choices[0]!.message;
    messages.push({ role: 'assistant', content: msg.content, tool_calls: msg.tool_calls });
    messages.push({ role: 'user', content: 'no tool result in between' });
    const err = (await chat(openai(s), messages).catch((e: unknown) => e)) as Error;
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err.message).toContain('Missing: call_note_1');
    expect(s.stats()).toMatchObject({ requests: 2, accepted: 1, protocolErrors: 1, refusedForContext: 0 });
  });

  test('a note mentioned only in text (a compaction run-state note) counts as written', async () => {
    const s = await start(50);
    const messages: ChatMessage[] = [
      { role: 'system', content: 'You write notes.' },
      {
        role: 'user',
        content: 'Run state: completed operations record:note-40:ab12, record:note-41:cd34; version 41.',
      },
    ];
    const msg = (await chat(openai(s), messages)).choices[0]!.message;
    expect(msg.tool_calls![0]!.id).toBe('call_note_42');
    expect(highestNoteIn('record:note-7:x anote-99 note-12 note-3')).toBe(12);
  });

  test('GET /, /v1 and /stats answer 200', async () => {
    const s = await start(5);
    for (const url of [`${s.origin}/`, s.baseURL]) expect((await fetch(url)).status).toBe(200);
    const st = (await (await fetch(`${s.origin}/stats`)).json()) as { turns: number; requests: number };
    expect(st).toMatchObject({ turns: 5, requests: 0 });
  });
});

describe('long-model server, Anthropic protocol', () => {
  type Param = Anthropic.Messages.MessageParam;
  const create = (client: Anthropic, messages: Param[]) =>
    client.messages.create({
      model: 'long-model',
      max_tokens: 1024,
      system: 'You write notes.',
      messages,
      tools: [{ name: 'write_record', input_schema: { type: 'object' } }],
    });

  test('notes one per request, deterministic, complete_task after N, protocol and window checked', async () => {
    const s = await start(2, 3_000);
    const client = anthropic(s);
    const messages: Param[] = [{ role: 'user', content: 'Write notes note-<n>.' }];
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const reply = await create(client, messages);
      if (i === 0) expect((await create(client, messages)).content).toEqual(reply.content);
      messages.push({ role: 'assistant', content: reply.content });
      const uses = reply.content.filter((b) => b.type === 'tool_use');
      expect(reply.stop_reason).toBe('tool_use');
      const done = uses.find((u) => u.name === 'complete_task');
      if (done) {
        ids.push((done.input as { summary: string }).summary);
        break;
      }
      for (const u of uses) {
        ids.push(u.id);
        expect(u.input).toEqual({ id: `note-${ids.length}`, body: noteBody(ids.length, 300) });
      }
      messages.push({
        role: 'user',
        content: uses.map((u) => ({ type: 'tool_result', tool_use_id: u.id, content: 'ok' })),
      });
    }
    expect(ids).toEqual(['toolu_note_1', 'toolu_note_2', 'All 2 notes written.']);

    // A tool_use without its tool_result: 400.
    const broken: Param[] = [...messages.slice(0, 2), { role: 'user', content: 'skip the result' }];
    await expect(create(client, broken)).rejects.toThrow(/tool_use ids were found without tool_result/);
    // Over the window (system + messages counted): 400 "prompt is too long".
    const big: Param[] = [{ role: 'user', content: 'y'.repeat(3_000) }];
    const chars = JSON.stringify('You write notes.').length + JSON.stringify(big).length;
    const err = (await create(client, big).catch((e: unknown) => e)) as Error;
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect(err.message).toContain(`prompt is too long: ${Math.ceil(chars / 4)} tokens > 750 maximum`);
    // The run-state note of a compacted conversation: note-7 mentioned in text.
    const compacted = await create(client, [{ role: 'user', content: 'done so far: record:note-1:aa' }]);
    expect(compacted.content.find((b) => b.type === 'tool_use')).toMatchObject({ id: 'toolu_note_2' });

    expect(s.stats()).toMatchObject({
      requests: 7,
      accepted: 5,
      refusedForContext: 1,
      protocolErrors: 1,
      finished: 1,
      lastNote: 2,
      maxRequestChars: chars,
    });
  });
});
