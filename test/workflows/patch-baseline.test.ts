/**
 * Issue 19: a run started on this code asks one patch, `patch-baseline-v1`, and takes every
 * change of workflows/run-patches.ts BASELINE_PATCHES without a marker (and without the
 * `TemporalChangeVersion` upsert the SDK core adds to each patch). Before, a short live run
 * recorded four patches (eight of its 28 events) and a run with the guard on one more than a run
 * with it off. Runs recorded before the baseline replay each patch by its own marker
 * (test/workflows/determinism.test.ts replays both kinds: `baseline-stop-resumed` and
 * `baseline-continued` were recorded on it, every older history before it).
 */
import type { temporal } from '@temporalio/proto';
import { resumeUpdate, statusQuery, type RunInput } from '../../common/contracts';
import { BASELINE_PATCHES, PATCH_BASELINE } from '../../workflows/run-patches';
import { live, search, waitFor } from '../helpers/run-inputs';
import { startHarness, type Harness } from '../helpers/run-harness';
import { uniqueId } from '../helpers/temporal-env';

type History = temporal.api.history.v1.IHistory;

/** The patch ids a history recorded, in order (`core_patch` markers). */
function patchIds(h: History): string[] {
  const ids: string[] = [];
  for (const e of h.events ?? []) {
    const a = e.markerRecordedEventAttributes;
    if (a?.markerName !== 'core_patch') continue;
    // The SDK core's marker details: `patch-data` = {"id": …, "deprecated": …}, plain JSON.
    const data = a.details?.['patch-data']?.payloads?.[0]?.data;
    ids.push(data ? (JSON.parse(Buffer.from(data).toString('utf8')) as { id: string }).id : '?');
  }
  return ids;
}

/** Upserts of the SDK core's `TemporalChangeVersion` search attribute. */
const changeVersionUpserts = (h: History): number =>
  (h.events ?? []).filter(
    (e) =>
      e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields?.[
        'TemporalChangeVersion'
      ],
  ).length;

describe('patch baseline: one marker per run', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  async function runToEnd(input: RunInput): Promise<{ history: History; executed: number; state: string }> {
    const run = await h.start(input);
    const r = await run.result();
    return { history: await run.handle.fetchHistory(), executed: r.executed, state: r.terminal_state };
  }

  it('a fresh live run records only the baseline patch, and the guard adds no history event', async () => {
    const script = (tag: string) => [
      search(`baseline ${tag}`),
      { tool: 'write_record', args: { id: uniqueId(`pb-${tag}`), body: 'b' } },
      { tool: 'complete_task', args: { summary: 'done' } },
    ];
    const on = await runToEnd(live(script('on')));
    const off = await runToEnd({ ...live(script('off')), guardEnabled: false });
    for (const r of [on, off]) {
      expect(r.state).toBe('COMPLETED');
      expect(r.executed).toBe(3);
      expect(patchIds(r.history)).toEqual([PATCH_BASELINE]);
      expect(changeVersionUpserts(r.history)).toBe(1);
    }
    // Before the baseline the guard's own patch (no-search-attribute-upsert-per-step) cost a run
    // with the guard on two events more than one with it off.
    expect(on.history.events?.length).toBe(off.history.events?.length);
    expect(BASELINE_PATCHES).not.toContain(PATCH_BASELINE);
  }, 60_000);

  it('a stop, a verified resume and a write: still one marker, the write ran once', async () => {
    const service = uniqueId('pb-svc');
    const id = uniqueId('pb-write');
    const deploy = { tool: 'deploy', args: { service, version: '1' } };
    const run = await h.start(
      live(
        [
          { tool: 'write_record', args: { id, body: 'b' } },
          deploy,
          deploy,
          { tool: 'complete_task', args: { summary: 'deployed' } },
        ],
        { resumeWindowMs: 60_000 },
      ),
    );
    await waitFor(
      () => run.handle.query(statusQuery),
      (s) => s.phase === 'WAITING',
    );
    await h.deps.world.grant(`deploy:${service}`);
    const answer = await run.handle.executeUpdate(resumeUpdate, {
      args: [{ actor: 'a', reason: 'granted', requestId: uniqueId('pb-resume') }],
    });
    expect(answer.accepted).toBe(true);
    const r = await run.result();
    expect(r.terminal_state).toBe('COMPLETED');
    expect(patchIds(await run.handle.fetchHistory())).toEqual([PATCH_BASELINE]);
    expect((await h.worldCounters(run.workflowId)).write_record).toBe(1);
  }, 60_000);
});
