/**
 * The one door to the Temporal activity context. Activity code calls these helpers
 * instead of `Context.current()`, because the same functions also run outside any
 * activity: unit tests call `createActivities(...).runTool` and the planners directly,
 * and `Context.current()` throws there. Each helper therefore has a defined answer
 * outside an activity instead of an exception.
 */
import { Context } from '@temporalio/activity';

/** The context of the activity this code runs in, or undefined outside one. */
function currentContext(): Context | undefined {
  try {
    return Context.current();
  } catch {
    return undefined;
  }
}

/** Which execution of which activity this is; used to name a ledger claim's owner. */
export interface ActivityExecution {
  /** 1 for the first attempt, counting up with each Temporal retry. */
  readonly attempt: number;
  /** The activity id within its workflow. */
  readonly activityId: string;
}

/** What {@link activityExecution} answers outside an activity. */
export const DIRECT_EXECUTION: ActivityExecution = Object.freeze({ attempt: 1, activityId: 'direct' });

/** The current activity's attempt and id; {@link DIRECT_EXECUTION} outside an activity. */
export function activityExecution(): ActivityExecution {
  const ctx = currentContext();
  return ctx ? { attempt: ctx.info.attempt, activityId: ctx.info.activityId } : DIRECT_EXECUTION;
}

/**
 * A key for this scheduled activity that every retry of it shares and no other activity has:
 * the workflow run id and the activity id. Null outside an activity.
 */
export function activityTurnKey(): string | null {
  const info = currentContext()?.info;
  const runId = info?.workflowExecution?.runId;
  return info && runId ? `${runId}/${info.activityId}` : null;
}

/**
 * When the current attempt of this activity times out (epoch ms): `startedMs` (when the activity
 * function began, a little after Temporal started the attempt) plus its start-to-close timeout,
 * so never later than Temporal's own deadline; undefined outside an activity.
 */
export function attemptDeadlineMs(startedMs: number): number | undefined {
  const info = currentContext()?.info;
  if (!info || !(info.startToCloseTimeoutMs > 0)) return undefined;
  return startedMs + info.startToCloseTimeoutMs;
}

/** This activity's attempt (1 for the first); 1 outside an activity. */
export function activityAttempt(): number {
  return currentContext()?.info.attempt ?? 1;
}

/**
 * Heartbeats the current activity (Temporal only delivers a cancellation to an activity
 * that heartbeats); a no-op outside an activity.
 */
export function heartbeat(details?: unknown): void {
  currentContext()?.heartbeat(details);
}

/**
 * The current activity's cancellation signal. Outside an activity nothing can cancel
 * the work, and the answer is undefined so a caller can pass no signal at all.
 */
export function cancellationSignal(): AbortSignal | undefined {
  return currentContext()?.cancellationSignal;
}

/**
 * A signal for work that must always be given one (a tool's context): the activity's
 * cancellation signal, or outside an activity a fresh one that never fires. Fresh per
 * call, so no listeners pile up on a shared signal.
 */
export function cancellationSignalOrNever(): AbortSignal {
  return cancellationSignal() ?? new AbortController().signal;
}

/** The log levels activity code uses. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/**
 * Logs through the activity logger inside a worker (which adds the workflow and activity
 * ids), else through the console, so a warning is never lost in a test or script.
 */
export function activityLog(level: LogLevel, message: string, attrs?: Record<string, unknown>): void {
  const ctx = currentContext();
  if (ctx) ctx.log[level](message, attrs);
  else if (attrs) console[level](message, attrs);
  else console[level](message);
}

/** {@link activityLog} at `warn`: the planners' default `warn` option. */
export function warn(message: string): void {
  activityLog('warn', message);
}
