/**
 * Issue 42: no durable transaction the guarantee does not need. An atomic write of a fresh key
 * is ONE unit of work (claim, business write, SUCCEEDED and the caller's bookkeeping); an
 * external write is claim, dispatch and one commit that carries the bookkeeping; a claim on
 * SQLite skips its own fsync and puts `synchronous=FULL` back. On a real SQLite file and a real
 * PostgreSQL schema; every test counts the side effect's real executions.
 */
import {
  executeOnce,
  executeOnceAtomic,
  LedgerState,
  SideEffectErrorClass,
  SqliteLedger,
  type Ledger,
  type LedgerTx,
} from '../../storage/ledger';
import type { DatabaseSync } from '../../storage/sqlite-driver';
import { backendNames, createTestDb, type TestDb } from './helpers/backends';
import { bump, executions } from './helpers/counter';

const base = { tool: 'note', argsHash: 'h1', runId: 'run-1', owner: 'w1', leaseMs: 5_000 };

describe.each(backendNames)('one transaction per write on %s', (backend) => {
  let db: TestDb;
  let ledger: Ledger;
  let n = 0;
  const nextKey = () => `one-${++n}`;
  /** The units of work the ledger opens, by access and durability, while `fn` runs. */
  async function unitsOf(fn: () => Promise<unknown>): Promise<string[]> {
    const target = ledger as unknown as { connect: (...a: unknown[]) => Promise<unknown> };
    const spy = jest.spyOn(target, 'connect');
    try {
      await fn();
      return spy.mock.calls.map(
        (c) => `${String(c[0])}${c[2] === 'before-dispatch' ? ' before-dispatch' : ''}`,
      );
    } finally {
      spy.mockRestore();
    }
  }
  const mark = (key: string) => async (tx: LedgerTx) => {
    await tx.run('INSERT INTO one_tx_marks (key) VALUES (?)', [key]);
  };
  const marks = async (key: string) =>
    (await db.exec('SELECT key FROM one_tx_marks WHERE key = ?', [key])).length;

  beforeAll(async () => {
    db = await createTestDb(backend);
    ledger = await db.open();
    await db.exec('CREATE TABLE IF NOT EXISTS one_tx_notes (id TEXT PRIMARY KEY, body TEXT NOT NULL)');
    await db.exec('CREATE TABLE IF NOT EXISTS one_tx_marks (key TEXT PRIMARY KEY)');
  });
  afterAll(async () => db.cleanup());

  it('stores an atomic write of a fresh key, its bookkeeping and SUCCEEDED in one unit of work', async () => {
    const key = nextKey();
    let outcome: unknown;
    const units = await unitsOf(async () => {
      outcome = await executeOnceAtomic(ledger, { ...base, key, inCommit: mark(key) }, async (tx) => {
        bump(db.dir, key);
        await tx.run('INSERT INTO one_tx_notes (id, body) VALUES (?, ?)', [key, 'hello']);
        return 'hello';
      });
    });
    expect(outcome).toEqual({ kind: 'executed', key, result: 'hello' });
    expect(units).toEqual(['transaction']);
    expect((await ledger.get(key))?.state).toBe(LedgerState.SUCCEEDED);
    expect(await marks(key)).toBe(1);
    // A duplicate is answered from the ledger: no business write, no second mark.
    const again = await executeOnceAtomic(ledger, { ...base, key, inCommit: mark(key) }, async () => {
      bump(db.dir, key);
      return 'again';
    });
    expect(again).toMatchObject({ kind: 'cached', result: 'hello' });
    expect(executions(db.dir, key)).toBe(1);
    expect(await marks(key)).toBe(1);
  });

  it('rolls a failed fresh atomic write back whole, and stores a FINAL failure for every duplicate', async () => {
    const key = nextKey();
    const failed = await executeOnceAtomic(
      ledger,
      { ...base, key, inCommit: mark(key), classifyError: () => SideEffectErrorClass.FINAL },
      async (tx) => {
        bump(db.dir, key);
        await tx.run('INSERT INTO one_tx_notes (id, body) VALUES (?, ?)', [key, 'half']);
        throw new Error('card declined');
      },
    );
    expect(failed).toMatchObject({ kind: 'failed_final', replayed: false });
    expect(await db.exec('SELECT body FROM one_tx_notes WHERE id = ?', [key])).toEqual([]);
    expect(await marks(key)).toBe(0);
    expect((await ledger.get(key))?.state).toBe(LedgerState.FAILED_FINAL);
    const dup = await executeOnceAtomic(ledger, { ...base, key }, async () => {
      bump(db.dir, key);
      return 'no';
    });
    expect(dup).toMatchObject({ kind: 'failed_final', replayed: true });
    expect(executions(db.dir, key)).toBe(1);
  });

  it('takes the claim → commitWith path for a key with a record, bookkeeping in its commit', async () => {
    const key = nextKey();
    // A dead executor's expired claim (never dispatched): taken over, executed once.
    const dead = await ledger.claim({ ...base, key, owner: 'dead' });
    expect(dead.kind).toBe('claimed');
    await db.expireLease(key);
    const units = await unitsOf(async () => {
      const out = await executeOnceAtomic(ledger, { ...base, key, inCommit: mark(key) }, async () => {
        bump(db.dir, key);
        return 'taken over';
      });
      expect(out).toEqual({ kind: 'executed', key, result: 'taken over' });
    });
    // The fast path's look (it writes nothing), the claim (PostgreSQL tries its one-statement
    // insert first), the commit with the business write and the bookkeeping.
    expect(units.filter((u) => u !== 'read')).toEqual(
      backend === 'sqlite'
        ? ['transaction', 'transaction before-dispatch', 'transaction']
        : ['transaction', 'write', 'transaction before-dispatch', 'transaction'],
    );
    expect(await marks(key)).toBe(1);
    expect(executions(db.dir, key)).toBe(1);
  });

  it('writes an external write as claim, dispatch and one commit that carries the bookkeeping', async () => {
    const key = nextKey();
    const units = await unitsOf(async () => {
      const out = await executeOnce(ledger, { ...base, key, inCommit: mark(key) }, async () => {
        bump(db.dir, key);
        return { sent: true };
      });
      expect(out).toEqual({ kind: 'executed', key, result: { sent: true } });
    });
    const writes = units.filter((u) => u !== 'read');
    // PostgreSQL inserts a fresh claim with one statement first ('write').
    expect(writes).toEqual(
      backend === 'sqlite'
        ? ['transaction before-dispatch', 'write', 'transaction']
        : ['write', 'write', 'transaction'],
    );
    expect(await marks(key)).toBe(1);
    expect(executions(db.dir, key)).toBe(1);
  });

  if (backend === 'sqlite') {
    it('puts synchronous=FULL back after a claim that skipped its own fsync, even when it fails', async () => {
      const sqlite = ledger as SqliteLedger;
      const level = () =>
        (sqlite as unknown as { db: DatabaseSync }).db.prepare('PRAGMA synchronous').get()?.synchronous;
      expect(level()).toBe(2);
      const key = nextKey();
      const c = await ledger.claim({ ...base, key });
      expect(c.kind).toBe('claimed');
      expect(level()).toBe(2);
      // A conflicting claim throws inside the unit: the level is restored all the same.
      await expect(ledger.claim({ ...base, key, argsHash: 'other' })).rejects.toThrow();
      expect(level()).toBe(2);
    });
  }
});
