/**
 * Whether a worker serves a task queue, asked of the server (DescribeTaskQueue's pollers), so
 * agentctl says "no worker polls task queue X, start one with …" within seconds instead of a
 * query that times out after 30 s or an update that waits unanswered. The one check every
 * command that needs a worker uses (status, start --wait, stop, resume, send), and the one
 * wording of its answer.
 *
 * A queue has partitions (4 by default) and each lists the polls it served: the root is asked
 * first, the others only when it lists no live worker. Temporal keeps a queue's pollers for 5
 * minutes after their last poll; a live worker long-polls
 * without a pause (each poll lasts up to a minute), so a poller not seen for
 * {@link LIVE_POLLER_MS} is counted as gone. A queue no worker has polled does not exist for
 * Temporal: it answers with no pollers, not an error, so a misspelt queue and a queue whose
 * worker is not started yet read alike ("no worker polls …").
 */
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { DEFAULT_NAMESPACE, DEFAULT_TASK_QUEUE, DEFAULT_TEMPORAL_ADDRESS } from '../connection/env';
import { CliError, Exit } from './format';

/** A poller not seen for this long is counted as gone (a live one polls at least once a minute), ms. */
export const LIVE_POLLER_MS = 120_000;

/** How long one look at a queue's pollers may take, ms. */
const DESCRIBE_MS = 5_000;

/** Where a task queue lives: what the hint to start a worker must name. */
export interface QueuePlace {
  readonly taskQueue: string;
  readonly namespace: string;
  /** The server's address as the client reached it (host:port). */
  readonly address: string;
}

/** One worker polling the queue, as the server last saw it. */
export interface QueuePoller {
  readonly identity: string;
  /** When it last polled (null: the server did not say). */
  readonly lastAccessTime: Date | null;
}

/** What {@link queueWorkers} found. */
export interface QueueWorkers {
  /** Pollers seen within {@link LIVE_POLLER_MS}. */
  readonly live: readonly QueuePoller[];
  /** Pollers the server still lists, not seen for longer (a worker that stopped a few minutes ago). */
  readonly stale: readonly QueuePoller[];
}

/** The `client` and where it is connected (a {@link Connected} has both). */
export interface QueueClient {
  readonly client: Client;
  readonly namespace: string;
  readonly address: string;
}

function timeOf(t: { seconds?: unknown; nanos?: number | null } | null | undefined): Date | null {
  const raw = t?.seconds as { toNumber?: () => number } | number | null | undefined;
  const seconds = typeof raw === 'object' && raw?.toNumber ? raw.toNumber() : Number(raw ?? 0); // a Long or a number
  if (!seconds) return null;
  return new Date(seconds * 1000 + Math.floor((t?.nanos ?? 0) / 1e6));
}

/**
 * The workflow pollers of `taskQueue` (its normal queue: every worker of it polls there), live
 * and stale. A server that does not answer within a few seconds is an error (the caller's own
 * handling of an unreachable server applies).
 */
