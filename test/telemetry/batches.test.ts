/**
 * Telemetry in batches (core/telemetry-outbox.ts), on live workers:
 *  - a listening worker's telemetry hears every decision the run's trace holds, in order,
 *    across continue-as-new (each run's last batch goes in the activation that continues it),
 *    a stop after the decisions that led to it and the run's end last; the decisions reach the
 *    sink in a few `decisions` calls, never one `decision` call each;
 *  - a worker whose telemetry listens to nothing (its bundle built with
 *    `agentBundleOptions({ telemetry: false })`, as createAgentWorker and the plugins bundle it
 *    without `telemetry`) makes no `agentTelemetry` sink call at all; a bundle built beforehand
 *    keeps the outbox (the worker that runs it may listen);
 *  - a batch pending when its worker stops gracefully is sent, once, by the worker that takes
 *    the run next (it rebuilds the batch on replay).
 * The sink calls are read where the worker processes them (the SDK's `processSinkCalls`).
 */
import { Worker } from '@temporalio/worker';
import type { DecisionEvent, RunEndEvent } from '../../common/telemetry';
import { traceQuery } from '../../common/contracts';
import { quietWorkflowBundle } from '../../scripts/workflow-bundle';
import {
  TELEMETRY_OFF_MODULE,
  TELEMETRY_OUTBOX_MODULE,
  agentBundleOptions,
  silencedUnlessListening,
  withOutbox,
} from '../../worker/bundle-options';
import { MAX_BATCH_DECISIONS } from '../../core/telemetry-outbox';
import { fixture, live, search, waitFor } from '../helpers/run-inputs';
import { startHarness, workflowBundle, type Harness } from '../helpers/run-harness';
import { createAgentWorker, type AgentTelemetry } from '../../worker/create-worker';
import { runResult } from '../helpers/run-result';

interface SinkCall {
  ifaceName: string;
  fnName: string;
  args: unknown[];
  workflowInfo: { workflowId: string; unsafe: { isReplaying: boolean } };
}

/** Every sink call the worker processes in this process. */
const sinkCalls: SinkCall[] = [];
type Processing = { processSinkCalls(calls: SinkCall[], attrs: unknown): Promise<void> };
const proto = Worker.prototype as unknown as Processing;
const processSinkCalls = proto.processSinkCalls;
jest.spyOn(proto, 'processSinkCalls').mockImplementation(function (this: Processing, calls, attrs) {
  sinkCalls.push(...calls);
  return processSinkCalls.call(this, calls, attrs);
});

/** A run's live `agentTelemetry` calls (a replay's, e.g. for a query of the closed run, are not delivered). */
const callsOf = (workflowId: string): SinkCall[] =>
  sinkCalls.filter(
    (c) =>
      c.ifaceName === 'agentTelemetry' &&
      c.workflowInfo.workflowId === workflowId &&
      !c.workflowInfo.unsafe.isReplaying,
  );

/** A run that continues-as-new several times and stops on a repeat (test/workflows/continue-as-new.test.ts). */
const canScript = () => {
  const write = { tool: 'write_record', args: { id: 'batch-1', body: 'v1' } };
  return live(
    [
      write,
      search('nothing-1'),
      search('nothing-2'),
      search('nothing-3'),
      search('nothing-1'),
      search('nothing-4'),
      write,
      search('nothing-5'),
      search('nothing-1'), // third proposal: same_call_repeat
      { tool: 'complete_task', args: { summary: 'never reached' } },
    ],
    { maxHistoryEvents: 25, guard: { noProgressLimit: 20 } },
  );
};

it('bundles the outbox for a listening worker and the silent module for one that listens to nothing', () => {
  expect(withOutbox(undefined).workflowModules).toEqual([TELEMETRY_OUTBOX_MODULE]);
  expect(withOutbox({ workflowModules: ['x'] }, false).workflowModules).toEqual(['x', TELEMETRY_OFF_MODULE]);
  expect(agentBundleOptions({ telemetry: false }).workflowInterceptorModules).toEqual([TELEMETRY_OFF_MODULE]);
  expect(agentBundleOptions().workflowInterceptorModules).toEqual([TELEMETRY_OUTBOX_MODULE]);
  // A plugin's worker that bundles without telemetry; a prebuilt bundle keeps the outbox.
  const modules = (o: { interceptors?: { workflowModules?: string[] } }) => o.interceptors?.workflowModules;
  expect(modules(silencedUnlessListening({ interceptors: withOutbox() }, false))).toEqual([
    TELEMETRY_OFF_MODULE,
  ]);
  expect(modules(silencedUnlessListening({ interceptors: withOutbox() }, true))).toEqual([
    TELEMETRY_OUTBOX_MODULE,
  ]);
  expect(
    modules(silencedUnlessListening({ workflowBundle: { code: '' }, interceptors: withOutbox() }, false)),
  ).toEqual([TELEMETRY_OUTBOX_MODULE]);
});

