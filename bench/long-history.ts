/**
 * History cost of one long run, over its whole continue-as-new chain (bench/long.ts and
 * scripts/long-run-check.ts): the chain is walked BACKWARDS from the latest run (each
 * run's WorkflowExecutionStarted names the run it continued, `continuedExecutionRunId`),
 * so a caller only needs the workflow id.
 *
 * Turn attribution: the events of the chain, in order, are split at each `runTool`
 * ActivityTaskScheduled event. Turn t (1-based) = every event after the (t-1)-th one up to
 * and including the t-th one (so it holds the `plan` activity that proposed call t and the
 * scheduling of call t; the completion of call t lands in turn t+1). Events after the last
 * runTool (the final plan and the completion) are turn `turns + 1`; turn 0 never has any
 * bytes except when the run has no runTool at all. An event's size is its encoded protobuf
 * size, `temporal.api.history.v1.HistoryEvent.encode(e).finish().length`; a run's size is
 * `History.encode(history).finish().length` (the per-event sizes plus 2–4 bytes of framing
 * each).
 */
import type { Client } from '@temporalio/client';
import { tsToMs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';

type History = temporal.api.history.v1.IHistory;
type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** What {@link measureChain} found. */
export interface ChainMeasure {
  /** Runs in the continue-as-new chain (1 = never continued). */
  readonly runs: number;
  readonly runIds: readonly string[];
  /** For each run after the first: the turns completed (runTool scheduled) before it started. */
  readonly continuedAtTurn: readonly number[];
  readonly events: number;
  /** Sum of the runs' encoded history sizes. */
  readonly bytes: number;
  /** runTool activities scheduled over the chain. */
  readonly turns: number;
  /** Bytes of turn t at index t (0 … turns + 1), see the module comment. */
  readonly bytesPerTurn: readonly number[];
  /** Event time (ms since epoch) of the t-th runTool ActivityTaskScheduled at index t (index 0 = the first event). */
  readonly turnAtMs: readonly number[];
  /** Event time of the chain's last event. */
  readonly endAtMs: number;
  /**
   * Bytes by event kind over the chain: the event type without `EVENT_TYPE_`, and for
   * activity events the activity type (`ACTIVITY_TASK_COMPLETED plan`).
   */
  readonly bytesByKind: Readonly<Record<string, number>>;
  /** {@link bytesByKind} of each turn (index as {@link bytesPerTurn}). */
  readonly kindBytesPerTurn: readonly Readonly<Record<string, number>>[];
}

/** A conversation's turn ends where a person's `message` update was accepted (bench/conversation.ts). */
export const isMessageAccepted = (e: HistoryEvent): boolean =>
  e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === 'message';

const isRunTool = (e: HistoryEvent): boolean =>
  e.activityTaskScheduledEventAttributes?.activityType?.name === 'runTool';

/**
 * gRPC receive limit callers should set on the Connection they pass (`channelArgs`): one
 * history event of a run that carries its conversation in history can be megabytes.
 */
export const LONG_HISTORY_CHANNEL_ARGS = { 'grpc.max_receive_message_length': 256 * 1024 * 1024 };

/** One run's history, fetched in small pages (a default page of big events exceeds gRPC's 4 MB). */
export async function fetchRunHistory(client: Client, workflowId: string, runId: string): Promise<History> {
  const events: HistoryEvent[] = [];
  let nextPageToken: Uint8Array | undefined;
  do {
    const page: temporal.api.workflowservice.v1.IGetWorkflowExecutionHistoryResponse =
      await client.workflowService.getWorkflowExecutionHistory({
        namespace: client.options.namespace,
        execution: { workflowId, runId },
        maximumPageSize: 20,
        ...(nextPageToken ? { nextPageToken } : {}),
      });
    events.push(...(page.history?.events ?? []));
    nextPageToken = page.nextPageToken && page.nextPageToken.length > 0 ? page.nextPageToken : undefined;
  } while (nextPageToken);
  return { events };
}

/** Fetches every run of `workflowId`'s chain (oldest first) and measures it. */
export async function measureChain(
  client: Client,
  workflowId: string,
  isTurnEnd: (e: HistoryEvent) => boolean = isRunTool,
): Promise<ChainMeasure> {
  const histories: { runId: string; history: History }[] = [];
  let runId: string | undefined = (await client.workflow.getHandle(workflowId).describe()).runId;
  const seen = new Set<string>();
  while (runId && !seen.has(runId)) {
    seen.add(runId);
    const history: History = await fetchRunHistory(client, workflowId, runId);
    histories.unshift({ runId, history });
    const started: temporal.api.history.v1.IWorkflowExecutionStartedEventAttributes | null | undefined =
      history.events?.[0]?.workflowExecutionStartedEventAttributes;
    runId = started?.continuedExecutionRunId || undefined;
  }
  return measureHistories(histories, isTurnEnd);
}

/** Measures histories given oldest first. */
export function measureHistories(
  histories: readonly { runId: string; history: History }[],
  isTurnEnd: (e: HistoryEvent) => boolean = isRunTool,
): ChainMeasure {
  const bytesPerTurn: number[] = [0];
  const turnAtMs: number[] = [];
  let events = 0;
  let bytes = 0;
  let turn = 0;
  let pendingBytes = 0;
  let endAtMs = 0;
  const bytesByKind: Record<string, number> = {};
  const kindBytesPerTurn: Record<string, number>[] = [{}];
  const continuedAtTurn: number[] = [];
  let pendingKinds: Record<string, number> = {};
  for (const { history } of histories) {
    const activityOf = new Map<string, string>();
    if (events > 0) continuedAtTurn.push(turn);
    bytes += temporal.api.history.v1.History.encode(history as temporal.api.history.v1.History).finish()
      .length;
    for (const e of history.events ?? []) {
      events += 1;
      const at = tsToMs(e.eventTime);
      if (turnAtMs.length === 0) turnAtMs.push(at);
      endAtMs = at;
      const size = temporal.api.history.v1.HistoryEvent.encode(
        e as temporal.api.history.v1.HistoryEvent,
      ).finish().length;
      pendingBytes += size;
      const kind = kindOf(e, activityOf);
      bytesByKind[kind] = (bytesByKind[kind] ?? 0) + size;
      pendingKinds[kind] = (pendingKinds[kind] ?? 0) + size;
      if (isTurnEnd(e)) {
        turn += 1;
        bytesPerTurn[turn] = pendingBytes;
        kindBytesPerTurn[turn] = pendingKinds;
        turnAtMs[turn] = at;
        pendingBytes = 0;
        pendingKinds = {};
      }
    }
  }
  bytesPerTurn[turn === 0 ? 0 : turn + 1] = pendingBytes;
  kindBytesPerTurn[turn === 0 ? 0 : turn + 1] = pendingKinds;
  return {
    runs: histories.length,
    runIds: histories.map((h) => h.runId),
    continuedAtTurn,
    events,
    bytes,
    turns: turn,
    bytesPerTurn,
    turnAtMs,
    endAtMs,
    bytesByKind,
    kindBytesPerTurn,
  };
}

function kindOf(e: HistoryEvent, activityOf: Map<string, string>): string {
  const type = (temporal.api.enums.v1.EventType[e.eventType ?? 0] ?? String(e.eventType)).replace(
    /^EVENT_TYPE_/,
    '',
  );
  const scheduled = e.activityTaskScheduledEventAttributes;
  if (scheduled) {
    const name = scheduled.activityType?.name ?? '?';
    activityOf.set(String(e.eventId), name);
    return `${type} ${name}`;
  }
  const ref =
    e.activityTaskStartedEventAttributes?.scheduledEventId ??
    e.activityTaskCompletedEventAttributes?.scheduledEventId ??
    e.activityTaskFailedEventAttributes?.scheduledEventId ??
    e.activityTaskTimedOutEventAttributes?.scheduledEventId ??
    e.activityTaskCanceledEventAttributes?.scheduledEventId;
  return ref !== undefined && ref !== null ? `${type} ${activityOf.get(String(ref)) ?? '?'}` : type;
}

/** Bytes of turns `from + 1 … to` (e.g. 100, 200: the hundred turns 101–200). */
export function bytesOfTurns(m: ChainMeasure, from: number, to: number): number {
  let sum = 0;
  for (let t = Math.max(1, from + 1); t <= Math.min(to, m.turns); t++) sum += m.bytesPerTurn[t] ?? 0;
  return sum;
}

/** Bytes of turns `from + 1 … to` by event kind. */
export function kindBytesOfTurns(m: ChainMeasure, from: number, to: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (let t = Math.max(1, from + 1); t <= Math.min(to, m.turns); t++)
    for (const [k, v] of Object.entries(m.kindBytesPerTurn[t] ?? {})) out[k] = (out[k] ?? 0) + v;
  return out;
}

/**
 * The event kinds a continue-as-new adds once per run, not per turn: the new run's
 * WorkflowExecutionStarted (its input: the checkpoint), the old run's ContinuedAsNew event,
 * the `sealCheckpoint` / `checkpointSeal` activity (a lean run's `saveTrace` is a local activity: its
 * input is not in history). A window of turns holding a run boundary carries them.
 */
export const CONTINUE_AS_NEW_KINDS: readonly string[] = [
  'WORKFLOW_EXECUTION_STARTED',
  'WORKFLOW_EXECUTION_CONTINUED_AS_NEW',
  'ACTIVITY_TASK_SCHEDULED sealCheckpoint',
  'ACTIVITY_TASK_STARTED sealCheckpoint',
  'ACTIVITY_TASK_COMPLETED sealCheckpoint',
  // the same activity after the lean-checkpoint-seal-v1 patch
  'ACTIVITY_TASK_SCHEDULED checkpointSeal',
  'ACTIVITY_TASK_STARTED checkpointSeal',
  'ACTIVITY_TASK_COMPLETED checkpointSeal',
];

/**
 * Seconds per turn around turn `k`: the time between the runTool schedulings of turns
 * k - w and k + w (clamped to 1 … turns), divided by the turns in between. null when the
 * chain has fewer than 2 turns there.
 */
export function secondsPerTurnAround(m: ChainMeasure, k: number, w = 10): number | null {
  const lo = Math.max(1, k - w);
  const hi = Math.min(m.turns, k + w);
  if (hi <= lo) return null;
  return (m.turnAtMs[hi]! - m.turnAtMs[lo]!) / 1000 / (hi - lo);
}
