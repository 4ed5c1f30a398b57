/**
 * The turn engine with a conversation store and a context window (issue 9): the memory the
 * workflow carries stays a small reference however long the conversation grows, every
 * request fits the budget (older turns compacted behind a run-state note), a provider's
 * context refusal is retried once tighter, and a request that cannot fit stops the turn with
 * ContextExhaustedError.
 */
import { MemoryConversations } from '../../storage/conversation-store';
import { ContextExhaustedError, ContextLengthExceededError } from '../../planners/errors';
import {
  compactMessages,
  runStateNote,
  runTurn,
  type ModelReply,
  type PendingCall,
  type ProviderAdapter,
} from '../../planners/llm-common';
import type { PlannerInput, PlannerOutput, RunFacts } from '../../common/planner';
import { SEARCH_TOOL } from '../planners/helpers';

type Msg = { role: 'user' | 'assistant' | 'tool'; text: string };

const FACTS: RunFacts = {
  steps: 41,
  progressVersion: 40,
  completedOperations: 40,
  recentCompleted: ['record:note-39:aa', 'record:note-40:bb'],
  stops: ['same_call_repeat (at step 12)'],
  refusedResumes: [],
  budgetsLeft: { steps: 59, tokens: 1000 },
};

/** A model that writes one note per turn (a call with `noteChars` of args), then finishes after `turns`. */
function noteModel(
  turns: number,
  noteChars: number,
  refuse: (n: number, chars: number) => boolean = () => false,
) {
  const requests: { chars: number; messages: Msg[] }[] = [];
  let calls = 0;
  const adapter: ProviderAdapter<Msg> = {
    provider: 'openai',
    userMessage: (text) => ({ role: 'user', text }),
    isAssistant: (m) => m.role === 'assistant',
    appendToolResult: (messages, call: PendingCall, content) =>
      messages.push({ role: 'tool', text: `${call.id} ${content}` }),
    async request(messages): Promise<ModelReply<Msg>> {
      const chars = messages.reduce((a, m) => a + JSON.stringify(m).length, 0);
      const n = requests.length;
      requests.push({ chars, messages: [...messages] });
      if (refuse(n, chars)) throw new ContextLengthExceededError(`prompt is too long: ${chars} characters`);
      calls += 1;
      if (calls > turns)
        return {
          message: { role: 'assistant', text: 'done' },
          calls: [],
          text: 'done',
          usage: { tokens: 1, costUsd: 0 },
        };
      const body = `${calls}:`.padEnd(noteChars, 'n');
      const call = { id: `c${calls}`, tool: 'write_record', args: { id: `note-${calls}`, body } };
      return {
        message: { role: 'assistant', text: JSON.stringify(call) },
        calls: [call],
        text: '',
        usage: { tokens: 1, costUsd: 0 },
      };
    },
  };
  return { adapter, requests };
}

const input = (memory: unknown, out: PlannerOutput | null, store: MemoryConversations): PlannerInput => ({
  runId: 'run-long',
  goal: 'Write the notes.',
  planner: { kind: 'openai', model: 'm', maxTokens: 10 },
  tools: [SEARCH_TOOL],
  memory,
  observation:
    out && out.turn.type === 'call'
      ? { callId: out.turn.callId, tool: out.turn.tool, kind: 'SUCCESS', data: { ok: true } }
      : null,
  facts: FACTS,
  conversations: store,
});

async function drive(
  adapter: ProviderAdapter<Msg>,
  store: MemoryConversations,
  budgetChars: number,
  max = 1000,
) {
  let out: PlannerOutput | null = null;
  let memory: unknown = null;
  const memorySizes: number[] = [];
  for (let i = 0; i < max; i++) {
    out = await runTurn(input(memory, out, store), adapter, { maxObservationChars: 20_000, budgetChars });
    memory = out.memory;
    memorySizes.push(JSON.stringify(memory).length);
    if (out.turn.type !== 'call') break;
  }
  return { out: out!, memorySizes };
}

