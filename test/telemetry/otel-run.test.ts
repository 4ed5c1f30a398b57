/**
 * Issue #11 part 3: OpenTelemetry on a real durable run. A worker with worker/telemetry's
 * interceptors, sinks and agentTelemetry (exporters: the SDK's in-memory ones) runs the
 * scripted `search` three times in live mode on the shared dev server; the guard stops
 * the third call (`same_call_repeat`, docs/spec.md §3 rule before.5). The spans, the
 * decision events and the counters must say exactly that, and the recorded histories
 * must still replay with the OTel workflow interceptors bundled in.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  type ResourceMetrics,
} from '@opentelemetry/sdk-metrics';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import type { temporal } from '@temporalio/proto';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import type { RunResult } from '../../common/contracts';
import { agentSinks, WORKFLOWS_PATH } from '../../worker/create-worker';
import {
  Attr,
  createTelemetry,
  MetricNames,
  otelWorkflowInterceptorsModule,
  SpanNames,
  type Telemetry,
} from '../../worker/telemetry';
import { startHarness, workflowBundle, type Harness } from '../helpers/run-harness';
import { live, search, waitFor, type ScriptCall } from '../helpers/run-inputs';
import { runResult } from '../helpers/run-result';

const HISTORIES = resolve(__dirname, '../fixtures/histories');
const noop = (): void => undefined;
const quietLogger = { trace: noop, debug: noop, info: noop, warn: noop, error: console.error, log: noop };

/** The sum of a counter's data points whose attributes include `match`. */
function counter(metrics: ResourceMetrics[], name: string, match: Record<string, string> = {}): number {
  const last = metrics.at(-1); // cumulative: the last collection holds the totals
  let sum = 0;
  for (const scope of last?.scopeMetrics ?? [])
    for (const m of scope.metrics)
      if (m.descriptor.name === name)
        for (const dp of m.dataPoints)
          if (Object.entries(match).every(([k, v]) => dp.attributes[k] === v)) sum += dp.value as number;
  return sum;
}

