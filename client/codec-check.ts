/**
 * An operator action (stop, resume, approve) on a run whose worker does not share this client's
 * payload codec is a configuration error with its own exit code, never a refusal and never
 * silent (codec/mismatch.ts says how each direction shows). Before sending,
 * the client reads the run's status: an answer it cannot decode means it lacks the worker's key
 * (nothing is sent). While the update is pending, a workflow task the worker fails on a codec
 * error means the worker lacks this client's key; an update rejected with `Unknown encoding`
 * means the worker has no codec.
 */
import { WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import {
  codecMismatch,
  isPayloadDecodeMessage,
  payloadDecodeFailure,
  PayloadCodecMismatchError,
  type ClientCodecInfo,
} from '../codec/mismatch';
import { statusQuery } from '../common/contracts';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** How often the run is looked at for a workflow task failed on a codec error while an update waits. */
const WATCH_MS = 500;

/** Whether the client encrypts, and with which key (for the error's message). */
export function clientCodecOf(handle: WorkflowHandle): ClientCodecInfo {
  const codecs = handle.client.options.loadedDataConverter.payloadCodecs;
  const ring = (codecs.find((c) => (c as { ring?: unknown }).ring) as { ring?: { activeKeyId?: string } })
    ?.ring;
  return {
    encrypts: codecs.length > 0,
    ...(ring?.activeKeyId ? { activeKeyId: ring.activeKeyId } : {}),
  };
}

/**
 * Reads an open run's status within `deadline`: throws {@link PayloadCodecMismatchError} (side
 * `client`) when its answer cannot be decoded here; any other outcome (no handler, no worker in
 * time) is left to the action itself.
 */
export async function checkClientDecodes(
  handle: WorkflowHandle,
  deadline: number,
  action: string,
): Promise<void> {
  try {
    // A closed run (or none) is the action's to report: a query would replay it on a worker.
    if ((await handle.describe()).status.name !== 'RUNNING') return;
    await handle.client.withDeadline(deadline, () => handle.query(statusQuery));
  } catch (err) {
    const failure = payloadDecodeFailure(err);
    if (failure)
      throw codecMismatch('client', failure, clientCodecOf(handle), `${action} was not sent`, { cause: err });
  }
}

/**
 * A `.catch` for a query: an answer this client cannot decode becomes
 * {@link PayloadCodecMismatchError} (side `client`: the workers' key is not ours, exit 5, not a
 * refusal); anything else is rethrown.
 */
export function decodableOr(handle: WorkflowHandle, action: string): (err: unknown) => never {
  return (err) => {
    const failure = payloadDecodeFailure(err);
    if (failure === null) throw err;
    throw codecMismatch('client', failure, clientCodecOf(handle), action, { cause: err });
  };
}

/** The codec failure of the run's current workflow task, when the worker keeps failing it on one. */
async function workerDecodeFailure(handle: WorkflowHandle): Promise<string | null> {
  const d = await handle.describe();
  if ((d.raw.pendingWorkflowTask?.attempt ?? 0) < 2) return null;
  const events = (await handle.fetchHistory()).events ?? [];
  for (let i = events.length - 1; i >= 0; i--) {
    const failed = events[i]?.workflowTaskFailedEventAttributes;
    if (!failed) continue;
    const message = failed.failure?.message ?? '';
    return isPayloadDecodeMessage(message) ? message : null;
  }
  return null;
}

/**
 * Runs `send` (an update) until `deadline`, and maps what says the worker cannot decode it to
 * {@link PayloadCodecMismatchError} (side `worker`): the update rejected with a decode error,
 * or the run's workflow task failing on one meanwhile. A decode error of the answer itself is
 * side `client`. Everything else is `send`'s to report.
 */
export async function sendDecodable<T>(
  handle: WorkflowHandle,
  deadline: number,
  action: string,
  send: () => Promise<T>,
): Promise<T> {
  let settled = false;
  const sent = send();
  const watch = (async (): Promise<never> => {
    while (!settled && Date.now() + WATCH_MS < deadline) {
      await sleep(WATCH_MS);
      if (settled) break;
      const failure = await workerDecodeFailure(handle).catch(() => null);
      if (failure)
        throw codecMismatch(
          'worker',
          failure,
          clientCodecOf(handle),
          `the worker could not decrypt ${action} (its workflow task failed on it): ${action} is not applied; it waits on the server, and the run's workflow tasks may keep failing on it, until a worker with the key takes it`,
        );
    }
    return new Promise<never>(() => undefined);
  })();
  sent.catch(() => undefined);
  try {
    return await Promise.race([sent, watch]);
  } catch (err) {
    const failure = err instanceof PayloadCodecMismatchError ? null : payloadDecodeFailure(err);
    if (failure === null) throw err;
    if (err instanceof WorkflowUpdateFailedError)
      throw codecMismatch(
        'worker',
        failure,
        clientCodecOf(handle),
        `the worker could not read ${action}: nothing changed`,
        {
          cause: err,
        },
      );
    throw codecMismatch(
      'client',
      failure,
      clientCodecOf(handle),
      `${action} was sent, but its answer cannot be read here: check the run with a client that has the key`,
      { cause: err },
    );
  } finally {
    settled = true;
  }
}
