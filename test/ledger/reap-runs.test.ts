/**
 * The two ledger queries the reaper activity is built on (activities/reaper.ts):
 * `reapableRuns` pages through the runs that own reapable records, `reap(ttl, {runIds})`
 * deletes only those runs' settled records. On both backends.
 */
import { executeOnce, LedgerState, type Ledger } from '../../storage/ledger';
import { backendNames, createTestDb, type TestDb } from './helpers/backends';

describe.each(backendNames)('ledger reaping by run on %s', (backend) => {
  let db: TestDb;
  let ledger: Ledger;
  const day = 24 * 3600_000;
  const base = { tool: 't', argsHash: 'sha256:x', owner: 'w', leaseMs: 5_000 };

  async function settled(key: string, runId: string, ageMs: number): Promise<void> {
    await executeOnce(ledger, { ...base, key, runId }, async () => ({ ok: true }));
    await db.ageFinished(key, ageMs);
  }

  beforeAll(async () => {
    db = await createTestDb(backend);
    ledger = await db.open();
    await settled('a1', 'run-a', 10 * day);
    await settled('a2', 'run-a', 10 * day);
    await settled('b1', 'run-b', 10 * day);
    await settled('c1', 'run-c', 1 * day);
    // An UNKNOWN record of run-d, finished long ago: never reapable.
    const c = await ledger.claim({ ...base, key: 'd1', runId: 'run-d' });
    if (c.kind !== 'claimed') throw new Error(c.kind);
    await ledger.dispatch('d1', c.token);
    await ledger.markUnknown('d1', c.token, 'test');
    await db.ageFinished('d1', 10 * day);
  });
  afterAll(async () => {
    await db?.cleanup();
  });

  it('lists the runs with settled records older than the TTL, in run order, page by page', async () => {
    expect(await ledger.reapableRuns(7 * day)).toEqual(['run-a', 'run-b']);
    expect(await ledger.reapableRuns(7 * day, { limit: 1 })).toEqual(['run-a']);
    expect(await ledger.reapableRuns(7 * day, { after: 'run-a' })).toEqual(['run-b']);
    expect(await ledger.reapableRuns(0)).toEqual(['run-a', 'run-b', 'run-c']);
    await expect(ledger.reapableRuns(-1)).rejects.toThrow('reap TTL must be >= 0 ms');
  });

  it("deletes only the given runs' old settled records; an empty list deletes nothing", async () => {
    expect(await ledger.reap(0, { runIds: [] })).toBe(0);
    expect(await ledger.reap(7 * day, { runIds: ['run-a', 'run-c', 'run-d'] })).toBe(2);
    expect(await ledger.get('a1')).toBeNull();
    expect(await ledger.get('a2')).toBeNull();
    expect(await ledger.get('b1')).not.toBeNull();
    expect(await ledger.get('c1')).not.toBeNull();
    expect(await ledger.get('d1')).toMatchObject({ state: LedgerState.UNKNOWN });
  });
});
