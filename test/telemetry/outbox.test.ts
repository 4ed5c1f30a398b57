/**
 * The telemetry outbox (core/telemetry-outbox.ts, issue 42): with the outbox interceptor in
 * the bundle (every agent worker's, and the tests' shared one), a run's decisions reach the
 * `agentTelemetry` sink in `decisions` batches (at most MAX_BATCH_DECISIONS each) — every
 * decision the run's trace holds, in order, and a run's end after the decisions that led there
 * (test/telemetry/batches.test.ts checks the same on a live worker). The sinks are
 * counted by replaying the run's history with sinks that are called during replay (a live
 * worker's `agentTelemetry` is the package's own). A bundle without the outbox sends one
 * `decision` call each: test/telemetry/otel-run.test.ts runs on such a bundle.
 */
import { Worker } from '@temporalio/worker';
import type { DecisionEvent, RunEndEvent } from '../../common/telemetry';
import { traceQuery } from '../../common/contracts';
import { live, search } from '../helpers/run-inputs';
import { startHarness, workflowBundle, type Harness } from '../helpers/run-harness';
import { runResult } from '../helpers/run-result';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

type Call =
  | { fn: 'decision'; events: DecisionEvent[] }
  | { fn: 'decisions'; events: DecisionEvent[] }
  | { fn: 'runEnd'; event: RunEndEvent };

it('sends the decisions in batches: all of them, in order, the run’s end last', async () => {
  const run = await h.start(
    live([search('outbox one'), search('outbox two'), { tool: 'complete_task', args: { summary: 'done' } }]),
  );
  const result = await runResult(run);
  expect(result.terminal_state).toBe('COMPLETED');
  const trace = await run.handle.query(traceQuery, { limit: 1000 });
  const history = await run.handle.fetchHistory();

  const calls: Call[] = [];
  await Worker.runReplayHistory(
    {
      workflowBundle: await workflowBundle(),
      dataConverter: h.dataConverter,
      sinks: {
        agentTelemetry: {
          decision: {
            fn: (_i, e: DecisionEvent) => void calls.push({ fn: 'decision', events: [e] }),
            callDuringReplay: true,
          },
          decisions: {
            fn: (_i, es: DecisionEvent[]) => void calls.push({ fn: 'decisions', events: es }),
            callDuringReplay: true,
          },
          runEnd: {
            fn: (_i, e: RunEndEvent) => void calls.push({ fn: 'runEnd', event: e }),
            callDuringReplay: true,
          },
          turn: { fn: () => undefined, callDuringReplay: true },
        },
      },
    },
    history,
    run.workflowId,
  );

  // Batched: no single `decision` call, fewer calls than decisions.
  expect(calls.filter((c) => c.fn === 'decision')).toEqual([]);
  const batches = calls.filter((c) => c.fn === 'decisions');
  const events = batches.flatMap((c) => c.events);
  expect(batches.length).toBeLessThan(events.length);
  expect(batches.some((c) => c.events.length >= 2)).toBe(true);
  // Every decision of the trace, in its order.
  const fields = (r: {
    phase: string;
    decision: string;
    reason: string | null;
    tool: string | null;
    step: number;
  }) => [r.phase, r.decision, r.reason, r.tool, r.step].join(' ');
  expect(trace.total).toBe(trace.records.length);
  expect(events.map(fields)).toEqual(trace.records.map(fields));
  for (const e of events) expect(e.runId).toBe(run.workflowId);
  // The run's end comes after every decision.
  const last = calls[calls.length - 1];
  expect(last).toEqual({
    fn: 'runEnd',
    event: { runId: run.workflowId, terminalState: 'COMPLETED', reason: null, closed: true },
  });
});
