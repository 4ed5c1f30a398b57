/**
 * Retention of the issue-9 tables (agent_conversation, agent_planner_turns,
 * agent_payloads) on both backends: the reaper finds runs that have only such rows (a
 * read-only run writes no ledger record), deletes a closed run's rows once the newest of
 * them is older than the retention, and keeps an open run's rows and recent ones.
 */
import { executeOnce, type Ledger } from '../../storage/ledger';
import { PayloadStore } from '../../storage/payloads';
import { createReaperActivities, type RunStatusAnswer } from '../../activities/reaper';
import { backendNames, createTestDb, type TestDb } from '../ledger/helpers/backends';

const DAY = 24 * 3600_000;

describe.each(backendNames)('reaping run data on %s', (backend) => {
  let db: TestDb;
  let ledger: Ledger;
  let store: PayloadStore;
  const now = () =>
    backend === 'sqlite' ? `CAST(unixepoch('subsec') * 1000 AS INTEGER)` : 'clock_timestamp()';
  const minus = (col: string) =>
    backend === 'sqlite' ? `${col} - ?` : `${col} - (?::double precision * interval '1 millisecond')`;

  /** A conversation message and a planner turn of `runId`, written `ageMs` ago. */
  async function conversation(runId: string, position: number, ageMs: number): Promise<void> {
    await db.exec(
      `INSERT INTO agent_conversation (conversation_id, hash, parent_hash, position, chars, cum_chars, message, created_at)
       VALUES (?, ?, NULL, ?, 2, 2, '{}', ${minus(now())})`,
      [runId, `h${position}`, position, ageMs],
    );
    await db.exec(
      `INSERT INTO agent_planner_turns (turn_key, conversation_id, output, created_at) VALUES (?, ?, '{}', ${minus(now())})`,
      [`${runId}/turn-${position}`, runId, ageMs],
    );
  }
  async function payload(runId: string, n: number, ageMs: number): Promise<void> {
    const ref = await store.put(runId, { n, text: 'p'.repeat(100) });
    await db.exec(
      `UPDATE agent_payloads SET created_at = ${minus('created_at')} WHERE run_id = ? AND id = ?`,
      [ageMs, runId, ref.id],
    );
  }
  async function settled(key: string, runId: string, ageMs: number): Promise<void> {
    const base = { tool: 't', argsHash: 'sha256:x', owner: 'w', leaseMs: 5_000 };
    await executeOnce(ledger, { ...base, key, runId }, async () => ({ ok: true }));
    await db.ageFinished(key, ageMs);
  }
  async function rowsOf(runId: string): Promise<number[]> {
    const n = async (sql: string) => Number((await db.exec(sql, [runId]))[0]?.n);
    return [
      await n('SELECT COUNT(*) AS n FROM agent_conversation WHERE conversation_id = ?'),
      await n('SELECT COUNT(*) AS n FROM agent_planner_turns WHERE conversation_id = ?'),
      await n('SELECT COUNT(*) AS n FROM agent_payloads WHERE run_id = ?'),
      await n('SELECT COUNT(*) AS n FROM ledger_records WHERE run_id = ?'),
    ];
  }

  beforeAll(async () => {
    db = await createTestDb(backend);
    ledger = await db.open();
    store = PayloadStore.over(ledger);
    // run-a: ledger records, conversation and payloads, all old.
    await settled('a1', 'run-a', 10 * DAY);
    await conversation('run-a', 0, 10 * DAY);
    await payload('run-a', 1, 10 * DAY);
    // run-ro: a read-only run: no ledger record, an old conversation and payloads.
    await conversation('run-ro', 0, 12 * DAY);
    await conversation('run-ro', 1, 9 * DAY);
    await payload('run-ro', 1, 9 * DAY);
    await payload('run-ro', 2, 11 * DAY);
    // run-new: old conversation start, but a payload written yesterday: its newest row is recent.
    await conversation('run-new', 0, 20 * DAY);
    await payload('run-new', 1, 1 * DAY);
    // run-open: old rows, but its workflow is still open.
    await conversation('run-open', 0, 10 * DAY);
    await payload('run-open', 1, 10 * DAY);
  });
  afterAll(async () => {
    await db?.cleanup();
  });

  it('reapableRuns lists runs that only have old conversation / payload rows, once each, in order', async () => {
    expect(await ledger.reapableRuns(7 * DAY)).toEqual(['run-a', 'run-open', 'run-ro']);
    expect(await ledger.reapableRuns(7 * DAY, { after: 'run-a', limit: 1 })).toEqual(['run-open']);
    expect(await ledger.reapableRuns(0)).toEqual(['run-a', 'run-new', 'run-open', 'run-ro']);
    expect(await ledger.reapableRuns(30 * DAY)).toEqual([]);
    await expect(ledger.reapRunData!(-1, ['run-a'])).rejects.toThrow('reap TTL must be >= 0 ms');
  });

  it('reapRunData deletes only runs whose newest row is older than the TTL; an empty list deletes nothing', async () => {
    expect(await ledger.reapRunData!(0, [])).toBe(0);
    // run-new's newest row is a day old: kept at a 7-day TTL.
    expect(await ledger.reapRunData!(7 * DAY, ['run-new'])).toBe(0);
    expect(await rowsOf('run-new')).toEqual([1, 1, 1, 0]);
  });

  it("the reaper deletes closed runs' rows with their ledger records and keeps the open run's", async () => {
    const asked: string[] = [];
    const runStatus = async (runId: string): Promise<RunStatusAnswer> => {
      asked.push(runId);
      return runId === 'run-open' ? 'open' : 'closed';
    };
    const { reapLedger } = createReaperActivities({ ledger, runStatus, minRetentionMs: 0 });
    const out = await reapLedger({ retentionMs: 7 * DAY, pageSize: 2 });
    expect(out).toEqual({
      retentionMs: 7 * DAY,
      removed: 1,
      // run-a: 1 message + 1 turn + 1 payload; run-ro: 2 + 2 + 2.
      runDataRemoved: 9,
      runsReaped: 2,
      runsOpen: 1,
      runsUnchecked: 0,
    });
    expect(asked.sort()).toEqual(['run-a', 'run-open', 'run-ro']);
    expect(await rowsOf('run-a')).toEqual([0, 0, 0, 0]);
    expect(await rowsOf('run-ro')).toEqual([0, 0, 0, 0]);
    expect(await rowsOf('run-open')).toEqual([1, 1, 1, 0]);
    expect(await rowsOf('run-new')).toEqual([1, 1, 1, 0]);
    // Nothing left to do at that retention but the open run.
    expect(await ledger.reapableRuns(7 * DAY)).toEqual(['run-open']);
  });
});
