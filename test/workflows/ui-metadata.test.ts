/**
 * What the Temporal UI reads of a stopped run besides its payloads: the handlers a person may
 * use describe themselves (the SDK's `__temporal_workflow_metadata` query: its Queries tab and
 * "Send an Update"), so a person finds that `resume` is the update that lets it go on; and the
 * resume window's timer says what it waits for and which command ends it (its summary in
 * history, the Timeline's label).
 */
import type { Payload } from '@temporalio/common';
import { startAgentRun } from '../../client/api';
import { statusQuery } from '../../common/contracts';
import { HANDLER_DESCRIPTIONS } from '../../core/handlers';
import { startHarness, type Harness } from '../helpers/run-harness';
import { live, search, waitFor } from '../helpers/run-inputs';

type Definition = { name: string; description?: string };
type Metadata = {
  definition?: {
    queryDefinitions?: Definition[];
    signalDefinitions?: Definition[];
    updateDefinitions?: Definition[];
  };
};

describe("an agentRun's handlers and timers in the UI's metadata", () => {
  let h: Harness;
  /** A payload of history as the UI shows it through the codec endpoint: decoded. */
  const decoded = async (p: Payload | null): Promise<unknown> => {
    if (!p) return null;
    const dc = h.env.client.options.loadedDataConverter;
    let out = p;
    for (const codec of [...dc.payloadCodecs].reverse()) out = (await codec.decode([out]))[0]!;
    return dc.payloadConverter.fromPayload(out);
  };
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('every query, update and signal a person may send carries a description', async () => {
    const run = await h.start(live([search('a'), search('a'), search('a')], { resumeWindowMs: 60_000 }));
    await waitFor(
      () => run.handle.query(statusQuery),
      (s) => s.waitingForResume,
    );
    const meta = await run.handle.query<Metadata>('__temporal_workflow_metadata');
    const described = (defs: Definition[] | undefined) =>
      Object.fromEntries((defs ?? []).map((d) => [d.name, d.description ?? '']));
    const updates = described(meta.definition?.updateDefinitions);
    const queries = described(meta.definition?.queryDefinitions);
    const signals = described(meta.definition?.signalDefinitions);
    expect(updates.resume).toBe(HANDLER_DESCRIPTIONS.resume);
    expect(updates.resume).toMatch(/agentctl resume <run-id>/);
    expect(updates.stop).toMatch(/Kill switch/);
    expect(updates.message).toMatch(/agentctl send/);
    for (const q of ['status', 'report', 'checkpoint', 'trace', 'conversation'])
      expect(queries[q]?.length ?? 0).toBeGreaterThan(20);
    expect(signals.resume).toMatch(/Prefer the resume update/);
    expect(signals.stop).toMatch(/Prefer the stop update/);

    // The resume window's timer, as the UI's Timeline labels it.
    const history = await run.handle.fetchHistory();
    const timers = (history.events ?? []).filter((e) => e.timerStartedEventAttributes);
    expect(timers.length).toBeGreaterThan(0);
    const summaries = await Promise.all(timers.map((e) => decoded(e.userMetadata?.summary ?? null)));
    expect(summaries).toContain(
      `stopped STOPPED_LOOP_GUARD (same_call_repeat on search): waits for a verified resume · agentctl resume ${run.workflowId}`,
    );
    await run.handle.terminate('test done');
  });

  it("a stopped run's details say the way on; its static details say what the run is", async () => {
    const secret = 'sk_live_0123456789abcdefABCDEF';
    const query = `disk full token=${secret}`;
    const input = live([search(query), search(query), search(query)], {
      resumeWindowMs: 60_000,
      guard: { maxSteps: 40 },
    });
    const handle = await startAgentRun(h.env.client, { input, taskQueue: h.taskQueue });
    await waitFor(
      () => handle.query(statusQuery),
      (s) => s.waitingForResume,
    );
    const details =
      (await handle.query<{ currentDetails?: string }>('__temporal_workflow_metadata')).currentDetails ?? '';
    expect(details).toContain('**state** STOPPED_LOOP_GUARD · **reason** same_call_repeat');
    expect(details).toContain('**blocked call** ` search {"query":"disk full token=[REDACTED]","limit":3} `');
    expect(details).not.toContain(secret);
    expect(details).toMatch(/\*\*goes on when\*\* external state changed/);
    expect(details).toMatch(/\*\*waits for a resume until\*\* \d{4}-\d\d-\d\dT/);
    expect(details).toContain(`**to go on** \` agentctl resume ${handle.workflowId} --reason "…" \``);
    // It has not ended: it waits.
    expect(details).not.toMatch(/\*\*ended\*\*/);
    const desc = await handle.describe();
    const staticDetails = (await desc.staticDetails()) ?? '';
    expect(staticDetails).toContain('**planner** scripted');
    expect(staticDetails).toContain('**budgets** maxSteps 40');
    await handle.terminate('test done');
  });
  it("a write's tool row says which call it is; a read's has no summary (one payload less per step)", async () => {
    const write = { tool: 'write_record', args: { id: 'ui-row-1', body: 'v1' } };
    const run = await h.start(
      live([search('ui row'), write, { tool: 'complete_task', args: { summary: 'ok' } }]),
    );
    await run.result();
    const events = (await run.handle.fetchHistory()).events ?? [];
    const rows = await Promise.all(
      events
        .filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'runTool')
        .map((e) => decoded(e.userMetadata?.summary ?? null)),
    );
    expect(rows).toHaveLength(3);
    expect(rows[0]).toBeNull();
    expect(rows[1]).toMatch(/^write_record · [0-9a-f]{8}$/);
    expect(rows[2]).toBeNull();
  });
});
