/**
 * The paged-out trace (issue 19, storage/trace-store.ts) on both backends: a save is
 * idempotent by position, pages come back in order with the total, a run that never paged
 * anything out says so, and a run whose rows the reaper deleted answers "reaped" with the
 * count deleted — never an empty page.
 */
import type { Ledger } from '../../storage/ledger';
import { TraceStore } from '../../storage/trace-store';
import { createReaperActivities } from '../../activities/reaper';
import { backendNames, createTestDb, type TestDb } from '../ledger/helpers/backends';
import { agentctl } from '../client/cli-helpers';

const DAY = 24 * 3600_000;
const rec = (seq: number) => ({ seq, record: { step: seq, decision: 'execute', args: { n: seq } } });

describe.each(backendNames)('the trace store on %s', (backend) => {
  let db: TestDb;
  let ledger: Ledger;
  let store: TraceStore;
  const minus = (col: string) =>
    backend === 'sqlite' ? `${col} - ?` : `${col} - (?::double precision * interval '1 millisecond')`;

  beforeAll(async () => {
    db = await createTestDb(backend);
    ledger = await db.open();
    store = TraceStore.over(ledger)!;
  });
  afterAll(async () => {
    await db?.cleanup();
  });

  it('saves once per position and pages in order', async () => {
    expect(await store.save('run-t', [rec(0), rec(1), rec(2)])).toBe(3);
    // A retried save (and an overlapping one) writes only what is new.
    expect(await store.save('run-t', [rec(1), rec(2), rec(3), rec(4)])).toBe(2);
    const page = await store.page('run-t', 1, 2);
    expect(page).toEqual({ kind: 'page', total: 5, records: [rec(1), rec(2)] });
    expect(await store.page('run-t', 4, 100)).toEqual({ kind: 'page', total: 5, records: [rec(4)] });
    expect(await store.page('run-none', 0, 10)).toEqual({ kind: 'none' });
  });

  it('a reaped run answers "reaped" with the count, not an empty page', async () => {
    await store.save('run-old', [rec(0), rec(1), rec(2)]);
    await db.exec(`UPDATE agent_trace SET created_at = ${minus('created_at')} WHERE run_id = ?`, [
      10 * DAY,
      'run-old',
    ]);
    expect(await ledger.reapableRuns(7 * DAY)).toContain('run-old');
    const { reapLedger } = createReaperActivities({
      ledger,
      runStatus: async () => 'closed',
      minRetentionMs: 0,
    });
    const out = await reapLedger({ retentionMs: 7 * DAY });
    expect(out.runDataRemoved).toBe(3);
    const page = await store.page('run-old', 0, 10);
    expect(page).toMatchObject({ kind: 'reaped', records: 3 });
    expect(page.kind === 'reaped' && page.reapedAt).toMatch(/^\d{4}-\d\d-\d\dT/);
    // The recent run is untouched.
    expect(await store.page('run-t', 0, 1)).toMatchObject({ kind: 'page', total: 5 });
  });

  it('agentctl trace --stored pages the records, and says "reaped" for a reaped run', async () => {
    const env = { LEDGER_URL: db.url, AGENT_CODEC: 'off' };
    const page = await agentctl(['trace', 'run-t', '--stored', '--offset', '3', '--json'], env);
    expect(page.code).toBe(0);
    expect(JSON.parse(page.stdout)).toEqual({
      total: 5,
      records: [3, 4].map((n) => ({ ...rec(n).record, seq: n })),
    });
    const reaped = await agentctl(['trace', 'run-old', '--stored'], env);
    expect(reaped.code).toBe(3);
    expect(reaped.stderr).toMatch(/the paged-out trace of run-old was reaped at \d{4}-.*\(3 records deleted/);
    expect(reaped.stdout).toBe('');
  }, 60_000);
});
