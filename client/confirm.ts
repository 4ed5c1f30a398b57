/**
 * What the worker did with an operator's resume: `sendResume` sends the
 * verified `resume` update and waits a bounded time for the worker's answer — accepted,
 * refused with its reason, or `unconfirmed` when no worker answered (never reported as done).
 * The bounded wait and its wording are shared with the stop (client/stop.ts).
 */
import { WorkflowNotFoundError, WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { resumeUpdate, type ResumeAnswer, type ResumeRequest } from '../common/contracts';
import { checkClientDecodes, sendDecodable } from './codec-check';
import { isMissingHandler, notAGuardedRun } from './engine';

/** The outcome of one resume attempt. */
export interface ResumeOutcome {
  readonly accepted: boolean;
  readonly reason: string;
  /** true when the workflow's validator refused before anything ran. */
  readonly rejectedByValidator: boolean;
  readonly progressVersion: number | null;
  /**
   * true when no worker answered within the wait: neither accepted nor refused, and
   * the request may still be taken when a worker picks it up. Never reported as done.
   */
  readonly unconfirmed?: boolean;
}

/** A refusal that never reached the workflow's handler (validator, closed run). */
export function rejected(reason: string): ResumeOutcome {
  return { accepted: false, reason, rejectedByValidator: true, progressVersion: null };
}

/** How long a resume or stop waits for the worker's answer by default, ms. */
export const DEFAULT_CONFIRM_MS = 30_000;

/** The answer to a request no worker confirmed within `ms`. */
export function unconfirmedReason(ms: number): string {
  return (
    `unconfirmed: no worker answered within ${Math.round(ms / 1000)} s (is a worker running on the ` +
    "run's task queue?); the request may still be taken when one does: check `agentctl status`"
  );
}

/** True for the gRPC deadline or abort of a wait that ran out. */
export function isDeadline(err: unknown, deadline: number): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return Date.now() >= deadline || code === 4 /* DEADLINE_EXCEEDED */ || code === 1; /* CANCELLED */
}

/**
 * Sends the `resume` update. A validator rejection or a closed run is a refusal, not an
 * error: the operator's next step is the same (read the reason, change something, retry).
 * The worker's answer is awaited at most `confirmMs` (default {@link DEFAULT_CONFIRM_MS}):
 * after that the outcome is `unconfirmed`, never accepted.
 */
export async function sendResume(
  handle: WorkflowHandle,
  req: ResumeRequest,
  o: { readonly confirmMs?: number } = {},
): Promise<ResumeOutcome> {
  const ms = o.confirmMs ?? DEFAULT_CONFIRM_MS;
  const deadline = Date.now() + ms;
  // A worker that cannot decode this client's payloads (or the reverse) is a configuration
  // error, thrown as PayloadCodecMismatchError: never a refusal (client/codec-check.ts).
  await checkClientDecodes(handle, deadline, 'the resume');
  try {
    const a: ResumeAnswer = await sendDecodable(handle, deadline, 'the resume', () =>
      handle.client.withDeadline(deadline, () => handle.executeUpdate(resumeUpdate, { args: [req] })),
    );
    return {
      accepted: a.accepted,
      reason: a.reason,
      rejectedByValidator: false,
      progressVersion: a.progressVersion,
    };
  } catch (err) {
    if (err instanceof WorkflowUpdateFailedError) {
      // No resume handler at all: not a refusal on the merits, a run of no guard engine.
      if (isMissingHandler(err)) throw await notAGuardedRun(handle, 'nothing was resumed');
      return rejected(err.cause?.message ?? err.message);
    }
    if (err instanceof WorkflowNotFoundError) {
      return rejected(
        `run is closed; continue it as a new run with: agentctl resume --from ${handle.workflowId}`,
      );
    }
    if (isDeadline(err, deadline))
      return {
        accepted: false,
        reason: unconfirmedReason(ms),
        rejectedByValidator: false,
        progressVersion: null,
        unconfirmed: true,
      };
    throw err;
  }
}
