/**
 * The kill switch, reported as what the worker did: `agentctl stop`, the client
 * API's `stopAgentRun` and the console's Stop send the `stop` update and report its answer —
 * `accepted` (the run stops before its next tool call, or the resume being verified is
 * vetoed), `refused` with the worker's reason (not authorised, not running), or `unconfirmed`
 * when no worker answers within a bounded wait. Never "stop requested" for a stop the worker
 * refused.
 *
 * A worker whose code predates the `stop` update refuses it as unknown: then the stop is sent
 * as the signal and read back from the run's trace (the worker notes `stop_refused`,
 * `stop_ignored`, `resume_vetoed` or `stop` with the request's actor and reason), still within
 * the wait; a stop the worker took but has not applied yet is `unconfirmed` there, as the
 * signal carries no answer.
 */
import { WorkflowNotFoundError, WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import {
  statusQuery,
  stopSignal,
  stopUpdate,
  traceQuery,
  type StopAnswer,
  type StopRequest,
} from '../common/contracts';
import { GuardReason } from '../guard';
import { DEFAULT_CONFIRM_MS, isDeadline, unconfirmedReason } from './confirm';
import { checkClientDecodes, sendDecodable } from './codec-check';
import { isMissingHandler, notAGuardedRun } from './engine';

/** What became of a stop. */
export type StopState = 'accepted' | 'refused' | 'unconfirmed';

/** The worker's answer to a stop. */
export interface StopOutcome {
  /** `accepted` only when the worker said so (or its trace shows it). */
  readonly outcome: StopState;
  readonly accepted: boolean;
  /** The worker's reason, or why there is no answer. */
  readonly answer: string;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

const outcomeOf = (a: StopAnswer): StopOutcome => ({
  outcome: a.accepted ? 'accepted' : 'refused',
  accepted: a.accepted,
  answer: a.reason,
});

const unconfirmed = (answer: string): StopOutcome => ({ outcome: 'unconfirmed', accepted: false, answer });

/**
 * Sends the stop and waits at most `confirmMs` (default {@link DEFAULT_CONFIRM_MS}) for the
 * worker's answer. The update id is the request id: a retry of the same request gets the same
 * answer.
 */
export async function sendStop(
  handle: WorkflowHandle,
  req: StopRequest,
  o: { readonly confirmMs?: number; readonly pollMs?: number } = {},
): Promise<StopOutcome> {
  const ms = o.confirmMs ?? DEFAULT_CONFIRM_MS;
  const deadline = Date.now() + ms;
  // A worker that cannot decode this client's payloads (or the reverse) is a configuration
  // error, thrown as PayloadCodecMismatchError: never a refusal (client/codec-check.ts).
  await checkClientDecodes(handle, deadline, 'the stop');
  try {
    const answer = await sendDecodable(handle, deadline, 'the stop', () =>
      handle.client.withDeadline(deadline, () =>
        handle.executeUpdate(stopUpdate, { args: [req], updateId: `stop-${req.requestId}` }),
      ),
    );
    return outcomeOf(answer);
  } catch (err) {
    if (err instanceof WorkflowUpdateFailedError) {
      const why = err.cause?.message ?? err.message;
      if (/no registered handler for update/i.test(why))
        return signalAndReadBack(handle, req, deadline, ms, o.pollMs ?? 250);
      return { outcome: 'refused', accepted: false, answer: why };
    }
    if (err instanceof WorkflowNotFoundError)
      return { outcome: 'refused', accepted: false, answer: 'the run is closed; nothing to stop' };
    if (isDeadline(err, deadline)) return unconfirmed(unconfirmedReason(ms));
    throw err;
  }
}

/** The trace decisions that answer a stop signal, and what each means. */
const ANSWERS: Record<string, boolean> = {
  stop: true,
  resume_vetoed: true,
  stop_refused: false,
  stop_ignored: false,
};

/** An older worker: the signal, then its answer read back from the trace (see the module comment). */
async function signalAndReadBack(
  handle: WorkflowHandle,
  req: StopRequest,
  deadline: number,
  ms: number,
  pollMs: number,
): Promise<StopOutcome> {
  // A run that has no trace query either is of no guard engine: the signal would be dropped unread.
  const before = (
    await handle.query(traceQuery, { offset: 0, limit: 1 }).catch(async (err: unknown) => {
      if (isMissingHandler(err)) throw await notAGuardedRun(handle, 'no stop was sent');
      throw err;
    })
  ).total;
  await handle.signal(stopSignal, req);
  for (;;) {
    try {
      const page = await handle.query(traceQuery, { offset: 0, limit: 1 });
      const firstKept = page.total - page.kept;
      const fresh = await handle.query(traceQuery, { offset: Math.max(0, before - firstKept), limit: 1000 });
      for (const r of fresh.records) {
        const args = r.args as { actor?: unknown; reason?: unknown } | null;
        const mine = args?.actor === req.actor && args?.reason === req.reason;
        const means = ANSWERS[r.decision];
        if (mine && means !== undefined)
          return outcomeOf({ accepted: means, reason: r.reason ?? r.decision });
      }
      const status = await handle.query(statusQuery);
      if (status.guardReason === GuardReason.OPERATOR_STOP && status.phase !== 'RUNNING')
        return outcomeOf({ accepted: true, reason: 'the run stopped (operator_stop)' });
    } catch (err) {
      if (err instanceof WorkflowNotFoundError)
        return { outcome: 'refused', accepted: false, answer: 'the run is closed; nothing to stop' };
    }
    if (Date.now() + pollMs >= deadline)
      return unconfirmed(
        `${unconfirmedReason(ms)} (sent as a signal: this worker's code has no stop update, so it does not answer)`,
      );
    await sleep(pollMs);
  }
}
