/**
 * Faults stop, they do not fail, against a real database outage (docs/spec.md §7.9): the
 * worker's ledger is a dedicated PostgreSQL database, closed for real (`ALLOW_CONNECTIONS
 * false`, its connections terminated) when the run's write starts, after a read. The write's
 * activity fails on every attempt with the driver's own error, the run stops NEEDS_HUMAN
 * `infrastructure_fault` with its report and checkpoint — not FAILED — and once the database
 * is open again a resume completes it with the write executed exactly once.
 * The three-minute version with the default retry policy is `npm run outage`.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  checkpointQuery,
  reportQuery,
  resumeUpdate,
  statusQuery,
  type RunInput,
} from '../../common/contracts';
import { DatabaseOutage, watchToolAttempts } from '../../scripts/outage/database';
import { openSqlite } from '../../storage/sqlite-driver';
import { TEST_PG_URL } from '../ledger/helpers/backends';
import { startHarness, type Harness } from '../helpers/run-harness';
import { live, search, waitFor } from '../helpers/run-inputs';
import { runResult } from '../helpers/run-result';

describe('a real ledger database outage mid-run', () => {
  let outage: DatabaseOutage;
  let h: Harness;
  let worldFile: string;
  // The outage begins when the write's first attempt starts (its plan read the ledger already).
  const watch = watchToolAttempts('write_record', async (attempt) => {
    if (attempt === 1 && outage.startedAt === null) await outage.begin();
  });

  beforeAll(async () => {
    outage = await DatabaseOutage.create(TEST_PG_URL);
    worldFile = join(mkdtempSync(join(tmpdir(), 'alg-outage-')), 'world.db');
    h = await startHarness({
      dbUrl: outage.url,
      worldUrl: `sqlite:${worldFile}`,
      worker: () => ({ interceptors: { activity: [watch.factory] } }),
    });
  });
  afterAll(async () => {
    await h?.close();
    await outage?.drop();
  });

  it('ends NEEDS_HUMAN infrastructure_fault, not FAILED; after the database is back a resume completes with one write', async () => {
    const write = { tool: 'write_record', args: { id: 'outage-1', body: 'written once' } };
    const input: RunInput = live(
      [search('ledger'), write, { tool: 'complete_task', args: { summary: 'ok' } }],
      {
        resumeWindowMs: 120_000,
        timeouts: {
          plannerStartToCloseMs: 10_000,
          toolStartToCloseMs: 10_000,
          toolHeartbeatMs: 5_000,
          toolMaxAttempts: 3,
        },
      },
    );
    const run = await h.start(input);
    const st = await waitFor(
      () => run.handle.query(statusQuery),
      (s) => s.phase === 'WAITING',
      60_000,
    );
    expect(outage.down).toBe(true);
    expect(st).toMatchObject({ terminalState: 'NEEDS_HUMAN', guardReason: 'infrastructure_fault' });
    expect((await run.handle.describe()).status.name).toBe('RUNNING');
    // Every attempt really reached for the closed database and failed with the driver's error.
    expect(watch.attempts.map((a) => a.attempt)).toEqual([1, 2, 3]);
    for (const a of watch.attempts) expect(a.error).toMatch(/not currently accepting connections|terminat/);
    const report = await run.handle.query(reportQuery);
    expect(report).toMatchObject({
      terminal_state: 'NEEDS_HUMAN',
      guard_reason: 'infrastructure_fault',
      blocked_call: { tool: 'write_record' },
    });
    expect(report?.unmet_precondition ?? report?.resume_condition ?? '').not.toBe('');
    const cp = await run.handle.query(checkpointQuery);
    expect(cp.stop?.blockedArgs).toEqual(write.args);
    // The read ran, the write did not.
    expect(await h.worldCounters(run.workflowId)).toEqual({ search: 1 });

    await outage.end();
    const answer = await run.handle.executeUpdate(resumeUpdate, {
      args: [{ actor: 'ops', reason: 'ledger database back', requestId: 'outage-r1' }],
    });
    expect(answer.accepted).toBe(true);
    const result = await runResult(run);
    expect(result.terminal_state).toBe('COMPLETED');
    // Exactly once: the tool's counter, the world's row (a second write would bump its version),
    // and one ledger record that needed one claim.
    expect(await h.counters(run.workflowId)).toEqual({ search: 1, write_record: 1, complete_task: 1 });
    const world = openSqlite(worldFile, { readOnly: true });
    try {
      expect(world.prepare('SELECT body, version FROM world_records WHERE id = ?').all('outage-1')).toEqual([
        { body: 'written once', version: 1 },
      ]);
    } finally {
      world.close();
    }
    const records = await outage.query<{ tool: string; state: string; attempts: number }>(
      "SELECT tool, state, attempts FROM ledger_records WHERE tool = 'write_record'",
    );
    expect(records).toEqual([{ tool: 'write_record', state: 'SUCCEEDED', attempts: 1 }]);
    expect(watch.attempts.map((a) => a.error === null)).toEqual([false, false, false, true]);
  });
});
