/**
 * Where one step of a run goes, read from its history's event timestamps: a step is one
 * turn of the loop (`plan` activity + `runTool` activity, each followed by a workflow
 * task; a scripted run's `plan` is a local activity, inside the workflow task,
 * so it has no plan columns and one workflow task per step). For each activity: schedule→start (dispatch to a poller, or eager), start→complete
 * (the activity itself, reported back), then the workflow task it wakes: schedule→start
 * (dispatch by the server's transfer queue and matching) and start→complete (the worker
 * runs the workflow code and answers). Used by `npm run bench:run` (docs/performance.md).
 */
import type { temporal } from '@temporalio/proto';

type History = temporal.api.history.v1.IHistory;
type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** Mean milliseconds of each part of a step. */
export interface StepBreakdown {
  readonly steps: number;
  readonly planDispatchMs: number;
  readonly planRunMs: number;
  readonly toolDispatchMs: number;
  readonly toolRunMs: number;
  /** Workflow tasks per step (two with a scheduled plan activity, one with a local one). */
  readonly workflowTasksPerStep: number;
  /** Workflow tasks: scheduled → started (the server dispatching them), summed per step. */
  readonly workflowTaskDispatchMs: number;
  /** Workflow tasks: started → completed (the worker's turn), summed per step. */
  readonly workflowTaskRunMs: number;
  /** Step latency (runTool scheduled → next runTool scheduled), percentiles. */
  readonly p50Ms: number;
  readonly p95Ms: number;
  readonly meanMs: number;
}

const ms = (e: HistoryEvent): number =>
  Number(e.eventTime?.seconds ?? 0) * 1000 + (e.eventTime?.nanos ?? 0) / 1e6;

const EV = {
  WFT_SCHEDULED: 5,
  WFT_STARTED: 6,
  WFT_COMPLETED: 7,
  ACT_SCHEDULED: 10,
  ACT_STARTED: 11,
  ACT_COMPLETED: 12,
} as const;

/** The p-th percentile (0..100) of `xs` (nearest rank). */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}

const sum = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0);
const mean = (xs: readonly number[]): number => (xs.length ? sum(xs) / xs.length : 0);

/** Breaks one run's history down into the parts of a step (see the module comment). */
export function stepBreakdown(h: History): StepBreakdown {
  const events = h.events ?? [];
  const byId = new Map(events.map((e) => [Number(e.eventId), e]));
  const dispatch: Record<string, number[]> = { plan: [], runTool: [] };
  const run: Record<string, number[]> = { plan: [], runTool: [] };
  const wftDispatch: number[] = [];
  const wftRun: number[] = [];
  const toolStarts: number[] = [];
  for (const e of events) {
    const type = Number(e.eventType);
    if (type === EV.ACT_SCHEDULED) {
      const name = e.activityTaskScheduledEventAttributes?.activityType?.name ?? '';
      if (name === 'runTool') toolStarts.push(ms(e));
    } else if (type === EV.ACT_STARTED) {
      const sched = byId.get(Number(e.activityTaskStartedEventAttributes?.scheduledEventId));
      const name = sched?.activityTaskScheduledEventAttributes?.activityType?.name ?? '';
      if (sched && name in dispatch) dispatch[name]!.push(ms(e) - ms(sched));
    } else if (type === EV.ACT_COMPLETED) {
      const a = e.activityTaskCompletedEventAttributes;
      const started = byId.get(Number(a?.startedEventId));
      const sched = byId.get(Number(a?.scheduledEventId));
      const name = sched?.activityTaskScheduledEventAttributes?.activityType?.name ?? '';
      if (started && name in run) run[name]!.push(ms(e) - ms(started));
    } else if (type === EV.WFT_STARTED) {
      const sched = byId.get(Number(e.workflowTaskStartedEventAttributes?.scheduledEventId));
      if (sched) wftDispatch.push(ms(e) - ms(sched));
    } else if (type === EV.WFT_COMPLETED) {
      const started = byId.get(Number(e.workflowTaskCompletedEventAttributes?.startedEventId));
      if (started) wftRun.push(ms(e) - ms(started));
    }
  }
  const perStep = (x: number): number => (toolStarts.length ? x / toolStarts.length : 0);
  const steps: number[] = [];
  for (let i = 1; i < toolStarts.length; i++) steps.push(toolStarts[i]! - toolStarts[i - 1]!);
  return {
    steps: steps.length,
    planDispatchMs: mean(dispatch.plan!),
    planRunMs: mean(run.plan!),
    toolDispatchMs: mean(dispatch.runTool!),
    toolRunMs: mean(run.runTool!),
    workflowTasksPerStep: perStep(wftRun.length),
    workflowTaskDispatchMs: perStep(sum(wftDispatch)),
    workflowTaskRunMs: perStep(sum(wftRun)),
    p50Ms: percentile(steps, 50),
    p95Ms: percentile(steps, 95),
    meanMs: mean(steps),
  };
}
