/**
 * Issue 42, flat per-step time: the default progress source's version is kept per run
 * (`agent_progress_versions`, migration 12), bumped in the transaction that adds a new fact,
 * and read as one row — it was a COUNT over all the run's facts at every step (~0.34 ms at
 * 10,000). Same answers as the count, both backends, and migration 12 fills it from the facts
 * a database already has.
 */
import { ObservedProgress, type ProgressEvent } from '../../activities/progress';
import type { Ledger, SqlLedger } from '../../storage/ledger';
import { backendNames, createTestDb, type TestDb } from './helpers/backends';

const write = (runId: string, key: string): ProgressEvent => ({
  runId,
  tool: 'note',
  effect: 'write',
  operationKey: key,
  result: { kind: 'SUCCESS', data: {} },
  via: 'executed',
});
const read = (runId: string, data: unknown): ProgressEvent => ({
  runId,
  tool: 'lookup',
  effect: 'read',
  operationKey: null,
  result: { kind: 'SUCCESS', data },
  via: 'executed',
});

describe.each(backendNames)('progress versions on %s', (backend) => {
  let db: TestDb;
  let ledger: Ledger;
  let source: ObservedProgress;
  const counted = async (runId: string) =>
    Number((await db.exec('SELECT COUNT(*) AS n FROM agent_progress_facts WHERE run_id = ?', [runId]))[0]!.n);

  beforeAll(async () => {
    db = await createTestDb(backend);
    ledger = await db.open();
    source = new ObservedProgress((ledger as SqlLedger<unknown>).database());
  });
  afterAll(async () => db.cleanup());

  it('answers the number of distinct facts: new ones move it, a known one does not', async () => {
    expect(await source.version('run-a')).toBe(0);
    await source.observe(write('run-a', 'k1'));
    await source.observe(read('run-a', { n: 1 }));
    await source.observe(read('run-a', { n: 1 })); // the same result again: nothing new
    await source.observe(write('run-a', 'k2'));
    await source.observe(write('run-b', 'k1'));
    await source.observe({ ...read('run-a', { n: 2 }), result: { kind: 'RETRYABLE' } }); // no fact
    expect(await source.version('run-a')).toBe(3);
    expect(await source.version('run-b')).toBe(1);
    expect(await source.version('run-a')).toBe(await counted('run-a'));
  });

  it('observeIn answers the version its unit leaves, the one version() then reads (not read twice)', async () => {
    const database = (ledger as SqlLedger<unknown>).database();
    const inUnit = (e: ProgressEvent) => database.unit('transaction', (tx) => source.observeIn(tx, e));
    expect(await inUnit(write('run-e', 'k1'))).toBe(1);
    expect(await inUnit(read('run-e', { n: 1 }))).toBe(2);
    expect(await inUnit(read('run-e', { n: 1 }))).toBe(2); // known: the version as it stands
    expect(await inUnit({ ...read('run-e', { n: 2 }), result: { kind: 'RETRYABLE' } })).toBeNull(); // no fact
    expect(await source.version('run-e')).toBe(2);
  });

  it('rolls the version back with its fact when the transaction carrying them fails', async () => {
    const before = await source.version('run-c');
    const unit = (ledger as SqlLedger<unknown>).database().unit('transaction', async (tx) => {
      await source.observeIn(tx, write('run-c', 'lost'));
      throw new Error('the business write failed');
    });
    await expect(unit).rejects.toThrow('the business write failed');
    expect(await source.version('run-c')).toBe(before);
    expect(await counted('run-c')).toBe(before);
  });

  it('migration 12 fills the versions from the facts a database already holds', async () => {
    for (const k of ['x1', 'x2', 'x3', 'x4']) await source.observe(write('run-d', k));
    // As before migration 12: the facts without their versions.
    await db.exec('DROP TABLE agent_progress_versions');
    await db.exec('DELETE FROM ledger_migrations WHERE version = 12');
    const again = await db.open();
    const after = new ObservedProgress((again as SqlLedger<unknown>).database());
    expect(await after.version('run-d')).toBe(4);
    expect(await after.version('run-a')).toBe(3);
    expect(await after.version('run-b')).toBe(1);
    await after.observe(write('run-d', 'x5'));
    expect(await after.version('run-d')).toBe(5);
  });
});
