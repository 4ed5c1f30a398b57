/**
 * `npm run bench:long -- --ops N`: a live scripted run of N distinct writes.
 *
 * In-process and throwaway like bench/long.ts: a dev server with fast dispatch, one worker
 * over a fresh temp SQLite file (ledger + demo world), no model. The script is the compact
 * form (docs/spec.md §6, "Repeated calls"): `write_record` N times with `{i}` in its args,
 * then `complete_task`, so the run input stays a few hundred bytes whatever N is.
 *
 * Measured, after the result, walking the continue-as-new chain one run at a time (never
 * the whole chain in memory):
 *  - terminal state; ops completed, counted in the world DB (`write_record` executions and
 *    distinct records) and the ledger (SUCCEEDED records), not from the run's own counters;
 *  - runs in the chain; the largest checkpoint: bytes of JSON of the checkpoint in each
 *    continue-as-new run's input (decoded from its WorkflowExecutionStarted event), every one;
 *  - history bytes per op over the first 1,000 and the last 1,000 ops (turn attribution as in
 *    bench/long-history.ts) and their ratio (target ≤ 1.05×), also without the boundary events.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import type { Client } from '@temporalio/client';
import type { Payload } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { quietWorkflowBundle } from '../scripts/workflow-bundle';
import type { RunInput, RunResult } from '../common/contracts';
import { jsonBytes } from '../common/payload-limits';
import { FAST_DISPATCH_DYNAMIC_CONFIG, startThrowawayDevServer } from '../devserver/dev-server';
import type { agentRun } from '../workflows';
import { CONTINUE_AS_NEW_KINDS, LONG_HISTORY_CHANNEL_ARGS } from './long-history';
import { openDemoWorkerDeps } from '../demo/deps';
import { startBenchWorker } from './bench-worker';
import { countRows } from './long';
import { openSqlite } from '../storage/sqlite-driver';
import { agentRunResult } from '../client/runs';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
const EventType = temporal.api.enums.v1.EventType;

/**
 * The scripted run of `ops` distinct writes, then a terminal call. `plain` (`--plain`, issue
 * 32): the calls written out one by one instead of one `repeat` entry, so the script's calls
 * are as long as the run (and travel by reference from the first continue-as-new).
 */
export function opsRunInput(ops: number, tag: string, plain = false): RunInput {
  const write = (i: string) => ({ tool: 'write_record', args: { id: `${tag}-${i}`, body: `op ${i}` } });
  const writes = plain
    ? Array.from({ length: ops }, (_, i) => write(String(i)))
    : [{ repeat: { times: ops, call: write('{i}') } }];
  return {
    goal: `bench long ops: ${ops} distinct writes`,
    planner: {
      kind: 'scripted',
      live: true,
      script: {
        calls: [...writes, { tool: 'complete_task', args: { summary: `${ops} writes` } }],
      },
    },
    guard: { maxSteps: ops + 10, maxMs: 1e12, noProgressLimit: ops + 10 },
    resumeWindowMs: 1000,
  };
}

/** What one ops run measured. */
export interface OpsBenchResult {
  ops: number;
  inputBytes: number;
  terminalState: string;
  reason: string | null;
  worldWrites: number;
  worldRecords: number | null;
  ledgerSucceeded: number | null;
  runs: number;
  /** Ops scheduled before each continue-as-new. */
  continuedAtOp: number[];
  checkpointBytes: number[];
  /** Bytes of JSON of each continue-as-new run's whole input (checkpoint, script, the rest). */
  continuedInputBytes: number[];
  largestCheckpoint: number;
  historyBytes: number;
  events: number;
  first: { ops: number; bytesPerOp: number };
  last: { ops: number; bytesPerOp: number };
  lastOverFirst: number | null;
  lastOverFirstNoBoundary: number | null;
  /** Boundary events (CONTINUE_AS_NEW_KINDS) over the whole chain, per op. */
  boundaryBytesPerOp: number;
  /** Per op without the boundary events, plus the chain's boundary bytes spread evenly over all ops. */
  amortized: { first: number; last: number; ratio: number | null };
  wallS: number;
}