export async function queueWorkers(
  c: QueueClient,
  taskQueue: string,
  now: number = Date.now(),
): Promise<QueueWorkers> {
  const deadline = Date.now() + DESCRIBE_MS;
  const pollersOf = async (name: string) =>
    (
      await c.client.withDeadline(deadline, () =>
        c.client.workflowService.describeTaskQueue({
          namespace: c.namespace,
          taskQueue: { name, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
          taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
        }),
      )
    ).pollers ?? [];
  let found = split(await pollersOf(taskQueue), now);
  // The root partition lists the pollers it served; a worker's polls also land on the others
  // (a queue has PARTITIONS of them by default): asked only when the root lists no live one.
  if (found.live.length === 0) {
    const rest = await Promise.all(
      Array.from({ length: PARTITIONS - 1 }, (_, i) =>
        pollersOf(`/_sys/${taskQueue}/${i + 1}`).catch(() => []),
      ),
    );
    found = split([...found.raw, ...rest.flat()], now);
  }
  return { live: found.live, stale: found.stale };
}

/** Task queue partitions a server has by default (`matching.numTaskqueueReadPartitions`). */
const PARTITIONS = 4;

type RawPoller = { identity?: string | null; lastAccessTime?: Parameters<typeof timeOf>[0] };

/** Pollers by identity (the most recent sighting), live and stale. */
function split(raw: readonly RawPoller[], now: number): QueueWorkers & { raw: RawPoller[] } {
  const byIdentity = new Map<string, QueuePoller>();
  for (const p of raw) {
    const poller = { identity: p.identity || '(no identity)', lastAccessTime: timeOf(p.lastAccessTime) };
    const seen = byIdentity.get(poller.identity);
    if (!seen || (poller.lastAccessTime?.getTime() ?? 0) > (seen.lastAccessTime?.getTime() ?? 0))
      byIdentity.set(poller.identity, poller);
  }
  const live: QueuePoller[] = [];
  const stale: QueuePoller[] = [];
  for (const poller of byIdentity.values()) {
    const seen = poller.lastAccessTime?.getTime();
    (seen === undefined || now - seen <= LIVE_POLLER_MS ? live : stale).push(poller);
  }
  return { live, stale, raw: [...raw] };
}

/** The command that starts this repository's worker on `place` (variables only where not the default). */
export function startWorkerCommand(place: QueuePlace): string {
  const vars = [
    place.address !== DEFAULT_TEMPORAL_ADDRESS ? `TEMPORAL_ADDRESS=${place.address}` : '',
    place.namespace !== DEFAULT_NAMESPACE ? `TEMPORAL_NAMESPACE=${place.namespace}` : '',
    place.taskQueue !== DEFAULT_TASK_QUEUE ? `TEMPORAL_TASK_QUEUE=${place.taskQueue}` : '',
  ].filter(Boolean);
  return `${vars.map((v) => `${v} `).join('')}npm run worker`;
}

/**
 * "no worker polls task queue "X" (namespace N on ADDRESS)" with how to start one, and, when the
 * server still lists a worker that stopped polling, when it was last seen.
 */
export function noWorkerMessage(place: QueuePlace, workers?: QueueWorkers, now: number = Date.now()): string {
  const last = workers?.stale
    .map((p) => p.lastAccessTime?.getTime() ?? 0)
    .reduce((a, b) => Math.max(a, b), 0);
  const lastSeen = last
    ? ` (the last one, ${workers!.stale[0]!.identity}, polled ${Math.round((now - last) / 1000)} s ago)`
    : '';
  return `no worker polls task queue "${place.taskQueue}" (namespace ${place.namespace} on ${place.address})${lastSeen}. ${startWorkerHint(place)}`;
}

/** How to start a worker on `place` (the documented commands, docs/operations.md "No worker"). */
export function startWorkerHint(place: QueuePlace): string {
  return (
    `Start one: \`${startWorkerCommand(place)}\` in this repository, \`npm run worker\` in an app \`agentctl init\` wrote, ` +
    'or your own worker program on that task queue; a misspelt queue has no worker either (check --task-queue / TEMPORAL_TASK_QUEUE)'
  );
}

/** `agentctl` could not do what needs a worker: nobody polls the run's task queue (exit 6). */
export class NoWorkerError extends CliError {
  constructor(
    readonly place: QueuePlace,
    what: string,
    workers?: QueueWorkers,
  ) {
    super(Exit.NO_WORKER, `${noWorkerMessage(place, workers)}. ${what}`);
  }
}

/** The place of `taskQueue` on the server `c` is connected to. */
export const placeOf = (c: QueueClient, taskQueue: string): QueuePlace => ({
  taskQueue,
  namespace: c.namespace,
  address: c.address,
});

/**
 * Throws {@link NoWorkerError} (exit 6) with `what` (e.g. "nothing was sent") when no live
 * worker polls `taskQueue`; returns its live pollers otherwise. A look that fails (credentials
 * that may start runs but not describe queues, a server too busy to answer in time) cannot
 * tell: the action goes ahead as before this check (null).
 */
export async function requireWorker(
  c: QueueClient,
  taskQueue: string,
  what: string,
): Promise<readonly QueuePoller[] | null> {
  const workers = await queueWorkers(c, taskQueue).catch(() => null);
  if (!workers) return null;
  if (workers.live.length === 0) throw new NoWorkerError(placeOf(c, taskQueue), what, workers);
  return workers.live;
}

/** What {@link watchForWorker} reports. */
export interface WorkerWatch {
  /** Called once when no worker polls the queue. */
  readonly onMissing: (message: string) => void;
  /** Called once when a worker polls it after {@link onMissing} was called. */
  readonly onAppeared: (pollers: readonly QueuePoller[]) => void;
  /** Between two looks while no worker polls, ms (default 2 s). */
  readonly intervalMs?: number;
}

/**
 * Looks at `taskQueue` now and, while no worker polls it, every `intervalMs` until one does or
 * `signal` aborts (then once more, so a worker that came and finished the run is still said);
 * says so once each way. A look that fails (the server busy, a permission the
 * client lacks) says nothing: the caller's own wait is the authority, this only explains it.
 */
export async function watchForWorker(
  c: QueueClient,
  taskQueue: string,
  signal: AbortSignal,
  o: WorkerWatch,
): Promise<void> {
  let missing = false;
  for (;;) {
    const workers = await queueWorkers(c, taskQueue).catch(() => null);
    if (workers && workers.live.length > 0) {
      if (missing) o.onAppeared(workers.live);
      return;
    }
    if (workers && !missing && !signal.aborted) {
      missing = true;
      o.onMissing(noWorkerMessage(placeOf(c, taskQueue), workers));
    }
    // Aborted (the caller's wait is over): this last look said whether a worker came meanwhile.
    if (signal.aborted) return;
    await new Promise<void>((r) => {
      const t = setTimeout(r, o.intervalMs ?? 2_000);
      signal.addEventListener('abort', () => {
        clearTimeout(t);
        r();
      });
    });
  }
}

/** Characters a task queue name may not hold (control characters: a paste or a shell mistake). */
const CONTROL = /[\u0000-\u001f\u007f]/;

/**
 * A task queue name as given on the command line, checked: empty, blank-edged, with control
 * characters, Temporal's reserved `/_sys/` prefix or over Temporal's 1000-character limit is
 * exit 2 naming the problem.
 */
export function checkTaskQueueName(name: string, from: string): string {
  const problem =
    name.trim() === ''
      ? 'is empty'
      : name !== name.trim()
        ? 'begins or ends with white space'
        : CONTROL.test(name)
          ? 'holds a control character'
          : name.startsWith('/_sys/')
            ? "begins with /_sys/ (Temporal's reserved prefix)"
            : name.length > 1000
              ? 'is longer than 1000 characters'
              : null;
  if (problem)
    throw new CliError(Exit.USAGE, `${from}: the task queue name ${JSON.stringify(name)} ${problem}`);
  return name;
}
