/**
 * Agent time, not waiting time (issue 29, docs/spec.md §3 rule 2): the durable timers of PENDING
 * re-polls are off the wall clock, so a run that mostly waits is not stopped
 * `wall_clock_budget`; a run that is busy for longer than its budget still is, on time. The
 * assertions are the tools' own counters.
 */
import { z } from 'zod';
import { defineTool } from '../../tools/define-tool';
import { live } from '../helpers/run-inputs';
import { startHarness, type Harness } from '../helpers/run-harness';
import { runResult } from '../helpers/run-result';

const WAIT_MS = 1500;
const BUDGET_MS = 2500;

describe('the wall clock measures the agent, not its waits (durable)', () => {
  let h: Harness;
  const busy = defineTool({
    name: 'crunch',
    description: 'Busy for 900 ms.',
    effect: 'read',
    schema: z.object({ n: z.number() }).strict(),
    async execute(a) {
      await new Promise((r) => setTimeout(r, 900));
      return { data: { n: a.n } };
    },
  });
  beforeAll(async () => {
    h = await startHarness({ pollAfterMs: WAIT_MS, tools: [busy] });
  });
  afterAll(async () => {
    await h?.close();
  });

  it(`two ${WAIT_MS} ms PENDING waits in a ${BUDGET_MS} ms budget: COMPLETED, poll_job 3`, async () => {
    const poll = { tool: 'poll_job', args: { jobId: 'clock-1' } };
    const run = await h.start(
      live(
        [
          { tool: 'start_job', args: { name: 'clock-1', pollsNeeded: 3 } },
          poll,
          poll,
          poll,
          { tool: 'complete_task', args: { summary: 'done after waiting' } },
        ],
        { guard: { maxMs: BUDGET_MS } },
      ),
    );
    const r = await runResult(run);
    // Before issue 29 the 3 s of waiting used the whole budget: wall_clock_budget at the third poll.
    expect(r).toMatchObject({ terminal_state: 'COMPLETED' });
    expect(await h.counters(run.workflowId)).toEqual({ start_job: 1, poll_job: 3, complete_task: 1 });
    const history = await run.handle.fetchHistory();
    expect((history.events ?? []).filter((e) => e.timerStartedEventAttributes)).toHaveLength(2);
  });

  it(`a run busy for longer than ${BUDGET_MS} ms still stops wall_clock_budget on time`, async () => {
    const started = Date.now();
    const run = await h.start(
      live(
        Array.from({ length: 8 }, (_, n) => ({ tool: 'crunch', args: { n } })),
        // The harness's world source does not see crunch's results as progress: no no_progress here.
        { guard: { maxMs: BUDGET_MS, noProgressLimit: 20 } },
      ),
    );
    const r = await runResult(run);
    expect(r).toMatchObject({ terminal_state: 'STOPPED_LOOP_GUARD', reason: 'wall_clock_budget' });
    // 900 ms a call: the third call ends past 2.5 s, so at most 3 ran (4 on a slow machine's clock skew).
    const n = (await h.counters(run.workflowId)).crunch ?? 0;
    expect(n).toBeGreaterThanOrEqual(2);
    expect(n).toBeLessThanOrEqual(3);
    expect(Date.now() - started).toBeLessThan(BUDGET_MS + 5000);
  });
});
