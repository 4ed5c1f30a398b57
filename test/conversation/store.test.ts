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
import type { Payload } from '@temporalio/common';
import { SqlLedger } from '../../storage/ledger';
import { RowCodec } from '../../storage/row-codec';

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

/**
 * The texts a store has opened or written are kept (issue 42's long-run CPU): a turn reads its
 * tail's links and opens only the messages it has not seen. Counted with a row codec that
 * seals (so every open is a real decryption) and counts its opens.
 */
describe.each(backendNames)('conversation store (%s): texts opened once', (name) => {
  let db: TestDb;
  let opens = 0;
  const codec = {
    encode: async (ps: Payload[]) => ps.map((p) => ({ ...p, data: Buffer.from(p.data ?? []).reverse() })),
    decode: async (ps: Payload[]) => {
      opens += ps.length;
      return ps.map((p) => ({ ...p, data: Buffer.from(p.data ?? []).reverse() }));
    },
  };
  const rows = new RowCodec([codec]);
  beforeEach(async () => {
    db = await createTestDb(name);
    opens = 0;
  });
  afterEach(async () => db.cleanup());

  it('a tail opens no text the store wrote or opened before, and reads the same as a cold store', async () => {
    const ledger = await db.open();
    const writer = new ConversationStore((ledger as SqlLedger<unknown>).database(), rows);
    const ref = await fill(writer, 'run-k', 120, 50);
    const warm = await writer.tail(ref, 1e9);
    expect(opens).toBe(0);

    const cold = new ConversationStore((ledger as SqlLedger<unknown>).database(), rows);
    const first = await cold.tail(ref, 1e9);
    expect(opens).toBe(120);
    expect(first).toEqual(warm);
    const again = await cold.tail(ref, 1e9);
    expect(opens).toBe(120);
    expect(again).toEqual(warm);
    // Fresh objects every time: a caller changing its messages changes nothing kept.
    (again[0]!.message as { text: string }).text = 'changed';
    expect((await cold.tail(ref, 1e9))[0]!.message).toEqual(msg(0, 50));

    // The next turn appends two: the cold store opens those two only.
    const next = await cold.append('run-k', { hash: ref.hash, position: ref.length, chars: ref.chars }, [
      msg(120, 50),
      msg(121, 50),
    ]);
    expect((await cold.tail(next, 1e9)).map((m) => m.position)).toEqual(
      Array.from({ length: 122 }, (_, i) => i),
    );
    expect(opens).toBe(120);
    expect((await writer.tail(next, 1e9)).slice(-2).map((m) => m.message)).toEqual([
      msg(120, 50),
      msg(121, 50),
    ]);
    expect(opens).toBe(122);
  });

  it('a store with a small budget keeps only the newest texts and still reads every tail whole', async () => {
    const ledger = await db.open();
    const newestTen = Array.from({ length: 10 }, (_, i) => JSON.stringify(msg(30 + i, 50)).length);
    const small = new ConversationStore(
      (ledger as SqlLedger<unknown>).database(),
      rows,
      newestTen.reduce((a, n) => a + n, 0),
    );
    const ref = await fill(small, 'run-s', 40, 50);
    const tail = await small.tail(ref, 1e9);
    expect(tail.map((m) => m.message)).toEqual(Array.from({ length: 40 }, (_, i) => msg(i, 50)));
    // The ten newest were kept; the thirty before them were opened again.
    expect(opens).toBe(30);
  });

  it('a kept text is no answer for a row that is gone: the reaped conversation is refused', async () => {
    const ledger = await db.open();
    const store = new ConversationStore((ledger as SqlLedger<unknown>).database(), rows);
    const ref = await fill(store, 'run-r', 5);
    await store.tail(ref, 1e9);
    await db.exec("DELETE FROM agent_conversation WHERE conversation_id = 'run-r'");
    await expect(store.tail(ref, 1e9)).rejects.toThrow(/run-r has no message 5/);
  });
});
