/**
 * The run helpers agentctl and the demo share: starting a run (the verified `resume` is in
 * client/confirm.ts), status / report / trace / checkpoint queries with a fallback to the closed
 * run's result, waiting until a run has settled (closed, or stopped and waiting for
 * `resume`), and the replay-shaped outcome of a run (docs/spec.md §6).
 */
import {
  WorkflowExecutionAlreadyStartedError,
  WorkflowFailedError,
  WorkflowNotFoundError,
  type Client,
  type WorkflowExecutionDescription,
  type WorkflowHandle,
  type WorkflowHandleWithFirstExecutionRunId,
} from '@temporalio/client';
import {
  checkpointQuery,
  statusQuery,
  traceQuery,
  WORKFLOW_TYPE,
  type Checkpoint,
  type RunDecision,
  type RunInput,
  type RunResult,
  type RunStatus,
} from '../common/contracts';
import { stoppedAt, type StopReport, type TerminalState, type TraceRecord } from '../guard';
import { CliError, Exit } from './format';
import { staticMetadataOf } from './static-details';
import { jsonBytes, MAX_PAYLOAD_BYTES, type PayloadRef } from '../common/payload-limits';
import { howItEnded } from '../common/ending';
import { WAITING_FOR_PERSON } from '../common/conversation-run';
import { AGENT_STATE } from '../common/search-attributes';
import { runResultOf } from '../common/run-ended';

// How a run ended is one wording for the CLI, the console and the UI (common/ending.ts).
export { howItEnded } from '../common/ending';
// The resume's confirmation has its own file; its names stay importable from here.
export {
  DEFAULT_CONFIRM_MS,
  isDeadline,
  rejected,
  sendResume,
  unconfirmedReason,
  type ResumeOutcome,
} from './confirm';

/** The replay output of docs/spec.md §6 (key order as `npm run replay` prints it). */
export interface RunOutcome {
  terminal_state: TerminalState;
  reason: string | null;
  executed: number;
  cached: number;
  stopped_at: number | null;
  decisions: RunDecision[];
  report: StopReport | null;
  /** The run's summary (the finishing tool's, a FATAL's message, the model's last text); null: none. */
  summary?: string | null;
  /** An LLM run's last words when it did not end by the finishing tool. */
  final_message?: string;
  /** Whether the task was declared done (the finishing tool), and how the run ended in words. */
  finished_task?: boolean;
  ended?: string;
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

/** What {@link startRun} starts. */
export interface StartRunOptions {
  readonly workflowId: string;
  readonly taskQueue: string;
  readonly input: RunInput;
  /** The Web UI's summary line (default: the goal). */
  readonly summary?: string;
  /**
   * The worker's payload store (`PayloadStore.over(await openLedger(LEDGER_URL))`, the
   * ledger's database the worker uses): a scripted run whose input would not fit a payload sends
   * its script's calls there and starts with their reference. Without it, such an input is refused.
   */
  readonly payloads?: { put(runId: string, value: unknown): Promise<PayloadRef> };
}

/**
 * `input`, with an inline script's calls in the payload store when the input is above the
 * payload limit and a store is given (the workflow reads them by reference: workflows/script-ref.ts).
 */
async function scriptByReference(o: StartRunOptions): Promise<RunInput> {
  const planner = o.input.planner as { kind?: string; script?: { calls?: unknown } };
  const calls = planner.kind === 'scripted' ? planner.script?.calls : undefined;
  if (!o.payloads || !Array.isArray(calls) || jsonBytes(o.input) <= MAX_PAYLOAD_BYTES) return o.input;
  // Without its preview: the reference rides in every turn's plan input (activities/run/script-activity.ts).
  const ref = { ...(await o.payloads.put(o.workflowId, calls)), preview: '' };
  return {
    ...o.input,
    planner: { ...o.input.planner, script: { ...planner.script, calls: ref } },
  } as RunInput;
}

/** Starts an agent run; a run already open under the id is exit 1. */
export async function startRun(
  client: Client,
  o: StartRunOptions,
): Promise<WorkflowHandleWithFirstExecutionRunId> {
  // Refused here with the size named, not by the server with a gRPC error (or, just below its
  // limit, at the run's first continue-as-new, which would stop it payload_too_large).
  const input = await scriptByReference(o);
  const bytes = jsonBytes(input);
  if (bytes > MAX_PAYLOAD_BYTES) {
    throw new CliError(
      Exit.USAGE,
      `the run input is ${bytes} bytes, above the ${MAX_PAYLOAD_BYTES}-byte payload limit: keep large data ` +
        'out of the goal and the script (tools can read it), start a long script with the payload ' +
        "store (agentctl start: LEDGER_URL, the worker's database), or split the job",
    );
  }
  try {
    return await client.workflow.start(WORKFLOW_TYPE, {
      taskQueue: o.taskQueue,
      workflowId: o.workflowId,
      args: [input],
      ...staticMetadataOf(input, o.summary),
    });
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) {
      throw new CliError(Exit.ERROR, `a run with id "${o.workflowId}" is already running`);
    }
    throw err;
  }
}