describe('OpenTelemetry on a run the guard stops', () => {
  const spans = new InMemorySpanExporter();
  const metrics = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  let telemetry: Telemetry;
  let bundle: Promise<{ code: string }>;
  let h: Harness;
  let workflowId: string;
  let result: RunResult;

  beforeAll(async () => {
    telemetry = createTelemetry({}, { spanExporter: spans, metricExporter: metrics });
    bundle = bundleWorkflowCode({
      workflowsPath: WORKFLOWS_PATH,
      workflowInterceptorModules: [otelWorkflowInterceptorsModule()],
      logger: quietLogger,
    });
    const workflowBundle = await bundle;
    h = await startHarness({
      worker: (deps) => ({ workflowBundle, ...telemetry.workerOptions(deps.registry) }),
    });
    // The scenario of test/fixtures/histories/exact-repeat-stopped.json, with planner usage.
    const usage = { tokens: 120, costUsd: 0.002 };
    const call = (): ScriptCall => ({ ...search('temporal'), usage });
    const run = await h.start(live([call(), call(), call()]));
    workflowId = run.workflowId;
    result = await runResult(run);
    // The workflow span leaves the sandbox with the run's last activation.
    await waitFor(
      () => Promise.resolve(spans.getFinishedSpans()),
      (s) => s.some((x) => x.name === 'RunWorkflow:agentRun' && x.attributes.workflowId === workflowId),
    );
    await telemetry.flush();
  });

  afterAll(async () => {
    await h?.close();
    await telemetry?.shutdown();
  });

  const runSpans = (): ReadableSpan[] =>
    spans
      .getFinishedSpans()
      .filter((s) => s.attributes.workflowId === workflowId || s.attributes[Attr.WORKFLOW_ID] === workflowId);

  it('stops the third call and runs the tool twice (the premise)', async () => {
    expect(result.terminal_state).toBe('STOPPED_LOOP_GUARD');
    expect(result.reason).toBe('same_call_repeat');
    expect((await h.counters(workflowId)).search).toBe(2);
  });

  it('exports the workflow and activity spans of the interceptors, in one trace', () => {
    const names = runSpans().map((s) => s.name);
    expect(names).toEqual(
      expect.arrayContaining([
        'RunWorkflow:agentRun',
        'StartActivity:plan',
        'RunActivity:plan',
        'StartActivity:runTool',
        'RunActivity:runTool',
      ]),
    );
    expect(names.filter((n) => n === 'RunActivity:runTool')).toHaveLength(2);
    // The first turn is a (local) plan activity; the other two were planned inside the runTool
    // before each (scriptedPlan 'prefetch', the default).
    expect(names.filter((n) => n === 'RunActivity:plan')).toHaveLength(1);
    expect(new Set(runSpans().map((s) => s.spanContext().traceId)).size).toBe(1);
  });

  it('keeps workflow payloads out of the workflow spans (scalar workflow info only)', () => {
    const wf = runSpans().find((s) => s.name === 'RunWorkflow:agentRun')!;
    expect(wf.attributes.workflowType).toBe('agentRun');
    for (const key of ['memo', 'searchAttributes', 'lastResult', 'unsafe'])
      expect(wf.attributes).not.toHaveProperty(key);
    for (const v of Object.values(wf.attributes))
      expect(typeof v === 'object' && !Array.isArray(v)).toBe(false);
  });

  it('records the stop as a guard.decision span under the workflow span, with rule, reason, tool and fingerprint', () => {
    const wf = runSpans().find((s) => s.name === 'RunWorkflow:agentRun')!;
    const decisions = runSpans().filter((s) => s.name === SpanNames.DECISION);
    // Three `before` decisions (execute, execute, stop) and two `after` decisions at least.
    expect(decisions.length).toBeGreaterThanOrEqual(5);
    const stops = decisions.filter((s) => s.attributes[Attr.DECISION] === 'stop');
    expect(stops).toHaveLength(1);
    const stop = stops[0]!;
    const refused = result.report?.blocked_call;
    expect(refused?.tool).toBe('search');
    const expected = {
      [Attr.RULE]: 'before.5',
      [Attr.REASON]: 'same_call_repeat',
      [Attr.TOOL]: 'search',
      [Attr.FINGERPRINT]: refused?.fingerprint,
      [Attr.PHASE]: 'before',
      [Attr.AGENT_RUN_ID]: workflowId,
    };
    expect(stop.attributes).toMatchObject(expected);
    expect(stop.events).toHaveLength(1);
    expect(stop.events[0]!.name).toBe('guard.decision');
    expect(stop.events[0]!.attributes).toMatchObject(expected);
    // In the workflow's trace, as a child of its RunWorkflow span.
    expect(stop.spanContext().traceId).toBe(wf.spanContext().traceId);
    expect(stop.parentSpanId).toBe(wf.spanContext().spanId);
    expect(stop.attributes[Attr.RUN_ID]).toBe(wf.attributes.runId);
    // The two calls that ran were decided `execute` with the same fingerprint.
    const executes = decisions.filter(
      (s) => s.attributes[Attr.PHASE] === 'before' && s.attributes[Attr.DECISION] === 'execute',
    );
    expect(executes.map((s) => s.attributes[Attr.FINGERPRINT])).toEqual([
      refused?.fingerprint,
      refused?.fingerprint,
    ]);
  });

  it('names a steered refusal guard.steer (docs/spec.md §3, Steering)', async () => {
    const run = await h.start(
      live([search('steer-otel'), search('steer-otel'), search('steer-otel')], { guard: { steerLimit: 1 } }),
    );
    const steered = await runResult(run);
    expect(steered.decisions.map((d) => d.decision)).toEqual(['execute', 'execute', 'steer']);
    const steerSpan = (): ReadableSpan | undefined =>
      spans
        .getFinishedSpans()
        .find(
          (x) => x.attributes[Attr.WORKFLOW_ID] === run.workflowId && x.attributes[Attr.DECISION] === 'steer',
        );
    await waitFor(
      () => Promise.resolve(steerSpan()),
      (x) => x !== undefined,
    );
    const span = steerSpan()!;
    expect(span.name).toBe(SpanNames.DECISION);
    expect(span.events.map((e) => e.name)).toEqual(['guard.steer']);
    expect(span.attributes).toMatchObject({ [Attr.REASON]: 'same_call_repeat', [Attr.RULE]: 'before.5' });
  });

  it('records the stop and the close as agent.run.end spans', () => {
    const ends = runSpans().filter((s) => s.name === SpanNames.RUN_END);
    expect(
      ends.map((s) => [
        s.attributes[Attr.CLOSED],
        s.attributes[Attr.TERMINAL_STATE],
        s.attributes[Attr.REASON],
      ]),
    ).toEqual([
      [false, 'STOPPED_LOOP_GUARD', 'same_call_repeat'],
      [true, 'STOPPED_LOOP_GUARD', 'same_call_repeat'],
    ]);
  });

  it('counts the stop, the tool executions and the planner tokens', () => {
    const m = metrics.getMetrics();
    expect(counter(m, MetricNames.GUARD_STOPS, { reason: 'same_call_repeat' })).toBe(1);
    expect(counter(m, MetricNames.GUARD_STOPS, { terminal_state: 'STOPPED_LOOP_GUARD' })).toBe(1);
    expect(counter(m, MetricNames.RUNS_CLOSED, { terminal_state: 'STOPPED_LOOP_GUARD' })).toBe(1);
    expect(counter(m, MetricNames.TOOL_EXECUTIONS, { tool: 'search' })).toBe(2);
    expect(counter(m, MetricNames.TOOL_EXECUTIONS, { tool: 'search', effect: 'read', via: 'executed' })).toBe(
      2,
    );
    expect(counter(m, MetricNames.GUARD_DECISIONS, { rule: 'before.5', decision: 'stop' })).toBe(1);
    // Three planner turns (the third proposed the refused call), 120 tokens each.
    expect(counter(m, MetricNames.PLANNER_TOKENS, { planner_kind: 'scripted' })).toBe(360);
    expect(counter(m, MetricNames.PLANNER_COST_USD, { planner_kind: 'scripted' })).toBeCloseTo(0.006, 10);
    // search is a read: the ledger is not involved.
    expect(counter(m, MetricNames.LEDGER_OUTCOMES)).toBe(0);
  });

  it('adds no commands: the run traced live replays on workflow code without the interceptors', async () => {
    const history = await h.env.client.workflow.getHandle(workflowId).fetchHistory();
    // The interceptors were on: every scheduled activity carries the trace header...
    const scheduled = (history.events ?? []).filter((e) => e.activityTaskScheduledEventAttributes);
    // currentProgress, 2 × runTool, and sealCheckpoint as the stopped run closes (the 3 plans
    // are local activities since issue 19: markers, not scheduled activities)
    expect(scheduled.length).toBe(4);
    for (const e of scheduled)
      expect(e.activityTaskScheduledEventAttributes?.header?.fields).toHaveProperty('_tracer-data');
    // ...and yet the commands are the ones the plain workflow code makes (an extra or a
    // changed command would be a DeterminismViolationError here).
    await Worker.runReplayHistory(
      { workflowBundle: await workflowBundle(), sinks: agentSinks(), dataConverter: h.dataConverter },
      history,
      workflowId,
    );
  });

  it('replays every recorded history with the OTel workflow interceptors bundled in', async () => {
    const histories = readdirSync(HISTORIES)
      .filter((f) => f.endsWith('.json'))
      .map((f) => {
        const r = JSON.parse(readFileSync(join(HISTORIES, f), 'utf8')) as {
          workflowId: string;
          history: unknown;
        };
        return {
          workflowId: r.workflowId,
          history: historyFromJSON(r.history) as temporal.api.history.v1.History,
        };
      });
    expect(histories.length).toBeGreaterThan(0);
    const before = spans.getFinishedSpans().length;
    const errors: unknown[] = [];
    for await (const res of Worker.runReplayHistories(
      { workflowBundle: await bundle, sinks: { ...telemetry.workflowSinks, ...agentSinks() } },
      histories,
    ))
      if (res.error) errors.push({ workflowId: res.workflowId, error: res.error });
    expect(errors).toEqual([]);
    // A replay exports nothing: sinks are not called while replaying.
    expect(spans.getFinishedSpans()).toHaveLength(before);
  });
});
