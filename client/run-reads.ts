/**
 * Reading a run: its status, StopReport, ending and trace from the worker's queries, with a
 * closed run's answers from its result when no worker answers (a closed run needs none). The
 * status and ending queries can be skipped or bounded (`status` does, when no worker polls the
 * run's queue: client/workers.ts).
 */
import type { WorkflowExecutionDescription, WorkflowHandle } from '@temporalio/client';
import {
  reportQuery,
  statusQuery,
  traceQuery,
  type RunStatus,
  type TracePage,
  type TracePageArgs,
} from '../common/contracts';
import { pageTrace, type StopReport } from '../guard';
import { howItEnded } from '../common/ending';
import { closedResult, isClosed } from './runs';

/** How {@link runStatus} asks the worker. */
export interface StatusQueryOptions {
  /** false: do not ask (no worker polls the run's queue); a closed run's status comes from its result. */
  readonly query?: boolean;
  /** Give the worker's answer at most this long, ms (default: the SDK's, about 30 s). */
  readonly queryMs?: number;
}

/** Status from the query; for a closed run the query may be unanswerable (no worker): derived from the result. */
export async function runStatus(
  handle: WorkflowHandle,
  desc: WorkflowExecutionDescription,
  o: StatusQueryOptions = {},
): Promise<RunStatus> {
  try {
    if (o.query === false) throw new Error('not asked: no worker polls the run’s task queue');
    return await (o.queryMs === undefined
      ? handle.query(statusQuery)
      : handle.client.withDeadline(Date.now() + o.queryMs, () => handle.query(statusQuery)));
  } catch (err) {
    if (!isClosed(desc)) throw err;
    const r = await closedResult(handle);
    const cp = r.checkpoint;
    return {
      workflowId: r.workflow_id,
      phase: r.terminal_state,
      terminalState: r.terminal_state,
      guardReason: r.reason,
      steps: r.report?.steps ?? r.executed,
      steers: r.report?.steers?.length ?? 0,
      executed: r.executed,
      cached: r.cached,
      proposals: cp?.proposals ?? r.decisions.length,
      progressVersion: r.report?.last_progress_version ?? 0,
      noProgress: 0,
      usage: { tokens: r.usage?.tokens ?? 0, costUsd: r.usage?.cost_usd ?? 0 },
      lastDecision: r.decisions[r.decisions.length - 1]?.after ?? null,
      waitingForResume: false,
      goal: '',
      ...(cp?.children ? { children: cp.children } : {}),
    };
  }
}

/** The StopReport (null while running or when COMPLETED). */
export async function runReport(
  handle: WorkflowHandle,
  desc: WorkflowExecutionDescription,
): Promise<StopReport | null> {
  try {
    return await handle.query(reportQuery);
  } catch (err) {
    if (!isClosed(desc)) throw err;
    return (await closedResult(handle)).report;
  }
}

/** How a run ended: null while it runs (or when a closed run has no result to read). */
export async function runEnding(
  handle: WorkflowHandle,
  desc: WorkflowExecutionDescription,
  o: StatusQueryOptions = {},
): Promise<{ finished_task: boolean; ended: string; summary: string | null; final_message?: string } | null> {
  try {
    if (isClosed(desc)) {
      const r = await closedResult(handle);
      return {
        ...howItEnded(r.terminal_state, r.reason),
        summary: r.summary,
        ...(r.final_message !== undefined ? { final_message: r.final_message } : {}),
      };
    }
    if (o.query === false) return null;
    const report = await (o.queryMs === undefined
      ? handle.query(reportQuery)
      : handle.client.withDeadline(Date.now() + o.queryMs, () => handle.query(reportQuery)));
    if (!report) return null;
    return {
      ...howItEnded(report.terminal_state, report.guard_reason),
      summary: null,
      ...(report.final_message !== undefined ? { final_message: report.final_message } : {}),
    };
  } catch {
    return null;
  }
}

/** A page of the trace; a closed run without a worker falls back to its result's checkpoint. */
export async function runTrace(
  handle: WorkflowHandle,
  desc: WorkflowExecutionDescription,
  args: TracePageArgs,
): Promise<TracePage> {
  try {
    return await handle.query(traceQuery, args);
  } catch (err) {
    if (!isClosed(desc)) throw err;
    const cp = (await closedResult(handle)).checkpoint;
    const kept = cp?.trace ?? [];
    return pageTrace(kept, cp?.traceTotal ?? kept.length, args);
  }
}
