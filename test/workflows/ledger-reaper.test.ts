/**
 * The ledger reaper as a Temporal Schedule on the real dev server: the schedule is created
 * once however many workers start, its action runs the `ledgerReaper` workflow, and a pass
 * deletes an old settled record of a closed run while keeping a recent one, an UNKNOWN one
 * and the records of a run that is still open (waiting for resume).
 */
import type { Client } from '@temporalio/client';
import { statusQuery } from '../../common/contracts';
import { MIN_RETENTION_MS, type ReapLedgerOutput } from '../../activities/reaper';
import { worldFile } from '../../demo/world';
import { openSqlite, type DatabaseSync } from '../../storage/sqlite-driver';
import {
  DEFAULT_LEDGER_RETENTION_MS,
  DEFAULT_REAPER_INTERVAL_MS,
  ensureReaperSchedule,
  parseInterval,
  readReaperEnv,
} from '../../worker/reaper-schedule';
import { startHarness, type Harness } from '../helpers/run-harness';
import { live, search, waitFor } from '../helpers/run-inputs';
import { uniqueId } from '../helpers/temporal-env';
import { runResult } from '../helpers/run-result';

const DAY = 24 * 3600_000;

describe('readReaperEnv', () => {
  it('defaults to on, 30 days, hourly', () => {
    expect(readReaperEnv({})).toEqual({
      enabled: true,
      retentionMs: DEFAULT_LEDGER_RETENTION_MS,
      intervalMs: DEFAULT_REAPER_INTERVAL_MS,
      warnings: [],
    });
    expect(DEFAULT_LEDGER_RETENTION_MS).toBe(30 * DAY);
    expect(MIN_RETENTION_MS).toBe(7 * DAY);
  });

  it('raises a retention shorter than the resume window to it, with a warning', () => {
    const s = readReaperEnv({ AGENT_LEDGER_RETENTION_MS: String(DAY), AGENT_REAPER_INTERVAL: '15m' });
    expect(s).toMatchObject({ retentionMs: MIN_RETENTION_MS, intervalMs: 15 * 60_000 });
    expect(s.warnings[0]).toContain('shorter than the resume window');
  });

  it('is disabled by AGENT_REAPER=off and names every bad variable', () => {
    expect(readReaperEnv({ AGENT_REAPER: 'off' }).enabled).toBe(false);
    expect(() =>
      readReaperEnv({ AGENT_REAPER: 'maybe', AGENT_LEDGER_RETENTION_MS: '-1', AGENT_REAPER_INTERVAL: '1s' }),
    ).toThrow(/AGENT_REAPER: .*AGENT_LEDGER_RETENTION_MS: .*AGENT_REAPER_INTERVAL: /);
    expect([parseInterval('1h'), parseInterval('90s'), parseInterval('250'), parseInterval('soon')]).toEqual([
      3_600_000,
      90_000,
      250,
      undefined,
    ]);
  });
});