describe('a listening worker', () => {
  let h: Harness;
  const heard: ({ kind: 'decision'; e: DecisionEvent } | { kind: 'end'; e: RunEndEvent })[] = [];
  beforeAll(async () => {
    h = await startHarness({
      worker: () => ({
        telemetry: {
          decision: (e) => void heard.push({ kind: 'decision', e }),
          runEnd: (e) => void heard.push({ kind: 'end', e }),
          turn: () => undefined,
        },
      }),
    });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('hears every decision in order across continue-as-new, the stop after its decisions, the end last', async () => {
    const run = await h.start(canScript());
    const r = await runResult(run);
    expect(r.terminal_state).toBe('STOPPED_LOOP_GUARD');
    expect(r.reason).toBe('same_call_repeat');
    const trace = await run.handle.query(traceQuery, { limit: 1000 });
    expect(trace.total).toBe(trace.records.length);

    const mine = heard.filter((x) => x.e.runId === run.workflowId);
    const decisions = mine.flatMap((x) => (x.kind === 'decision' ? [x.e] : []));
    const fields = (d: {
      phase: string;
      decision: string;
      reason: string | null;
      tool: string | null;
      step: number;
    }) => [d.phase, d.decision, d.reason, d.tool, d.step].join(' ');
    expect(decisions.map(fields)).toEqual(trace.records.map(fields));
    for (const d of decisions) expect(typeof d.atMs).toBe('number');

    // The stop is heard after the decision that stopped the run; the close is heard last.
    const stopAt = mine.findIndex((x) => x.kind === 'end' && !x.e.closed);
    expect(mine[stopAt]?.e).toMatchObject({ reason: 'same_call_repeat', closed: false });
    const stopDecision = trace.records.findIndex((rec) => rec.reason === 'same_call_repeat');
    expect(mine.slice(0, stopAt).filter((x) => x.kind === 'decision').length).toBeGreaterThan(stopDecision);
    expect(mine.at(-1)).toEqual({
      kind: 'end',
      e: {
        runId: run.workflowId,
        terminalState: 'STOPPED_LOOP_GUARD',
        reason: 'same_call_repeat',
        closed: true,
      },
    });

    // In batches: no single `decision` call, a few `decisions` calls of at most the bound each.
    const calls = callsOf(run.workflowId);
    expect(calls.filter((c) => c.fnName === 'decision')).toEqual([]);
    const batches = calls.filter((c) => c.fnName === 'decisions');
    expect(batches.flatMap((c) => c.args[0] as DecisionEvent[]).length).toBe(decisions.length);
    for (const b of batches)
      expect((b.args[0] as DecisionEvent[]).length).toBeLessThanOrEqual(MAX_BATCH_DECISIONS);
    expect(batches.length).toBeLessThan(decisions.length / 2);
  });
});

describe('a worker whose telemetry listens to nothing', () => {
  let h: Harness;
  beforeAll(async () => {
    const workflowBundle = await quietWorkflowBundle({ telemetry: false });
    h = await startHarness({ worker: () => ({ workflowBundle }) });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('makes no agentTelemetry sink call, through continue-as-new, a stop and the end', async () => {
    const run = await h.start(canScript());
    const r = await runResult(run);
    expect(r.reason).toBe('same_call_repeat');
    expect(callsOf(run.workflowId)).toEqual([]);
  });
});

describe('a worker that stops gracefully with a batch pending', () => {
  let h: Harness;
  const heardA: DecisionEvent[] = [];
  const heardB: DecisionEvent[] = [];
  const ends: RunEndEvent[] = [];
  const listener = (into: DecisionEvent[]): AgentTelemetry => ({
    decision: (e) => void into.push(e),
    runEnd: (e) => void ends.push(e),
    turn: () => undefined,
  });
  beforeAll(async () => {
    h = await startHarness({ worker: () => ({ telemetry: listener(heardA) }) });
  });
  afterAll(async () => {
    // Worker A was shut down already: only the deps are left to close.
    await h?.close().catch(() => h.deps.close());
  });

  it('leaves it to the next worker, which rebuilds it on replay and sends it once', async () => {
    // A 429 waited out on a timer: worker A stops while the run waits, worker B goes on.
    const fetch = { tool: 'fetch_report', args: { id: 'q3' } };
    const run = await h.start(
      fixture([
        { ...fetch, atMs: 0, result: { kind: 'RETRYABLE', code: 'rate_limited', retryAfterMs: 3000 } },
        { ...fetch, atMs: 3000, result: { kind: 'SUCCESS', data: { rows: 3 } }, progressVersion: 1 },
        {
          tool: 'publish_summary',
          args: { id: 'q3' },
          operationKey: 'q3:summary',
          atMs: 3100,
          result: { kind: 'SUCCESS', terminal: true },
          progressVersion: 2,
        },
      ]),
    );
    await waitFor(
      () => run.handle.fetchHistory(),
      (hist) => (hist.events ?? []).some((e) => e.timerStartedEventAttributes),
    );
    h.worker.shutdown();
    await waitFor(
      async () => h.worker.getState(),
      (s) => s === 'STOPPED',
    );
    // A never sent the decisions before the wait: fewer than a batch, less than 1 s apart.
    expect(heardA.filter((e) => e.runId === run.workflowId)).toEqual([]);

    const b = await createAgentWorker({
      connection: h.env.nativeConnection,
      namespace: 'default',
      taskQueue: h.taskQueue,
      deps: h.deps,
      dataConverter: h.dataConverter,
      workflowBundle: await workflowBundle(),
      searchAttributes: 'skip',
      telemetry: listener(heardB),
    });
    const { result, trace } = await b.runUntil(async () => ({
      result: await runResult(run),
      trace: await run.handle.query(traceQuery, { limit: 1000 }),
    }));
    expect(result.terminal_state).toBe('COMPLETED');
    const heard = [...heardA, ...heardB].filter((e) => e.runId === run.workflowId);
    const fields = (d: {
      phase: string;
      decision: string;
      reason: string | null;
      tool: string | null;
      step: number;
    }) => [d.phase, d.decision, d.reason, d.tool, d.step].join(' ');
    expect(heard.map(fields)).toEqual(trace.records.map(fields));
    // Every decision once, the ones made on A among them (B sent them), and the end last.
    expect(heard[0]).toMatchObject({ phase: 'before', tool: 'fetch_report' });
    expect(heard.filter((d) => d.tool === 'fetch_report' && d.phase === 'after')).toHaveLength(2);
    expect(ends.filter((e) => e.runId === run.workflowId).at(-1)).toMatchObject({ closed: true });
  });
});