/** Decodes a history payload (encrypted by the bench's codec) to its value. */
async function decodePayload(client: Client, payload: Payload): Promise<unknown> {
  const dc = client.options.loadedDataConverter;
  let decoded = payload;
  for (const codec of [...dc.payloadCodecs].reverse()) decoded = (await codec.decode([decoded]))[0]!;
  return dc.payloadConverter.fromPayload(decoded);
}

/** One run's events, page by page, to `onEvent` (never the whole history at once). */
async function eachEvent(
  client: Client,
  workflowId: string,
  runId: string,
  onEvent: (e: HistoryEvent) => Promise<void> | void,
): Promise<void> {
  let nextPageToken: Uint8Array | undefined;
  do {
    const page = await client.workflowService.getWorkflowExecutionHistory({
      namespace: client.options.namespace,
      execution: { workflowId, runId },
      maximumPageSize: 1000,
      ...(nextPageToken ? { nextPageToken } : {}),
    });
    for (const e of page.history?.events ?? []) await onEvent(e);
    nextPageToken = page.nextPageToken && page.nextPageToken.length > 0 ? page.nextPageToken : undefined;
  } while (nextPageToken);
}

/** The run ids of the chain, oldest first (from each run's first event). */
async function chainRunIds(client: Client, workflowId: string): Promise<string[]> {
  const ids: string[] = [];
  let runId: string | undefined = (await client.workflow.getHandle(workflowId).describe()).runId;
  while (runId && !ids.includes(runId)) {
    ids.unshift(runId);
    const page: temporal.api.workflowservice.v1.IGetWorkflowExecutionHistoryResponse =
      await client.workflowService.getWorkflowExecutionHistory({
        namespace: client.options.namespace,
        execution: { workflowId, runId },
        maximumPageSize: 1,
      });
    runId =
      page.history?.events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId ||
      undefined;
  }
  return ids;
}

const isBoundary = (kind: string): boolean => CONTINUE_AS_NEW_KINDS.includes(kind);

/** Walks the chain: checkpoint sizes and history bytes per op (turn t ends at the t-th runTool). */
export async function measureOpsChain(
  client: Client,
  workflowId: string,
  ops: number,
): Promise<
  Pick<
    OpsBenchResult,
    'runs' | 'checkpointBytes' | 'continuedInputBytes' | 'historyBytes' | 'events' | 'continuedAtOp'
  > & {
    perTurn: number[];
    perTurnNoBoundary: number[];
  }
> {
  const runIds = await chainRunIds(client, workflowId);
  const perTurn: number[] = [0];
  const perTurnNoBoundary: number[] = [0];
  const checkpointBytes: number[] = [];
  const continuedInputBytes: number[] = [];
  const continuedAtOp: number[] = [];
  let turn = 0;
  let pending = 0;
  let pendingNoBoundary = 0;
  let historyBytes = 0;
  let events = 0;
  for (const runId of runIds) {
    const activityOf = new Map<string, string>();
    await eachEvent(client, workflowId, runId, async (e) => {
      events += 1;
      const size = temporal.api.history.v1.HistoryEvent.encode(
        e as temporal.api.history.v1.HistoryEvent,
      ).finish().length;
      historyBytes += size + 3;
      const type = (EventType[e.eventType ?? 0] ?? '').replace(/^EVENT_TYPE_/, '');
      const scheduled = e.activityTaskScheduledEventAttributes;
      if (scheduled) activityOf.set(String(e.eventId), scheduled.activityType?.name ?? '?');
      const ref =
        e.activityTaskStartedEventAttributes?.scheduledEventId ??
        e.activityTaskCompletedEventAttributes?.scheduledEventId;
      const activity = scheduled
        ? (scheduled.activityType?.name ?? '?')
        : ref !== undefined && ref !== null
          ? activityOf.get(String(ref))
          : undefined;
      const kind = activity ? `${type} ${activity}` : type;
      pending += size;
      if (!isBoundary(kind)) pendingNoBoundary += size;
      const started = e.workflowExecutionStartedEventAttributes;
      if (started?.continuedExecutionRunId) {
        continuedAtOp.push(turn);
        const input = (await decodePayload(client, started.input!.payloads![0]!)) as RunInput;
        checkpointBytes.push(input.checkpoint === undefined ? 0 : jsonBytes(input.checkpoint));
        continuedInputBytes.push(jsonBytes(input));
      }
      if (scheduled?.activityType?.name === 'runTool') {
        turn += 1;
        perTurn[turn] = pending;
        perTurnNoBoundary[turn] = pendingNoBoundary;
        pending = 0;
        pendingNoBoundary = 0;
      }
    });
  }
  perTurn[turn + 1] = pending;
  perTurnNoBoundary[turn + 1] = pendingNoBoundary;
  void ops;
  return {
    runs: runIds.length,
    continuedAtOp,
    checkpointBytes,
    continuedInputBytes,
    historyBytes,
    events,
    perTurn,
    perTurnNoBoundary,
  };
}