/** True when the Temporal execution is closed. */
export const isClosed = (desc: WorkflowExecutionDescription): boolean => desc.status.name !== 'RUNNING';

/**
 * The RunResult of a run once it closes, whatever its terminal state: returned by a COMPLETED
 * run, carried by the typed failure of any other (common/run-ended.ts). Any other failure
 * rejects as `handle.result()` does.
 */
export async function agentRunResult(handle: WorkflowHandle): Promise<RunResult> {
  try {
    return (await handle.result()) as RunResult;
  } catch (err) {
    const ended = runResultOf(err);
    if (ended) return ended;
    throw err;
  }
}

/**
 * The result of a closed run, as {@link agentRunResult} reads it; any other failed or terminated
 * execution is exit 1 with its cause.
 */
export async function closedResult(handle: WorkflowHandle): Promise<RunResult> {
  try {
    return await agentRunResult(handle);
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
    summary: r.summary,
    ...(r.final_message !== undefined ? { final_message: r.final_message } : {}),
    ...howItEnded(r.terminal_state, r.reason),
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
    ...(cp.stop.report.final_message !== undefined ? { final_message: cp.stop.report.final_message } : {}),
    ...howItEnded(cp.stop.terminalState, cp.stop.reason),
  };
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

/** The longest pause between two looks at a run that is being waited for (no trace followed). */
const MAX_WAIT_POLL_MS = 1_000;

/**
 * True when the run's `AgentState` search attribute (which the workflow upserts on start,
 * stop, resume and finish) says it runs: it cannot be waiting for a resume then. Absent (no
 * workflow task yet, a namespace without the attribute): unknown, so false.
 */
function publishedRunning(desc: WorkflowExecutionDescription): boolean {
  const state = desc.typedSearchAttributes.get(AGENT_STATE);
  return state === 'RUNNING' || state === WAITING_FOR_PERSON;
}

/**
 * Waits until the run closes (or waits for resume, with `untilWaiting`) without following its
 * trace: on the result's long poll, which the server answers when the run closes, and — only
 * to see a stop — on the server's description of the run (its `AgentState` attribute), with a
 * status query only once that says the run is not running. Nothing here asks the worker while
 * the run runs, so waiting costs the run nothing and does not grow with it.
 */
async function awaitSettled(handle: WorkflowHandle, o: FollowOptions): Promise<Settled> {
  const timeoutMs = o.timeoutMs ?? 300_000;
  const deadline = Date.now() + timeoutMs;
  const untilWaiting = o.untilWaiting ?? true;
  const watchStops = untilWaiting || o.onWaiting !== undefined;
  const seen = o.seen ?? 0;
  const abort = new AbortController();
  // Any answer but our own abort means the run closed (completed, failed, terminated, …).
  const closed = handle.client
    .withAbortSignal(abort.signal, () => handle.result())
    .then(
      () => true,
      () => !abort.signal.aborted,
    );
  let pollMs = o.pollMs ?? 200;
  let wasWaiting = false;
  try {
    for (;;) {
      const desc = await handle.describe();
      if (isClosed(desc)) return { closed: true, status: null, seen };
      if (watchStops && !publishedRunning(desc)) {
        // No workflow task processed yet, or a query that cannot be answered now: look again.
        const status = await handle.query(statusQuery).catch(() => null);
        if (status?.phase === 'WAITING') {
          if (!wasWaiting) o.onWaiting?.(status);
          wasWaiting = true;
          if (untilWaiting) return { closed: false, status, seen };
        } else {
          wasWaiting = false;
        }
      }
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new CliError(
          Exit.ERROR,
          `run ${handle.workflowId} did not settle within ${Math.round(timeoutMs / 1000)} s (is a worker running on its task queue?)`,
        );
      }
      // Without stops to watch, only the result's answer (or the deadline) ends the wait.
      const pause = watchStops ? Math.min(pollMs, left) : left;
      const timer = new Promise<false>((r) => setTimeout(() => r(false), pause).unref());
      if (await Promise.race([closed, timer])) return { closed: true, status: null, seen };
      pollMs = Math.min(pollMs * 2, Math.max(MAX_WAIT_POLL_MS, o.pollMs ?? 0));
    }
  } finally {
    abort.abort();
  }
}