describe('ledger reaper schedule on a real dev server', () => {
  let h: Harness;
  let client: Client;
  let db: DatabaseSync;
  const scheduleId = uniqueId('reaper');

  beforeAll(async () => {
    h = await startHarness();
    client = h.env.client;
    db = openSqlite(worldFile(h.dbUrl));
    db.exec('PRAGMA busy_timeout = 10000');
  });
  afterAll(async () => {
    await client?.schedule
      .getHandle(scheduleId)
      .delete()
      .catch(() => undefined);
    db?.close();
    await h?.close();
  });

  const age = (key: string, ms: number) =>
    db.prepare('UPDATE ledger_records SET finished_at = finished_at - ? WHERE key = ?').run(ms, key);
  const notify = (channel: string) => ({
    tool: 'send_notification',
    args: { channel, incident: 'reap', type: 'page', message: channel },
  });
  const keyOf = (channel: string) => `notify:${channel}:reap:page`;

  it('is created once when two workers start together, and updated only when its settings change', async () => {
    const o = {
      taskQueue: h.taskQueue,
      retentionMs: 30 * DAY,
      intervalMs: DEFAULT_REAPER_INTERVAL_MS,
      scheduleId,
    };
    const twoWorkers = await Promise.all([ensureReaperSchedule(client, o), ensureReaperSchedule(client, o)]);
    expect(twoWorkers.map((r) => r.did).sort()).toEqual(['created', 'unchanged']);
    expect((await ensureReaperSchedule(client, o)).did).toBe('unchanged');
    // A retention below the resume window never reaches the schedule.
    expect((await ensureReaperSchedule(client, { ...o, retentionMs: DAY })).did).toBe('updated');
    let d = await client.schedule.getHandle(scheduleId).describe();
    expect(d.action.args).toEqual([{ retentionMs: MIN_RETENTION_MS }]);
    expect(
      (await ensureReaperSchedule(client, { ...o, intervalMs: 2 * DEFAULT_REAPER_INTERVAL_MS })).did,
    ).toBe('updated');
    d = await client.schedule.getHandle(scheduleId).describe();
    expect(d.spec.intervals?.[0]?.every).toBe(2 * DEFAULT_REAPER_INTERVAL_MS);
    expect(d.action).toMatchObject({
      workflowType: 'ledgerReaper',
      taskQueue: h.taskQueue,
      args: [{ retentionMs: 30 * DAY }],
    });
  });

  it('deletes an old settled record of a closed run; keeps a recent one, an UNKNOWN one and an open run’s', async () => {
    // A closed run with an old record, and one with a recent record.
    const closed = await h.start(live([notify('closed')]));
    await runResult(closed);
    const recent = await h.start(live([notify('recent')]));
    await runResult(recent);
    // A run that stopped (same_call_repeat) and still waits for resume: its record must survive any retention.
    const repeat = search('again');
    const open = await h.start(
      live([notify('open'), repeat, repeat, repeat], { resumeWindowMs: 10 * 60_000 }),
    );
    await waitFor(
      () => open.handle.query(statusQuery),
      (s) => s.waitingForResume,
    );
    // An UNKNOWN record (an executor died after dispatch) of a run Temporal never knew.
    const c = await h.deps.ledger.claim({
      key: 'unknown-op',
      tool: 'send_notification',
      argsHash: 'sha256:0',
      runId: 'gone-run',
      owner: 'dead',
      leaseMs: 5_000,
    });
    if (c.kind !== 'claimed') throw new Error(c.kind);
    await h.deps.ledger.dispatch('unknown-op', c.token);
    await h.deps.ledger.markUnknown('unknown-op', c.token, 'test');
    // A SUCCEEDED record of a run Temporal has no trace of (past its retention): it cannot resume.
    const g = await h.deps.ledger.claim({
      key: 'gone-op',
      tool: 'send_notification',
      argsHash: 'sha256:1',
      runId: uniqueId('never-started'),
      owner: 'old',
      leaseMs: 5_000,
    });
    if (g.kind !== 'claimed') throw new Error(g.kind);
    await h.deps.ledger.commit('gone-op', g.token, null);
    for (const k of [keyOf('closed'), keyOf('open'), 'unknown-op', 'gone-op']) age(k, 40 * DAY);

    const handle = client.schedule.getHandle(scheduleId);
    await handle.trigger();
    const started = await waitFor(
      () => handle.describe(),
      (d) => d.info.recentActions.length > 0,
    );
    const action = started.info.recentActions[0]?.action;
    const out = (await client.workflow
      .getHandle(action?.workflow.workflowId ?? '')
      .result()) as ReapLedgerOutput;

    expect(out).toMatchObject({
      retentionMs: 30 * DAY,
      removed: 2,
      runsReaped: 2,
      runsOpen: 1,
      runsUnchecked: 0,
    });
    expect(await h.deps.ledger.get(keyOf('closed'))).toBeNull();
    expect(await h.deps.ledger.get('gone-op')).toBeNull();
    expect(await h.deps.ledger.get(keyOf('recent'))).toMatchObject({ state: 'SUCCEEDED' });
    expect(await h.deps.ledger.get(keyOf('open'))).toMatchObject({ state: 'SUCCEEDED' });
    expect(await h.deps.ledger.get('unknown-op')).toMatchObject({ state: 'UNKNOWN' });
    await open.handle.terminate('test done');
  });
});