const sum = (a: readonly number[], from: number, to: number): number => {
  let s = 0;
  for (let t = from; t <= to; t++) s += a[t] ?? 0;
  return s;
};

/** What both `bench:long` rows run on: a throwaway fast-dispatch dev server, one SQLite file, one worker. */
export async function startLongBenchStack(name: string, workflowBundle: { code: string }) {
  // A throwaway checkpoint seal key, so the bench writes nothing under ./data.
  process.env.AGENT_CHECKPOINT_KEY ??= randomBytes(32).toString('base64');
  const server = await startThrowawayDevServer({ dynamicConfig: FAST_DISPATCH_DYNAMIC_CONFIG });
  const dir = mkdtempSync(join(tmpdir(), `alg-bench-${name}-`));
  const dbFile = join(dir, 'agent.db');
  const dbUrl = `sqlite:${dbFile}`;
  const deps = await openDemoWorkerDeps({ ledgerUrl: dbUrl, worldUrl: dbUrl, configPath: null });
  const bench = await startBenchWorker({
    address: server.address,
    namespace: server.namespace,
    deps,
    workflowBundle,
    name,
    channelArgs: LONG_HISTORY_CHANNEL_ARGS,
  });
  return {
    deps,
    bench,
    dbFile,
    async close(): Promise<void> {
      await bench.close();
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Runs the ops row and measures it. */
export async function runOpsBench(
  ops: number,
  timeoutS: number,
  log: (m: string) => void,
  plain = false,
): Promise<OpsBenchResult> {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const wall0 = performance.now();
  const bundle = await quietWorkflowBundle();
  const { deps, bench, dbFile, close } = await startLongBenchStack('long-ops', bundle);
  const { client, taskQueue } = bench;
  try {
    const workflowId = `bench-long-ops-${randomUUID()}`;
    const input = opsRunInput(ops, 'op', plain);
    log(`bench:long --ops: ${ops} live writes, input ${jsonBytes(input)} bytes; workflow ${workflowId}`);
    const handle = await client.workflow.start<typeof agentRun>('agentRun', {
      taskQueue,
      workflowId,
      args: [input],
      staticSummary: input.goal,
    });
    // Each continue-as-new's checkpoint is logged as it happens, so a run cut short still tells.
    let lastRunId = handle.firstExecutionRunId;
    const progress = setInterval(() => {
      void (async () => {
        const c = await deps.world.counters(workflowId);
        const runId = (await handle.describe()).runId;
        let cp = '';
        if (runId !== lastRunId) {
          lastRunId = runId;
          const first = await client.workflowService.getWorkflowExecutionHistory({
            namespace: client.options.namespace,
            execution: { workflowId, runId },
            maximumPageSize: 1,
          });
          const started = first.history?.events?.[0]?.workflowExecutionStartedEventAttributes;
          const payload = started?.input?.payloads?.[0];
          const next = payload ? ((await decodePayload(client, payload)) as RunInput) : undefined;
          cp = next?.checkpoint === undefined ? '' : `; latest checkpoint ${jsonBytes(next.checkpoint)} B`;
        }
        log(`  … ${c.write_record ?? 0} writes (${Math.round((performance.now() - wall0) / 1000)} s)${cp}`);
      })().catch(() => undefined);
    }, 30_000);
    let result: RunResult | null;
    try {
      result = await Promise.race([
        agentRunResult(handle),
        new Promise<null>((resolve) => setTimeout(() => resolve(null), timeoutS * 1000).unref()),
      ]);
    } finally {
      clearInterval(progress);
    }
    if (result === null) {
      // Cut short: the chain so far is measured (the open run up to now), and the row says so.
      log(`  no result after ${timeoutS} s: terminating the run, measuring the chain so far…`);
      await handle.terminate('bench:long --ops timed out');
    } else log(`  run ended ${result.terminal_state} (${result.reason ?? ''}); measuring the chain…`);
    const worldWrites = (await deps.world.counters(workflowId)).write_record ?? 0;
    const m = await measureOpsChain(client, workflowId, ops);
    const ledgerSucceeded = succeededRows(dbFile);
    const n = Math.min(ops, m.perTurn.length - 2);
    const w = Math.min(1000, n);
    const firstBytes = sum(m.perTurn, 1, w);
    const lastBytes = sum(m.perTurn, n - w + 1, n);
    const firstNb = sum(m.perTurnNoBoundary, 1, w);
    const lastNb = sum(m.perTurnNoBoundary, n - w + 1, n);
    const allOps = Math.max(1, n);
    const boundaryBytesPerOp = (sum(m.perTurn, 0, n + 1) - sum(m.perTurnNoBoundary, 0, n + 1)) / allOps;
    const amortFirst = w > 0 ? firstNb / w + boundaryBytesPerOp : 0;
    const amortLast = w > 0 ? lastNb / w + boundaryBytesPerOp : 0;
    return {
      ops,
      inputBytes: jsonBytes(input),
      terminalState: result?.terminal_state ?? `TIMED OUT after ${timeoutS} s`,
      reason: result?.reason ?? null,
      worldWrites,
      worldRecords: countRows(dbFile, 'world_records'),
      ledgerSucceeded,
      runs: m.runs,
      continuedAtOp: m.continuedAtOp,
      checkpointBytes: m.checkpointBytes,
      continuedInputBytes: m.continuedInputBytes,
      largestCheckpoint: Math.max(0, ...m.checkpointBytes),
      historyBytes: m.historyBytes,
      events: m.events,
      first: { ops: w, bytesPerOp: w > 0 ? firstBytes / w : 0 },
      last: { ops: w, bytesPerOp: w > 0 ? lastBytes / w : 0 },
      lastOverFirst: firstBytes > 0 ? lastBytes / firstBytes : null,
      lastOverFirstNoBoundary: firstNb > 0 ? lastNb / firstNb : null,
      boundaryBytesPerOp,
      amortized: {
        first: amortFirst,
        last: amortLast,
        ratio: amortFirst > 0 ? amortLast / amortFirst : null,
      },
      wallS: (performance.now() - wall0) / 1000,
    };
  } finally {
    await close();
  }
}

/** SUCCEEDED ledger records in the SQLite file (null without a ledger table). */
function succeededRows(file: string): number | null {
  const db = openSqlite(file, { readOnly: true });
  try {
    const t = db
      .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'ledger_records'")
      .get();
    if (!t) return null;
    return Number(
      (
        db.prepare("SELECT count(*) AS n FROM ledger_records WHERE state = 'SUCCEEDED'").get() as unknown as {
          n: number;
        }
      ).n,
    );
  } finally {
    db.close();
  }
}

const fmt = (n: number, d = 0): string =>
  n.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });

/** The Markdown table of an ops result. */
export function opsTable(b: OpsBenchResult): string {
  const ok = (v: boolean): string => (v ? 'ok' : 'MISSED');
  const rows: [string, string, string][] = [
    [
      'terminal state',
      `${b.terminalState}${b.reason ? ` (${b.reason})` : ''}`,
      ok(b.terminalState === 'COMPLETED'),
    ],
    [
      'ops completed (world: write_record executions / records; ledger SUCCEEDED)',
      `${fmt(b.worldWrites)} / ${b.worldRecords === null ? 'n/a' : fmt(b.worldRecords)}; ${b.ledgerSucceeded === null ? 'n/a' : fmt(b.ledgerSucceeded)} of ${fmt(b.ops)}`,
      ok(b.worldWrites === b.ops),
    ],
    ['run input', `${fmt(b.inputBytes)} bytes`, ''],
    [
      'runs in the continue-as-new chain',
      `${fmt(b.runs)}${b.continuedAtOp.length > 0 ? ` (continued after ops ${b.continuedAtOp.slice(0, 8).join(', ')}${b.continuedAtOp.length > 8 ? ', …' : ''})` : ''}`,
      '',
    ],
    [
      'largest checkpoint at a continue-as-new (target ≤ 64 KB)',
      `${fmt(b.largestCheckpoint / 1024, 1)} KB (of ${fmt(b.checkpointBytes.length)} measured; first ${fmt((b.checkpointBytes[0] ?? 0) / 1024, 1)} KB, last ${fmt((b.checkpointBytes[b.checkpointBytes.length - 1] ?? 0) / 1024, 1)} KB)`,
      ok(b.largestCheckpoint <= 64 * 1024),
    ],
    [
      'largest continue-as-new input (checkpoint + script + the rest)',
      `${fmt(Math.max(0, ...b.continuedInputBytes) / 1024, 1)} KB`,
      '',
    ],
    ['history total (events)', `${fmt(b.historyBytes / 1e6, 2)} MB (${fmt(b.events)})`, ''],
    [`history per op, first ${fmt(b.first.ops)} ops`, `${fmt(b.first.bytesPerOp)} B`, ''],
    [`history per op, last ${fmt(b.last.ops)} ops`, `${fmt(b.last.bytesPerOp)} B`, ''],
    [
      'last / first (target ≤ 1.05×)',
      b.lastOverFirst === null ? 'n/a' : `${fmt(b.lastOverFirst, 3)}×`,
      b.lastOverFirst === null ? 'MISSED' : ok(b.lastOverFirst <= 1.05),
    ],
    [
      'last / first, continue-as-new boundary events left out',
      b.lastOverFirstNoBoundary === null ? 'n/a' : `${fmt(b.lastOverFirstNoBoundary, 3)}×`,
      '',
    ],
    ['boundary events (checkpoint, seal) over the chain, per op', `${fmt(b.boundaryBytesPerOp)} B`, ''],
    [
      'per op, boundary bytes spread evenly: first / last',
      `${fmt(b.amortized.first)} B / ${fmt(b.amortized.last)} B (${b.amortized.ratio === null ? 'n/a' : `${fmt(b.amortized.ratio, 3)}×`})`,
      '',
    ],
    ['wall time', `${fmt(b.wallS, 1)} s`, ''],
  ];
  return [
    '',
    `Long scripted run: ${fmt(b.ops)} distinct live writes (write_record, SQLite, no model)`,
    '',
    '| measure | value | target |',
    '|---|---:|---|',
    ...rows.map(([k, v, t]) => `| ${k} | ${v} | ${t} |`),
    '',
    `Checkpoint bytes at each continue-as-new: ${b.checkpointBytes.join(', ')}`,
    '',
    `Continued after ops: ${b.continuedAtOp.join(', ')}`,
    '',
  ].join('\n');
}