describe('compactMessages', () => {
  const head = (omitted: number): Msg => ({ role: 'user', text: `goal + note (${omitted} omitted)` });
  const isAssistant = (m: Msg) => m.role === 'assistant';
  const conv: Msg[] = [
    { role: 'user', text: 'goal' },
    { role: 'assistant', text: 'a1'.repeat(50) },
    { role: 'tool', text: 'r1'.repeat(50) },
    { role: 'assistant', text: 'a2'.repeat(50) },
    { role: 'tool', text: 'r2'.repeat(50) },
  ];
  const size = (ms: Msg[]) => ms.reduce((a, m) => a + JSON.stringify(m).length, 0);

  it('sends a whole conversation that fits unchanged', () => {
    expect(compactMessages(conv, 0, size(conv), isAssistant, head)).toEqual(conv);
  });

  it('keeps the head and the longest suffix that fits and starts at a model message', () => {
    const budget = size(conv) - 1;
    const out = compactMessages(conv, 0, budget, isAssistant, head)!;
    expect(out).toEqual([head(3), conv[3], conv[4]]);
    expect(size(out)).toBeLessThanOrEqual(budget);
    // A tail that does not start at the conversation's start is always compacted.
    const tail = conv.slice(1);
    expect(compactMessages(tail, 7, 1e9, isAssistant, head)).toEqual([head(7), ...tail]);
  });

  it('is null when not even the newest model message and what follows it fit', () => {
    expect(compactMessages(conv, 0, size([head(3), conv[3]!, conv[4]!]) - 1, isAssistant, head)).toBeNull();
  });

  it('writes the run-state note from the facts the run has', () => {
    const note = runStateNote(FACTS, 12);
    expect(note).toContain('12 earlier message(s)');
    expect(note).toContain('Operations completed: 40 (newest: record:note-39:aa, record:note-40:bb)');
    expect(note).toContain('Guard stops so far: same_call_repeat (at step 12).');
    expect(note).toContain('Budgets left: 59 steps, 1000 tokens.');
  });
});

describe('runTurn with a conversation store', () => {
  it('keeps the memory a small reference over 300 turns, and every request within the budget', async () => {
    const store = new MemoryConversations();
    const { adapter, requests } = noteModel(300, 3000);
    const budget = 40_000;
    const { out, memorySizes } = await drive(adapter, store, budget);
    expect(out.turn).toMatchObject({ type: 'finish', summary: 'done' });
    expect(requests).toHaveLength(301);
    expect(Math.max(...memorySizes)).toBeLessThan(400); // the reference and the awaited call's id
    expect(Math.max(...requests.map((r) => r.chars))).toBeLessThanOrEqual(budget);
    // Later requests are compacted: the head is the goal with the run-state note.
    const late = requests[250]!.messages;
    expect(late[0]!.text).toContain('Write the notes.');
    expect(late[0]!.text).toContain('[Run state.');
    expect(late[1]!.role).toBe('assistant');
    // The conversation holds every message once: goal + (call + result) per turn + the final answer.
    expect(store.size).toBe(1 + 300 * 2 + 1);
  });

  it('retries a request the provider refused once, compacted tighter', async () => {
    const store = new MemoryConversations();
    const { adapter, requests } = noteModel(30, 3000, (n) => n === 20);
    const { out } = await drive(adapter, store, 30_000);
    expect(out.turn.type).toBe('finish');
    expect(requests).toHaveLength(32);
    expect(requests[21]!.chars).toBeLessThanOrEqual(15_000);
    expect(requests[21]!.chars).toBeLessThan(requests[20]!.chars);
  });

  it('throws ContextExhaustedError when the provider refuses the tighter retry too, or nothing fits', async () => {
    const store = new MemoryConversations();
    const { adapter } = noteModel(30, 3000, (n) => n >= 5);
    await expect(drive(adapter, store, 30_000)).rejects.toThrow(ContextExhaustedError);
    const tiny = noteModel(30, 3000);
    await expect(drive(tiny.adapter, new MemoryConversations(), 2_000)).rejects.toThrow(
      /does not fit the model's context window/,
    );
  });
});
