/**
 * Issue 42: the SDK captures a source-mapped stack trace for every promise workflow code makes
 * (its promise hook, for the `__stack_trace` query), ~50 µs each: promises per step are the
 * workflow thread's largest cost after the SDK's own. A scripted live step made 15.3 before
 * issue 42's cut; a bare loop of one activity per step makes 3.1. This counts them in a real
 * run (workflows in this thread: `debugMode`) so a refactor that brings them back is seen.
 * A count, not a time: the figure itself is bench:floor's.
 */
import { promiseHooks } from 'node:v8';
import { live, search, type ScriptCall } from '../helpers/run-inputs';
import { startHarness, type Harness } from '../helpers/run-harness';
import type { WorkerTuning } from '../../worker/env';
import { runResult } from '../helpers/run-result';

jest.setTimeout(60_000);

const STEPS = 40;

describe('promises a guarded step makes in workflow code', () => {
  let h: Harness;
  let made = 0;
  let stop: () => void = () => undefined;
  beforeAll(async () => {
    // `tuning` reaches Worker.create as it is; debugMode (not a tuning knob) runs workflows here.
    const inThisThread = { debugMode: true } as unknown as WorkerTuning;
    h = await startHarness({ worker: () => ({ tuning: inThisThread }) });
    // Promises of a workflow's sandbox only: made in a realm with an activator, as the SDK's
    // own hook tells them apart (Jest's realm and Node's make promises here too).
    stop = promiseHooks.createHook({
      init: (p) => {
        const realm = (p as unknown as { constructor: { constructor: FunctionConstructor } }).constructor
          .constructor;
        if ((realm('return globalThis')() as { __TEMPORAL_ACTIVATOR__?: unknown }).__TEMPORAL_ACTIVATOR__)
          made += 1;
      },
    }) as () => void;
  });
  afterAll(async () => {
    stop();
    await h?.close();
  });

  it(`a scripted live run of ${STEPS} reads makes at most 5 per step (3.9 here, the floor's 3.1; 15.8 before issue 42), and runs each read once`, async () => {
    const calls: ScriptCall[] = Array.from({ length: STEPS }, (_, i) => search(`q-${i}`));
    calls.push({ tool: 'complete_task', args: { summary: 'done' } });
    const before = made;
    const unbounded = { maxSteps: 1_000, noProgressLimit: 1_000, maxMs: 600_000 };
    const run = await h.start(live(calls, { guard: unbounded }));
    const r = await runResult(run);
    const perStep = (made - before) / (STEPS + 1);
    expect(r).toMatchObject({ terminal_state: 'COMPLETED', executed: STEPS + 1 });
    expect(await h.counters(run.workflowId)).toEqual({ search: STEPS, complete_task: 1 });
    expect(perStep).toBeGreaterThan(2); // the hook sees the workflow's promises at all
    expect(perStep).toBeLessThanOrEqual(5);
  });
});
