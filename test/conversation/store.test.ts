/**
 * The conversation store (storage/conversation-store.ts) on real SQLite and real
 * PostgreSQL: content-addressed appends are idempotent, a reference names one exact prefix
 * whatever was written after it, tails are bounded by a character budget, and a planner
 * turn's answer is stored once (first writer wins).
 */
import { ConversationStore, MemoryConversations, chainHash } from '../../storage/conversation-store';
import type { ConversationAccess } from '../../common/conversation';
import { emptyRef } from '../../storage/conversation-store';
import { backendNames, createTestDb, type TestDb } from '../ledger/helpers/backends';

const msg = (i: number, size = 10) => ({
  role: i % 2 === 0 ? 'user' : 'assistant',
  text: `${i}:${'x'.repeat(size)}`,
});

async function fill(store: ConversationAccess, conversation: string, n: number, size = 10) {
  return store.append(
    conversation,
    { hash: null, position: 0, chars: 0 },
    Array.from({ length: n }, (_, i) => msg(i, size)),
  );
}

type Case = {
  name: string;
  open: () => Promise<{ store: ConversationAccess; rows: () => Promise<number>; done: () => Promise<void> }>;
};

const cases: Case[] = [
  ...backendNames.map((name) => ({
    name,
    open: async () => {
      const db: TestDb = await createTestDb(name);
      const ledger = await db.open();
      const store = ConversationStore.over(ledger)!;
      return {
        store,
        rows: async () => Number((await db.exec('SELECT count(*) AS n FROM agent_conversation'))[0]!.n),
        done: () => db.cleanup(),
      };
    },
  })),
  {
    name: 'memory',
    open: async () => {
      const store = new MemoryConversations();
      return { store, rows: async () => store.size, done: async () => undefined };
    },
  },
];

describe.each(cases)('conversation store ($name)', ({ open }) => {
  let s: Awaited<ReturnType<Case['open']>>;
  beforeEach(async () => {
    s = await open();
  });
  afterEach(async () => s.done());

  it('appends idempotently: the same messages again write no row and give the same reference', async () => {
    const a = await fill(s.store, 'run-a', 5);
    expect(a).toMatchObject({ conversation: 'run-a', length: 5 });
    expect(a.chars).toBe(
      Array.from({ length: 5 }, (_, i) => JSON.stringify(msg(i)).length).reduce((x, y) => x + y),
    );
    expect(await s.rows()).toBe(5);
    const again = await fill(s.store, 'run-a', 5);
    expect(again).toEqual(a);
    expect(await s.rows()).toBe(5);
    const tail = await s.store.tail(a, 1_000_000);
    expect(tail.map((m) => m.message)).toEqual(Array.from({ length: 5 }, (_, i) => msg(i)));
    expect(tail.map((m) => m.position)).toEqual([0, 1, 2, 3, 4]);
    expect(tail[4]!.hash).toBe(a.hash);
    expect(tail[0]!.parentHash).toBeNull();
    expect(tail[0]!.hash).toBe(chainHash(null, JSON.stringify(msg(0))));
  });

  it('a reference names one exact prefix: a branch written after it changes nothing it reads', async () => {
    const base = await fill(s.store, 'run-b', 3);
    const tip = (await s.store.tail(base, 1e9)).at(-1)!;
    const after = { hash: tip.hash, position: base.length, chars: base.chars };
    const left = await s.store.append('run-b', after, [{ role: 'assistant', text: 'left' }]);
    const right = await s.store.append('run-b', after, [{ role: 'assistant', text: 'right' }]);
    expect(left.hash).not.toBe(right.hash);
    expect((await s.store.tail(left, 1e9)).at(-1)!.message).toEqual({ role: 'assistant', text: 'left' });
    expect((await s.store.tail(right, 1e9)).at(-1)!.message).toEqual({ role: 'assistant', text: 'right' });
    expect((await s.store.tail(base, 1e9)).map((m) => m.message)).toEqual([msg(0), msg(1), msg(2)]);
    expect(await s.rows()).toBe(5);
  });

  it('reads only the newest messages within the budget, always at least the newest one', async () => {
    const ref = await fill(s.store, 'run-c', 200, 100);
    const one = JSON.stringify(msg(199, 100)).length;
    const tail = await s.store.tail(ref, one * 10 + 5);
    expect(tail.map((m) => m.position)).toEqual(Array.from({ length: 10 }, (_, i) => 190 + i));
    expect(tail[0]!.charsBefore).toBe(ref.chars - tail.reduce((a, m) => a + m.json.length, 0));
    expect((await s.store.tail(ref, 1)).map((m) => m.position)).toEqual([199]);
    expect(await s.store.tail(emptyRef('run-c'), 100)).toEqual([]);
  });

  it('refuses a reference it does not hold, naming the conversation', async () => {
    const ref = await fill(s.store, 'run-d', 2);
    await expect(s.store.tail({ ...ref, conversation: 'run-other' }, 1e9)).rejects.toThrow(/run-other/);
    await expect(s.store.tail({ ...ref, hash: 'f'.repeat(64) }, 1e9)).rejects.toThrow(/run-d/);
  });

  it('keeps the first stored answer of a planner turn', async () => {
    expect(await s.store.storedTurn('wf-run/1')).toBeNull();
    expect(await s.store.saveTurn('wf-run/1', 'run-e', { turn: 'first' })).toEqual({ turn: 'first' });
    expect(await s.store.saveTurn('wf-run/1', 'run-e', { turn: 'second' })).toEqual({ turn: 'first' });
    expect(await s.store.storedTurn('wf-run/1')).toEqual({ turn: 'first' });
  });
});