/**
 * Polls status and the trace until the run closes (or waits for resume, with
 * `untilWaiting`), reporting each new trace record once. Without `onRecord` it waits on the
 * run's result instead ({@link awaitSettled}): the same answer, at no cost to the run.
 */
export async function followRun(handle: WorkflowHandle, o: FollowOptions = {}): Promise<Settled> {
  const onRecord = o.onRecord;
  if (!onRecord) return awaitSettled(handle, o);
  const deadline = Date.now() + (o.timeoutMs ?? 300_000);
  const pollMs = o.pollMs ?? 200;
  const untilWaiting = o.untilWaiting ?? true;
  let seen = o.seen ?? 0;
  let wasWaiting = false;
  let last: RunStatus | null = null;
  // The workflow keeps the last `kept` of `total` records; the first kept one's number, as last seen.
  let firstKept = 0;
  for (;;) {
    const desc = await handle.describe();
    const closed = isClosed(desc);
    let status: RunStatus | null = null;
    try {
      status = await handle.query(statusQuery);
      // From the cursor: only records not seen yet cross (one query unless the kept window moved).
      let offset = Math.max(0, seen - firstKept);
      let page = await handle.query(traceQuery, { offset, limit: 1000 });
      if (page.total - page.kept !== firstKept) {
        firstKept = page.total - page.kept;
        offset = Math.max(0, seen - firstKept);
        page = await handle.query(traceQuery, { offset, limit: 1000 });
      }
      for (const r of page.records) onRecord(r);
      seen = Math.max(seen, firstKept + offset + page.records.length);
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

/**
 * Waits until the run closes or stops waiting for resume, then returns its replay-shaped
 * outcome (and, for a caller following with `onRecord`, how many trace records it saw).
 */
export async function settledOutcome(
  handle: WorkflowHandle,
  o: FollowOptions = {},
): Promise<{ outcome: RunOutcome; closed: boolean; result: RunResult | null; seen: number }> {
  const s = await followRun(handle, { untilWaiting: true, ...o });
  if (s.closed) {
    const result = await closedResult(handle);
    return { outcome: outcomeOfResult(result), closed: true, result, seen: s.seen };
  }
  const cp = await handle.query(checkpointQuery);
  const outcome = outcomeOfCheckpoint(cp);
  if (!outcome)
    throw new CliError(Exit.ERROR, `run ${handle.workflowId} is waiting but has no stop recorded`);
  return { outcome, closed: false, result: null, seen: s.seen };
}
