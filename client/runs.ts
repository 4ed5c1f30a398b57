/**
 * Reading runs from the client side: status / report / trace / checkpoint queries with a
 * fallback to the closed run's result, waiting until a run has settled (closed, or stopped
 * and waiting for `resume`), the replay-shaped outcome of a run (SPEC §6), and the tool
 * execution counters from the demo world.
 */
import { existsSync } from 'node:fs';
import {
  WorkflowFailedError,
  WorkflowNotFoundError,
  type Client,
  type WorkflowExecutionDescription,
  type WorkflowHandle,
} from '@temporalio/client';
import {
  checkpointQuery,
  reportQuery,
  statusQuery,
  traceQuery,
  type Checkpoint,
  type RunDecision,
  type RunResult,
  type RunStatus,
  type TracePage,
  type TracePageArgs,
} from '../common/contracts';
import { pageTrace, stoppedAt, type StopReport, type TerminalState, type TraceRecord } from '../guard';
import { World, worldFile } from '../activities/tools/demo/world';
import { CliError, Exit } from './format';

/** The replay output of SPEC §6 (key order as `npm run replay` prints it). */
export interface RunOutcome {
  terminal_state: TerminalState;
  reason: string | null;
  executed: number;
  cached: number;
  stopped_at: number | null;
  decisions: RunDecision[];
  report: StopReport | null;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** A handle on an existing run, or exit 1 "no run with id". */
export async function describeRun(
  client: Client,
  workflowId: string,
): Promise<{ handle: WorkflowHandle; desc: WorkflowExecutionDescription }> {
  const handle = client.workflow.getHandle(workflowId);
  try {
    return { handle, desc: await handle.describe() };
  } catch (err) {
    if (err instanceof WorkflowNotFoundError)
      throw new CliError(Exit.ERROR, `no run with id "${workflowId}"`);
    throw err;
  }
}

/** True when the Temporal execution is closed. */
export const isClosed = (desc: WorkflowExecutionDescription): boolean => desc.status.name !== 'RUNNING';

/** The result of a closed run (a failed/terminated execution is exit 1 with its cause). */
export async function closedResult(handle: WorkflowHandle): Promise<RunResult> {
  try {
    return (await handle.result()) as RunResult;
  } catch (err) {
    if (err instanceof WorkflowFailedError) {
      const cause = err.cause?.message ?? err.message;
      throw new CliError(Exit.ERROR, `run ${handle.workflowId} did not return a result: ${cause}`);
    }
    throw err;
  }
}

/** The replay-shaped outcome of a closed run's result. */
export function outcomeOfResult(r: RunResult): RunOutcome {
  return {
    terminal_state: r.terminal_state,
    reason: r.reason,
    executed: r.executed,
    cached: r.cached,
    stopped_at: r.stopped_at,
    decisions: r.decisions,
    report: r.report,
  };
}

/** The replay-shaped outcome of a run stopped and waiting for resume (from its checkpoint). */
export function outcomeOfCheckpoint(cp: Checkpoint): RunOutcome | null {
  if (!cp.stop) return null;
  const last = cp.decisions[cp.decisions.length - 1];
  return {
    terminal_state: cp.stop.terminalState,
    reason: cp.stop.reason,
    executed: cp.executed,
    cached: cp.cached,
    stopped_at: stoppedAt(cp.stop.terminalState, cp.stop.reason, last?.index),
    decisions: cp.decisions,
    report: cp.stop.report,
  };
}

/** Status from the query; for a closed run the query may be unanswerable (no worker): derived from the result. */
export async function runStatus(
  handle: WorkflowHandle,
  desc: WorkflowExecutionDescription,
): Promise<RunStatus> {
  try {
    return await handle.query(statusQuery);
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
      executed: r.executed,
      cached: r.cached,
      proposals: cp?.proposals ?? r.decisions.length,
      progressVersion: r.report?.last_progress_version ?? 0,
      noProgress: 0,
      usage: { tokens: 0, costUsd: 0 },
      lastDecision: r.decisions[r.decisions.length - 1]?.after ?? null,
      waitingForResume: false,
      goal: '',
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

/** What {@link waitUntilSettled} saw last. */
export interface Settled {
  readonly closed: boolean;
  readonly status: RunStatus | null;
  /** Trace records seen so far (pass back as `seen` to continue following). */
  readonly seen: number;
}

/** Options of {@link followRun} / {@link waitUntilSettled}. */
export interface FollowOptions {
  /** Give up after this long (CliError exit 1). */
  readonly timeoutMs?: number;
  readonly pollMs?: number;
  /** Called once per new trace record, in order. */
  readonly onRecord?: (r: TraceRecord) => void;
  /** Also return when the run is stopped and waiting for `resume` (default true). */
  readonly untilWaiting?: boolean;
  /** Called when the run starts waiting for resume (once per wait). */
  readonly onWaiting?: (s: RunStatus) => void;
  /** Trace records already reported (from an earlier follow of the same run). */
  readonly seen?: number;
}

/**
 * Polls status and the trace until the run closes (or waits for resume, with
 * `untilWaiting`), reporting each new trace record once.
 */
export async function followRun(handle: WorkflowHandle, o: FollowOptions = {}): Promise<Settled> {
  const deadline = Date.now() + (o.timeoutMs ?? 300_000);
  const pollMs = o.pollMs ?? 200;
  const untilWaiting = o.untilWaiting ?? true;
  let seen = o.seen ?? 0;
  let wasWaiting = false;
  let last: RunStatus | null = null;
  for (;;) {
    const desc = await handle.describe();
    const closed = isClosed(desc);
    let status: RunStatus | null = null;
    let page: TracePage | null = null;
    try {
      status = await handle.query(statusQuery);
      if (o.onRecord) page = await handle.query(traceQuery, { offset: 0, limit: 1 });
      if (o.onRecord && page && page.total > seen) {
        // The workflow keeps the last `kept` of `total` records: map "first unseen" into it.
        const firstKept = page.total - page.kept;
        const offset = Math.max(0, seen - firstKept);
        const fresh = await handle.query(traceQuery, { offset, limit: 1000 });
        for (const r of fresh.records) o.onRecord(r);
        seen = fresh.total;
      }
      last = status;
    } catch (err) {
      // No workflow task processed yet, or a closed run without a worker: not fatal here.
      if (closed) return { closed, status: last, seen };
      if (Date.now() > deadline) throw err;
    }
    if (closed) return { closed, status: status ?? last, seen };
    if (status?.phase === 'WAITING') {
      if (!wasWaiting) o.onWaiting?.(status);
      wasWaiting = true;
      if (untilWaiting) return { closed: false, status, seen };
    } else {
      wasWaiting = false;
    }
    if (Date.now() > deadline) {
      throw new CliError(
        Exit.ERROR,
        `run ${handle.workflowId} did not settle within ${Math.round((o.timeoutMs ?? 300_000) / 1000)} s (is a worker running on its task queue?)`,
      );
    }
    await sleep(pollMs);
  }
}

/** Waits until the run closes or stops waiting for resume, then returns its replay-shaped outcome. */
export async function settledOutcome(
  handle: WorkflowHandle,
  o: FollowOptions = {},
): Promise<{ outcome: RunOutcome; closed: boolean; result: RunResult | null }> {
  const s = await followRun(handle, { untilWaiting: true, ...o });
  if (s.closed) {
    const result = await closedResult(handle);
    return { outcome: outcomeOfResult(result), closed: true, result };
  }
  const cp = await handle.query(checkpointQuery);
  const outcome = outcomeOfCheckpoint(cp);
  if (!outcome)
    throw new CliError(Exit.ERROR, `run ${handle.workflowId} is waiting but has no stop recorded`);
  return { outcome, closed: false, result: null };
}

/**
 * Per-tool execution counters of a run, read from the demo world at `worldUrl`
 * (what the local worker writes to). null when the world file does not exist here.
 */
export async function readCounters(worldUrl: string, runId: string): Promise<Record<string, number> | null> {
  let file: string;
  try {
    file = worldFile(worldUrl);
  } catch {
    return null;
  }
  if (file === ':memory:' || !existsSync(file)) return null;
  const world = World.open(file);
  try {
    return await world.counters(runId);
  } finally {
    world.close();
  }
}
