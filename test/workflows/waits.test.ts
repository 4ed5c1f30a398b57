/**
 * Issue 3 item 11, parts 4 and 5: waits are durable timers.
 *  - PENDING polling (`start_job` + `poll_job`): the honoured re-polls are not repeats, the
 *    run finishes COMPLETED and `poll_job` ran exactly `pollsNeeded` times; each wait is a
 *    Temporal timer in the history.
 *  - The operator's `stop` signal while the run sleeps on a long wait ends the run
 *    STOPPED_LOOP_GUARD / operator_stop promptly, and no tool runs after it.
 */
import { stopSignal, statusQuery, traceQuery } from '../../common/contracts';
import { live, waitFor } from '../helpers/run-inputs';
import { startHarness, type Harness } from '../helpers/run-harness';
import { runResult } from '../helpers/run-result';

const POLLS = 4;

describe('durable waits (real dev server)', () => {
  let fast: Harness; // poll_job asks to be polled again after 100 ms
  let slow: Harness; // ... after 60 s
  beforeAll(async () => {
    [fast, slow] = await Promise.all([
      startHarness({ pollAfterMs: 100 }),
      startHarness({ pollAfterMs: 60_000 }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([fast?.close(), slow?.close()]);
  });

  it('PENDING polls are honoured re-polls over durable timers; poll counter == pollsNeeded', async () => {
    const poll = { tool: 'poll_job', args: { jobId: 'build-1' } };
    const run = await fast.start(
      live([
        { tool: 'start_job', args: { name: 'build-1', pollsNeeded: POLLS } },
        ...Array.from({ length: POLLS }, () => poll),
        { tool: 'complete_task', args: { summary: 'build done' } },
      ]),
    );
    const r = await runResult(run);
    expect(r.terminal_state).toBe('COMPLETED');
    expect(r.decisions.map((d) => d.after)).toEqual([
      'continue', // start_job
      ...Array.from({ length: POLLS - 1 }, () => 'wait_bounded'),
      'continue', // the job is done
      'complete',
    ]);
    expect(await fast.counters(run.workflowId)).toEqual({ start_job: 1, poll_job: POLLS, complete_task: 1 });

    const history = await run.handle.fetchHistory();
    const timers = (history.events ?? []).filter((e) => e.timerStartedEventAttributes);
    expect(timers).toHaveLength(POLLS - 1);
    for (const t of timers)
      expect(Number(t.timerStartedEventAttributes?.startToFireTimeout?.nanos ?? 0) / 1e6).toBe(100);
  });

  it('operator stop during a long wait ends the run at once; no tool runs after it', async () => {
    const run = await slow.start(
      live([
        { tool: 'start_job', args: { name: 'long-1', pollsNeeded: 5 } },
        { tool: 'poll_job', args: { jobId: 'long-1' } },
        { tool: 'poll_job', args: { jobId: 'long-1' } },
        { tool: 'complete_task', args: { summary: 'never' } },
      ]),
    );
    // The first poll answered PENDING retryAfterMs 60 s: the run sleeps on a timer.
    await waitFor(
      () => slow.counters(run.workflowId),
      (c) => c.poll_job === 1,
    );
    await waitFor(
      () => run.handle.query(statusQuery),
      (s) => s.lastDecision === 'wait_bounded',
    );
    const atStop = await slow.counters(run.workflowId);
    const t0 = Date.now();
    await run.handle.signal(stopSignal, { actor: 'oncall', reason: 'runaway costs', requestId: 'stop-1' });

    const r = await runResult(run);
    expect(Date.now() - t0).toBeLessThan(15_000); // not after the 60 s wait
    expect(r.terminal_state).toBe('STOPPED_LOOP_GUARD');
    expect(r.reason).toBe('operator_stop');
    expect(r.report?.guard_reason).toBe('operator_stop');
    expect(await slow.counters(run.workflowId)).toEqual(atStop);
    expect(atStop).toEqual({ start_job: 1, poll_job: 1 });
    const stops = await run.handle.query(traceQuery, { reason: 'operator_stop' });
    expect(stops.records.map((x) => x.decision)).toContain('stop');
  });
});
