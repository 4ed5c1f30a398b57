/**
 * A worker's connection to Temporal, waited for: a worker started together with its server (two
 * terminals, a compose file, a pod with the server beside it) finds the frontend not listening
 * yet, or listening and "not healthy yet", or the namespace not created yet. It retries with
 * backoff, saying once what it waits for (address, namespace) and why, and gives up after
 * AGENT_TEMPORAL_WAIT seconds (default 120, worker/env.ts; 0: one try) with an
 * error naming the address, the namespace and the last answer. A refused credential (API key,
 * certificate) is not waited on: it fails at once.
 */
import { NativeConnection, type NativeConnectionOptions } from '@temporalio/worker';
import { readTemporalWaitMs, TEMPORAL_WAIT_ENV } from './env';

/** Options of {@link connectToTemporal}. */
export interface ConnectToTemporalOptions {
  /** Give up after this long, ms (default: AGENT_TEMPORAL_WAIT, else 120 s). */
  readonly waitMs?: number;
  /** Where the waiting is said (default console.log with a `worker:` prefix). */
  readonly log?: (line: string) => void;
  /** First pause between tries, ms (default 250; doubled up to 5 s). */
  readonly firstBackoffMs?: number;
}

/** A Temporal answer worth waiting on: not listening, not healthy yet, the namespace not there yet. */
function transient(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  const text = typeof e?.message === 'string' ? e.message : String(err);
  if (e?.code === 16 || e?.code === 7) return false; // UNAUTHENTICATED, PERMISSION_DENIED
  if (/unauthenticated|permission ?denied|api key|certificate|handshake/i.test(text)) return false;
  return true;
}

/** The longest pause between two tries, ms. */
const MAX_BACKOFF_MS = 5_000;

/** The first line of an error, for a log line. */
function firstLine(err: unknown): string {
  const text = (err instanceof Error ? err.message : String(err)).split('\n')[0]!.trim();
  return /connection refused|ECONNREFUSED/i.test(text)
    ? 'connection refused (nothing listens there yet)'
    : text;
}

/**
 * Connects a worker's NativeConnection to `options.address` and waits until `namespace`
 * answers there (see the module comment). Resolves with the connection; throws once the wait is
 * over, naming the address, the namespace and the last answer.
 */
export async function connectToTemporal(
  options: NativeConnectionOptions & { address: string },
  namespace: string,
  o: ConnectToTemporalOptions = {},
): Promise<NativeConnection> {
  const waitMs = o.waitMs ?? readTemporalWaitMs();
  const log = o.log ?? ((line: string) => console.log(`worker: ${line}`));
  const started = Date.now();
  const deadline = started + waitMs;
  let backoff = o.firstBackoffMs ?? 250;
  let said: string | null = null;
  for (;;) {
    let connection: NativeConnection | undefined;
    let why: string;
    try {
      connection = await NativeConnection.connect(options);
      await connection.workflowService.describeNamespace({ namespace });
      if (said !== null)
        log(
          `Temporal at ${options.address} answers (namespace ${namespace}) after ${((Date.now() - started) / 1000).toFixed(1)} s`,
        );
      return connection;
    } catch (err) {
      await connection?.close().catch(() => undefined);
      const notFound = (err as { code?: unknown }).code === 5;
      if (!notFound && !transient(err))
        throw new Error(`Temporal at ${options.address} refused this worker: ${firstLine(err)}`, {
          cause: err,
        });
      why = notFound ? `namespace ${namespace} not found (yet)` : firstLine(err);
      if (Date.now() + backoff > deadline)
        throw new Error(
          `cannot reach Temporal at ${options.address} (namespace ${namespace}) ` +
            `${waitMs > 0 ? `within ${Math.round(waitMs / 1000)} s ` : ''}(${why}). ` +
            `Start a dev server with "npm run dev:server", or set TEMPORAL_ADDRESS / TEMPORAL_NAMESPACE; ` +
            `${TEMPORAL_WAIT_ENV} (seconds, now ${Math.round(waitMs / 1000)}) sets how long a worker waits at start.`,
          { cause: err },
        );
    }
    if (said === null)
      log(
        `waiting for Temporal at ${options.address} (namespace ${namespace}): ${why}; ` +
          `retrying for up to ${Math.round(waitMs / 1000)} s (${TEMPORAL_WAIT_ENV})`,
      );
    else if (why !== said)
      log(`still waiting for Temporal at ${options.address} (namespace ${namespace}): ${why}`);
    said = why;
    await new Promise((r) => setTimeout(r, backoff));
    backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
  }
}
