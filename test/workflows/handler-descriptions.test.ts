/**
 * The handlers a person may use describe themselves where the Temporal UI reads them (the SDK's
 * `__temporal_workflow_metadata` query: its Queries tab and "Send an Update"), so a person
 * looking at a stopped run finds that `resume` is the update that lets it go on.
 */
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

describe("an agentRun's handlers in the UI's metadata", () => {
  let h: Harness;
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
    await run.handle.terminate('test done');
  });
});
