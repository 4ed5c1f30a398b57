/**
 * `npm run bench:run`: throughput and history cost of the durable run.
 *
 * Everything is in-process and throwaway: the bench starts its own in-memory Temporal dev
 * server (`startThrowawayDevServer()`: in memory, port 0, headless), one worker with the
 * real workflow + activities on a fresh temp SQLite file (ledger + demo world), and runs
 * fixture-mode scripted runs (`planner: { kind: 'scripted', script }`, the script's own
 * results answer, no tool really runs). Each script is N distinct `search` calls whose
 * `progressVersion` increases 1..N, so the guard never stops them, followed by a terminal
 * `summarise` call; the guard limits are raised (maxSteps, maxMs) so only the script ends a run.
 *
 * Measured:
 *  1. steps/s with 1, 10 and 100 concurrent runs, guard on vs. the same workflow with
 *     `guardEnabled: false` (a pass-through), and the off/on ratio. A step = one tool call
 *     (a `plan` activity + a `runTool` activity + the guard; the terminal call counts). Time =
 *     from the first start to the last result; a small warm-up per mode is not counted; the
 *     order of the two modes alternates per row. A row runs `--steps` (50) steps per run, capped
 *     so one measurement is at most `--max-row-steps` (1000) steps: 100 runs x 10 steps.
 *  2. history events (and bytes) per step, from one fetched history per mode (first row).
 *  3. one long run (default 1,000 steps; guard maxSteps raised, `maxHistoryEvents` huge so the
 *     workflow's own limit never fires): whether the server suggested continue-as-new (the
 *     workflow obeys `workflowInfo().continueAsNewSuggested`), at which event/step, and the
 *     time to replay its history — the whole continue-as-new chain — with
 *     `Worker.runReplayHistories` on the fetched histories.
 *     On a stock dev server the run IS split (the inline script travels in every `plan`
 *     input, so history grows ~script-size per step and hits the 4 MB suggest limit early).
 *     `--single-history` repeats the long run on a second dev server whose suggest-
 *     continue-as-new and history-size limits are raised (`--dynamic-config-value`, through a
 *     wrapper around the CLI passed as `cliPath`) to time the replay of ONE 1,000-step history.
 *
 *  4. the single-run step latency (p50/p95) and where a step goes (bench/fleet-profile.ts: the
 *     history's timestamps split into activity dispatch/run and workflow-task dispatch/run), on
 *     a stock dev server and on one with fast dispatch (`history.transferProcessorMaxPollRPS`
 *     raised, scripts/chaos/temporal.ts): the stock one-shard dev server reads its transfer
 *     queue at most 20 times a second, so every workflow task waits ~25 ms before dispatch.
 *     The concurrency rows run on the fast-dispatch server unless `--dispatch stock`.
 *  5. 1 vs 3 worker PROCESSES sharing one PostgreSQL ledger (bench/fleet.ts): live write runs,
 *     every step a real ledger write; needs the PostgreSQL server binaries (else skipped).
 *  6. `--inflight N` (bench/inflight.ts): N short live runs in flight at once on 3
 *     worker processes sharing one PostgreSQL ledger, guard on/off as `--reps` interleaved A/B
 *     repetitions (each pair's ratio and the spread), steps/s, completion time and the
 *     workers' RSS per cached workflow. Given alone it runs only this row.
 *
 * The latency rows compare the scripted plan paths (`--plan-path prefetch,local,activity`:
 * the next turn planned by the tool activity before it, the plan as a local activity every
 * turn, and the scheduled activity as it once was), in the same server and worker process;
 * every other row runs the first path given.
 *
 * Flags: --steps N  --concurrency 1,100,1000|none  --max-row-steps N  --replay-steps N (0 skips)
 *        --dispatch fast|stock  --plan-path prefetch,local,activity  --latency-servers stock,fast|none
 *        --fleet 1,3 (0 skips)  --fleet-runs N  --fleet-writes N
 *        --inflight N  --reps K  --inflight-writes N  --max-cached N  --history-cache N
 *        --single-history  --json (one JSON object on stdout instead of the table)
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Client,
  Connection,
  type WorkflowHandle,
  type WorkflowHandleWithFirstExecutionRunId,
} from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { quietWorkflowBundle } from '../scripts/workflow-bundle';
import { runBench } from './bench-worker';
import { dataConverterOf, loadPayloadCodec } from '../codec';
import type { RunInput, RunResult } from '../common/contracts';
import { findPostgresBin } from '../scripts/chaos/postgres';
import { cliWithDynamicConfig, FAST_DISPATCH_DYNAMIC_CONFIG } from '../scripts/chaos/temporal';
import { startThrowawayDevServer, type DevServerHandle } from '../devserver/dev-server';
import { ensureTemporalCli } from '../devserver/temporal-cli';
import { createAgentWorker, type WorkerDeps } from '../worker/create-worker';
import type { agentRun } from '../workflows';
import { fleetRows, type FleetRow } from './fleet';
import { inflightRows, type InflightResult } from './inflight';
import { stepBreakdown, type StepBreakdown } from './fleet-profile';
import { openDemoWorkerDeps } from '../demo/deps';
import { agentRunResult } from '../client/runs';

type History = temporal.api.history.v1.IHistory;

// ---------------------------------------------------------------- flags
interface Options {
  steps: number;
  concurrency: number[];
  /** Cap on steps per measurement: a row runs min(steps, maxRowSteps / concurrency) steps per run. */
  maxRowSteps: number;
  replaySteps: number;
  singleHistory: boolean;
  json: boolean;
  dispatch: 'fast' | 'stock';
  fleet: number[];
  fleetRuns: number;
  fleetWrites: number;
  /** The scripted plan paths the latency rows compare (the first also runs every other row). */
  planPaths: PlanPath[];
  /** The dev servers of the latency rows. */
  latencyServers: ('stock' | 'fast')[];
  /** Runs in flight at once on 3 worker processes (0: no such row). */
  inflight: number;
  /** Interleaved guard on/off repetitions of the in-flight row. */
  reps: number;
  /** Live writes per in-flight run. */
  inflightWrites: number;
  /** Each in-flight worker's workflow cache cap. */
  maxCached: number;
  /** The in-flight row's dev server `history.cacheMaxSize` (0: the server's default, 512 per shard). */
  historyCache: number;
}

/** How a scripted run's plan runs (RunInput.scriptedPlan): the baseline is `activity`. */
type PlanPath = 'prefetch' | 'local' | 'activity';

/**
 * `npm run bench` runs every bench in a row and must stay within ~5 minutes on 2 busy cores:
 * there (npm sets `npm_lifecycle_event`) this bench defaults to its quick profile — the 1 and
 * 100 run rows, a 300-step long run, no fleet rows. `npm run bench:run` runs everything (the
 * 1,000-run row and the 1 vs 3 worker fleet; ~5 min idle, ~10 min on loaded cores). Flags
 * override either profile.
 */
const QUICK_PROFILE = process.env.npm_lifecycle_event === 'bench';

function parseArgs(argv: string[]): Options {
  const o: Options = {
    steps: 50,
    concurrency: QUICK_PROFILE ? [1, 100] : [1, 100, 1000],
    maxRowSteps: QUICK_PROFILE ? 1000 : 2000,
    replaySteps: QUICK_PROFILE ? 300 : 1000,
    singleHistory: false,
    json: false,
    dispatch: 'fast',
    fleet: QUICK_PROFILE ? [] : [1, 3],
    fleetRuns: 100,
    fleetWrites: 5,
    planPaths: ['prefetch', 'local', 'activity'],
    latencyServers: ['stock', 'fast'],
    inflight: 0,
    reps: 3,
    inflightWrites: 3,
    maxCached: 2000,
    historyCache: 0,
  };
  const given = new Set<string>();
  const int = (name: string, v: string | undefined, min: number): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) throw new Error(`${name}: expected an integer >= ${min}, got ${v}`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const [flag, inline] = a.includes('=')
      ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)]
      : [a, undefined];
    const value = (): string | undefined => inline ?? argv[++i];
    given.add(flag);
    switch (flag) {
      case '--steps':
        o.steps = int(flag, value(), 1);
        break;
      case '--concurrency': {
        const v = value() ?? '';
        o.concurrency = v === 'none' ? [] : v.split(',').map((s) => int(flag, s.trim(), 1));
        break;
      }
      case '--plan-path':
        o.planPaths = (value() ?? '').split(',').map((v) => {
          if (v !== 'prefetch' && v !== 'local' && v !== 'activity')
            throw new Error(`--plan-path: expected prefetch, local or activity, got ${v}`);
          return v;
        });
        break;
      case '--latency-servers': {
        const v = value() ?? '';
        o.latencyServers =
          v === 'none'
            ? []
            : v.split(',').map((x) => {
                if (x !== 'fast' && x !== 'stock')
                  throw new Error(`--latency-servers: expected stock, fast or none, got ${x}`);
                return x;
              });
        break;
      }
      case '--replay-steps':
        o.replaySteps = int(flag, value(), 0);
        break;
      case '--max-row-steps':
        o.maxRowSteps = int(flag, value(), 1);
        break;
      case '--single-history':
        o.singleHistory = true;
        break;
      case '--json':
        o.json = true;
        break;
      case '--dispatch': {
        const v = value();
        if (v !== 'fast' && v !== 'stock') throw new Error(`--dispatch: expected fast or stock, got ${v}`);
        o.dispatch = v;
        break;
      }
      case '--fleet':
        o.fleet = (value() ?? '')
          .split(',')
          .map((x) => int(flag, x.trim(), 0))
          .filter((n) => n > 0);
        break;
      case '--fleet-runs':
        o.fleetRuns = int(flag, value(), 1);
        break;
      case '--fleet-writes':
        o.fleetWrites = int(flag, value(), 1);
        break;
      case '--inflight':
        o.inflight = int(flag, value(), 1);
        break;
      case '--reps':
        o.reps = int(flag, value(), 1);
        break;
      case '--inflight-writes':
        o.inflightWrites = int(flag, value(), 1);
        break;
      case '--max-cached':
        o.maxCached = int(flag, value(), 1);
        break;
      case '--history-cache':
        o.historyCache = int(flag, value(), 0);
        break;
      case '-h':
      case '--help':
        process.stdout.write(
          'usage: tsx bench/run.ts [--steps 50] [--concurrency 1,100,1000|none] [--max-row-steps 2000] [--replay-steps 1000] [--dispatch fast|stock] [--plan-path prefetch,local,activity] [--latency-servers stock,fast|none] [--fleet 1,3] [--fleet-runs 100] [--fleet-writes 5] [--inflight N [--reps 3] [--inflight-writes 3] [--max-cached 2000] [--history-cache 0]] [--single-history] [--json]\n',
        );
        process.exit(0);
        break;
      default:
        throw new Error(`unknown flag ${a} (try --help)`);
    }
  }
  if (o.inflight > 0) {
    // `--inflight N` alone runs only the in-flight row; other rows run when asked for.
    if (!given.has('--latency-servers')) o.latencyServers = [];
    if (!given.has('--concurrency')) o.concurrency = [];
    if (!given.has('--replay-steps')) o.replaySteps = 0;
    if (!given.has('--fleet')) o.fleet = [];
  }
  return o;
}

// ---------------------------------------------------------------- runs
/** N distinct calls, each making progress, then a terminal call. */
function script(steps: number): unknown {
  const calls: unknown[] = [];
  for (let i = 1; i <= steps; i++) calls.push({ tool: 'search', args: { q: i }, progressVersion: i });
  calls.push({
    tool: 'summarise',
    args: {},
    result: { kind: 'SUCCESS', terminal: true },
    progressVersion: steps + 1,
  });
  return { name: `bench-${steps}`, calls };
}

function runInput(steps: number, guardEnabled: boolean, scriptedPlan: PlanPath): RunInput {
  return {
    goal: `bench: ${steps} steps, guard ${guardEnabled ? 'on' : 'off'}, ${scriptedPlan} plan`,
    planner: { kind: 'scripted', script: script(steps) },
    guard: { maxSteps: steps + 10, maxMs: 1e12 },
    guardEnabled,
    scriptedPlan,
    maxHistoryEvents: 10_000_000,
    resumeWindowMs: 1000,
  };
}

interface Stack {
  server: DevServerHandle;
  /** The payload codec shared by this stack's worker and client (replays read with it too). */
  dataConverter: DataConverter;
  client: Client;
  connection: Connection;
  native: NativeConnection;
  worker: Worker;
  running: Promise<void>;
  deps: WorkerDeps;
  dir: string;
  taskQueue: string;
  close(): Promise<void>;
}

async function startStack(bundle: { code: string }, cliPath?: string): Promise<Stack> {
  const server = await startThrowawayDevServer({ ...(cliPath ? { cliPath } : {}) });
  const dir = mkdtempSync(join(tmpdir(), 'alg-bench-'));
  const dbUrl = `sqlite:${join(dir, 'agent.db')}`;
  const deps = await openDemoWorkerDeps({ ledgerUrl: dbUrl, worldUrl: dbUrl });
  const native = await NativeConnection.connect({ address: server.address });
  const connection = await Connection.connect({ address: server.address });
  // Payloads are encrypted (the default policy): worker and client share one fresh key.
  const dataConverter = dataConverterOf(
    loadPayloadCodec({ AGENT_CODEC_KEYS: `k1:${randomBytes(32).toString('base64')}` }),
  );
  const client = new Client({ connection, namespace: server.namespace, dataConverter });
  const taskQueue = `bench-${randomUUID()}`;
  const worker = await createAgentWorker({
    dataConverter,
    connection: native,
    namespace: server.namespace,
    taskQueue,
    deps,
    workflowBundle: bundle,
  });
  const running = worker.run();
  return {
    server,
    dataConverter,
    client,
    connection,
    native,
    worker,
    running,
    deps,
    dir,
    taskQueue,
    async close() {
      worker.shutdown();
      await running.catch(() => undefined);
      await deps.close();
      await connection.close();
      await native.close();
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function startRun(
  s: Stack,
  input: RunInput,
  tag: string,
): Promise<WorkflowHandleWithFirstExecutionRunId<typeof agentRun>> {
  return s.client.workflow.start<typeof agentRun>('agentRun', {
    taskQueue: s.taskQueue,
    workflowId: `bench-${tag}-${randomUUID()}`,
    args: [input],
    staticSummary: input.goal,
  });
}

function checkCompleted(r: RunResult, steps: number): void {
  if (r.terminal_state !== 'COMPLETED' || r.executed !== steps + 1) {
    throw new Error(
      `bench run ${r.workflow_id} ended ${r.terminal_state} (${r.reason}) after ${r.executed} calls`,
    );
  }
}

interface ConcurrencyRow {
  concurrency: number;
  stepsPerRun: number;
  onStepsPerSec: number;
  offStepsPerSec: number;
  /** off / on: how many times slower the guarded run is (1.0 = no cost). */
  ratio: number;
  /** on / off throughput (the issue's target: >= 0.95). */
  onOverOff: number;
  onMs: number;
  offMs: number;
}

async function measure(
  s: Stack,
  concurrency: number,
  steps: number,
  guardEnabled: boolean,
  plan: PlanPath,
): Promise<{ ms: number; handles: WorkflowHandle<typeof agentRun>[] }> {
  const input = runInput(steps, guardEnabled, plan);
  const t0 = performance.now();
  const handles = await Promise.all(
    Array.from({ length: concurrency }, (_, i) =>
      startRun(s, input, `${guardEnabled ? 'on' : 'off'}-c${concurrency}-${i}`),
    ),
  );
  const results = await Promise.all(handles.map((h) => agentRunResult(h)));
  const ms = performance.now() - t0;
  for (const r of results) checkCompleted(r, steps);
  return { ms, handles };
}

// ---------------------------------------------------------------- history
interface HistoryStats {
  events: number;
  bytes: number;
  /** First event id of a WorkflowTaskStarted with suggestContinueAsNew, if any. */
  suggestedAtEvent: number | null;
  continuedAsNew: boolean;
  nextRunId: string | null;
}

function historyBytes(h: History): number {
  // The proto wire size, as the server counts it.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { temporal: t } = require('@temporalio/proto') as typeof import('@temporalio/proto');
  return t.api.history.v1.History.encode(h as temporal.api.history.v1.History).finish().length;
}

function historyStats(h: History): HistoryStats {
  const events = h.events ?? [];
  let suggestedAtEvent: number | null = null;
  let nextRunId: string | null = null;
  for (const e of events) {
    if (suggestedAtEvent === null && e.workflowTaskStartedEventAttributes?.suggestContinueAsNew) {
      suggestedAtEvent = Number(e.eventId);
    }
    const can = e.workflowExecutionContinuedAsNewEventAttributes;
    if (can) nextRunId = can.newExecutionRunId ?? null;
  }
  return {
    events: events.length,
    bytes: historyBytes(h),
    suggestedAtEvent,
    continuedAsNew: nextRunId !== null,
    nextRunId,
  };
}

/** Steps (completed runTool activities) recorded in one history. */
function toolSteps(h: History): number {
  let n = 0;
  for (const e of h.events ?? []) {
    if (e.activityTaskScheduledEventAttributes?.activityType?.name === 'runTool') n += 1;
  }
  return n;
}

interface LongRun {
  steps: number;
  runs: number;
  ms: number;
  stepsPerSec: number;
  events: number;
  bytes: number;
  eventsPerStep: number;
  /** Where the server first suggested continue-as-new (null = never). */
  suggestedAtEvent: number | null;
  suggestedAtStep: number | null;
  replayMs: number;
  replayedHistories: number;
}

async function longRun(s: Stack, bundle: { code: string }, steps: number, plan: PlanPath): Promise<LongRun> {
  const input = runInput(steps, true, plan);
  const t0 = performance.now();
  const handle = await startRun(s, input, `long-${steps}`);
  const r = await agentRunResult(handle);
  const ms = performance.now() - t0;
  checkCompleted(r, steps);

  // Follow the continue-as-new chain from the first run.
  const histories: { workflowId: string; history: History }[] = [];
  let runId: string | undefined = handle.firstExecutionRunId;
  let suggestedAtEvent: number | null = null;
  let suggestedAtStep: number | null = null;
  let events = 0;
  let bytes = 0;
  let stepsBefore = 0;
  while (runId) {
    const history = await s.client.workflow.getHandle(handle.workflowId, runId).fetchHistory();
    const st = historyStats(history);
    if (suggestedAtEvent === null && st.suggestedAtEvent !== null) {
      suggestedAtEvent = events + st.suggestedAtEvent;
      const upTo = {
        events: (history.events ?? []).filter((e) => Number(e.eventId) <= st.suggestedAtEvent!),
      };
      suggestedAtStep = stepsBefore + toolSteps(upTo);
    }
    events += st.events;
    bytes += st.bytes;
    stepsBefore += toolSteps(history);
    histories.push({ workflowId: handle.workflowId, history });
    runId = st.nextRunId ?? undefined;
  }

  async function* feed(): AsyncGenerator<{ workflowId: string; history: History }> {
    for (const h of histories) yield h;
  }
  const r0 = performance.now();
  let replayed = 0;
  for await (const res of Worker.runReplayHistories(
    { workflowBundle: bundle, replayName: 'bench', dataConverter: s.dataConverter },
    feed(),
  )) {
    if (res.error) throw new Error(`replay of ${res.workflowId} failed: ${String(res.error)}`);
    replayed += 1;
  }
  const replayMs = performance.now() - r0;
  return {
    steps,
    runs: histories.length,
    ms,
    stepsPerSec: (steps + 1) / (ms / 1000),
    events,
    bytes,
    eventsPerStep: events / (steps + 1),
    suggestedAtEvent,
    suggestedAtStep,
    replayMs,
    replayedHistories: replayed,
  };
}

/** A CLI wrapper that raises the server's continue-as-new suggestion and history limits. */
async function raisedLimitsCli(dir: string): Promise<string> {
  const real = await ensureTemporalCli({ quiet: true });
  const values = [
    'limit.historyCount.suggestContinueAsNew=1000000',
    'limit.historySize.suggestContinueAsNew=1073741824',
    'limit.historyCount.warn=1000000',
    'limit.historyCount.error=2000000',
    'limit.historySize.warn=1073741824',
    'limit.historySize.error=2147483648',
  ];
  const file = join(dir, 'temporal-raised-limits');
  writeFileSync(
    file,
    `#!/bin/sh\nexec ${JSON.stringify(real)} "$@" ${values.map((v) => `--dynamic-config-value ${v}`).join(' ')}\n`,
  );
  chmodSync(file, 0o755);
  return file;
}

// ---------------------------------------------------------------- single-run latency
/** The single-run step latency of one mode: the best (lowest p50) of `tries` runs, and its breakdown. */
async function singleRunProfile(
  s: Stack,
  steps: number,
  guardEnabled: boolean,
  plan: PlanPath,
  tries: number,
): Promise<StepBreakdown> {
  let best: StepBreakdown | null = null;
  for (let i = 0; i < tries; i++) {
    const { handles } = await measure(s, 1, steps, guardEnabled, plan);
    const b = stepBreakdown(await handles[0]!.fetchHistory());
    if (!best || b.p50Ms < best.p50Ms) best = b;
  }
  return best!;
}

/** One latency row: a plan path and a guard mode on one dev server. */
interface LatencyRow {
  readonly server: 'stock' | 'fast';
  readonly plan: PlanPath;
  readonly guard: 'on' | 'off';
  readonly b: StepBreakdown;
}

/**
 * Single-run latency of every plan path, guard on and off, on one fresh dev server started
 * with `cliPath` (the baseline path in the same server and worker process).
 */
async function latencyOn(
  bundle: { code: string },
  server: 'stock' | 'fast',
  cliPath: string | undefined,
  steps: number,
  plans: readonly PlanPath[],
): Promise<LatencyRow[]> {
  const s = await startStack(bundle, cliPath);
  try {
    for (const plan of plans) {
      await measure(s, 2, 10, true, plan); // warm-up
      await measure(s, 2, 10, false, plan);
    }
    const rows: LatencyRow[] = [];
    for (const guard of ['on', 'off'] as const) {
      for (const plan of plans) {
        rows.push({ server, plan, guard, b: await singleRunProfile(s, steps, guard === 'on', plan, 3) });
      }
    }
    return rows;
  } finally {
    await s.close();
  }
}

// ---------------------------------------------------------------- main
const fmt = (n: number, d = 0): string =>
  n.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  const log = (msg: string): void => {
    if (!o.json) process.stderr.write(`${msg}\n`);
  };
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const wall0 = performance.now();

  const bundle = await quietWorkflowBundle();

  const cliDir = mkdtempSync(join(tmpdir(), 'alg-bench-cli-'));
  const fastCli = await cliWithDynamicConfig(cliDir, FAST_DISPATCH_DYNAMIC_CONFIG);
  const plan = o.planPaths[0]!;
  const latency: LatencyRow[] = [];
  for (const server of o.latencyServers) {
    log(
      `single-run step latency: ${server} dev server, plan ${o.planPaths.join(' vs ')} (best of 3 runs each)…`,
    );
    latency.push(
      ...(await latencyOn(bundle, server, server === 'fast' ? fastCli : undefined, o.steps, o.planPaths)),
    );
  }

  const rows: ConcurrencyRow[] = [];
  const perStep: Record<'on' | 'off', { events: number; bytes: number }> = {
    on: { events: 0, bytes: 0 },
    off: { events: 0, bytes: 0 },
  };
  let long: LongRun | null = null;
  let single: LongRun | null = null;
  if (o.concurrency.length > 0 || o.replaySteps > 0) {
    log(`starting an in-memory dev server (${o.dispatch} dispatch) + worker…`);
    const s = await startStack(bundle, o.dispatch === 'fast' ? fastCli : undefined);
    try {
      // Warm-up: JIT, workflow cache, SQLite pages. Not counted.
      await measure(s, 2, 10, true, plan);
      await measure(s, 2, 10, false, plan);

      for (const [i, c] of o.concurrency.entries()) {
        const steps = Math.max(1, Math.min(o.steps, Math.floor(o.maxRowSteps / c)));
        // Alternate the order so neither mode always runs first (on a fresher server).
        let on, off;
        if (i % 2 === 0) {
          on = await measure(s, c, steps, true, plan);
          off = await measure(s, c, steps, false, plan);
        } else {
          off = await measure(s, c, steps, false, plan);
          on = await measure(s, c, steps, true, plan);
        }
        const total = c * (steps + 1);
        const row: ConcurrencyRow = {
          concurrency: c,
          stepsPerRun: steps + 1,
          onStepsPerSec: total / (on.ms / 1000),
          offStepsPerSec: total / (off.ms / 1000),
          ratio: 0,
          onOverOff: 0,
          onMs: on.ms,
          offMs: off.ms,
        };
        row.ratio = row.offStepsPerSec / row.onStepsPerSec;
        row.onOverOff = row.onStepsPerSec / row.offStepsPerSec;
        rows.push(row);
        log(
          `  concurrency ${c}: on ${fmt(row.onStepsPerSec)} steps/s, off ${fmt(row.offStepsPerSec)} steps/s`,
        );
        if (c === o.concurrency[0]) {
          for (const [mode, h] of [
            ['on', on.handles[0]!],
            ['off', off.handles[0]!],
          ] as const) {
            const hist = await h.fetchHistory();
            perStep[mode] = {
              events: (hist.events ?? []).length / (steps + 1),
              bytes: historyBytes(hist) / (steps + 1),
            };
          }
        }
      }

      if (o.replaySteps > 0) {
        log(`long run: ${o.replaySteps} steps on the stock dev server…`);
        long = await longRun(s, bundle, o.replaySteps, plan);
      }
    } finally {
      await s.close();
    }
  }

  if (long && long.runs > 1 && o.singleHistory) {
    log(
      `the stock server split it into ${long.runs} runs; again with raised limits for one ${o.replaySteps}-step history…`,
    );
    const dir = mkdtempSync(join(tmpdir(), 'alg-bench-cli-'));
    try {
      const s2 = await startStack(bundle, await raisedLimitsCli(dir));
      try {
        single = await longRun(s2, bundle, o.replaySteps, plan);
      } finally {
        await s2.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  let fleet: FleetRow[] | null = null;
  let fleetSkipped: string | null = null;
  if (o.fleet.length > 0 && findPostgresBin() === null) {
    fleetSkipped = 'no PostgreSQL server binaries (initdb) on this machine';
  } else if (o.fleet.length > 0) {
    log(
      `fleet: ${o.fleetRuns} live write runs x ${o.fleetWrites} writes on ${o.fleet.join(' vs ')} worker processes, one PostgreSQL ledger…`,
    );
    fleet = await fleetRows(bundle.code, o.fleet, o.fleetRuns, o.fleetWrites, log);
  }
  let inflight: InflightResult | null = null;
  if (o.inflight > 0 && findPostgresBin() === null) {
    fleetSkipped = 'no PostgreSQL server binaries (initdb) on this machine';
  } else if (o.inflight > 0) {
    log(
      `in flight: ${o.inflight} live runs x ${o.inflightWrites} writes on 3 worker processes, one PostgreSQL ledger, ${plan} plan, dev server history cache ${o.historyCache || 'default (512)'}, guard on/off x ${o.reps} interleaved…`,
    );
    inflight = await inflightRows(
      bundle.code,
      {
        runs: o.inflight,
        reps: o.reps,
        writes: o.inflightWrites,
        workers: 3,
        startConcurrency: 100,
        cliPath: fastCli,
        plan,
        maxCached: o.maxCached,
        historyCache: o.historyCache,
      },
      log,
    );
  }
  rmSync(cliDir, { recursive: true, force: true });
  const totalMs = performance.now() - wall0;

  if (o.json) {
    process.stdout.write(
      `${JSON.stringify({ dispatch: o.dispatch, latency, concurrency: rows, historyPerStep: perStep, fleet, fleetSkipped, inflight, longRun: long, singleHistory: single, totalMs })}\n`,
    );
    return;
  }

  const out: string[] = [];
  if (latency.length > 0) {
    out.push(
      '',
      `Single-run step latency (one run, ${o.steps + 1} steps, best p50 of 3 runs; ms; from the history's timestamps; step = runTool scheduled → next runTool scheduled; p50 ratio = this row / the \`activity\` plan row of the same server and guard, measured in the same process)`,
      '',
      '| dev server | plan | guard | p50 | p95 | mean | p50 ratio | plan dispatch | plan run | tool dispatch | tool run | workflow tasks/step | their dispatch | their run |',
      '|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    );
    for (const r of latency) {
      const { b } = r;
      const base = latency.find((x) => x.server === r.server && x.guard === r.guard && x.plan === 'activity');
      const ratio = base ? fmt(b.p50Ms / base.b.p50Ms, 2) : '–';
      out.push(
        `| ${r.server} | ${r.plan} | ${r.guard} | ${fmt(b.p50Ms, 1)} | ${fmt(b.p95Ms, 1)} | ${fmt(b.meanMs, 1)} | ${ratio} | ${fmt(b.planDispatchMs, 1)} | ${fmt(b.planRunMs, 1)} | ${fmt(b.toolDispatchMs, 1)} | ${fmt(b.toolRunMs, 1)} | ${fmt(b.workflowTasksPerStep, 1)} | ${fmt(b.workflowTaskDispatchMs, 1)} | ${fmt(b.workflowTaskRunMs, 1)} |`,
      );
    }
  }
  if (rows.length > 0) {
    out.push(
      '',
      `Durable run throughput (fixture-mode scripted runs, one worker, ${o.dispatch} dispatch; step = one tool call = plan + runTool activity + guard)`,
      '',
    );
    out.push(
      '| concurrent runs | steps/run | guard on steps/s | guard off steps/s | on/off | on wall | off wall |',
    );
    out.push('|---:|---:|---:|---:|---:|---:|---:|');
    for (const r of rows) {
      out.push(
        `| ${r.concurrency} | ${r.stepsPerRun} | ${fmt(r.onStepsPerSec, 1)} | ${fmt(r.offStepsPerSec, 1)} | ${fmt(r.onOverOff, 2)} | ${fmt(r.onMs)} ms | ${fmt(r.offMs)} ms |`,
      );
    }
    out.push('');
    out.push(
      `History per step (one run of the first row): guard on ${fmt(perStep.on.events, 2)} events (${fmt(perStep.on.bytes)} B), guard off ${fmt(perStep.off.events, 2)} events (${fmt(perStep.off.bytes)} B); the guard adds ${fmt(perStep.on.events - perStep.off.events, 2)} events per step`,
    );
  }
  if (fleet) {
    out.push(
      '',
      `Fleet: worker processes sharing one PostgreSQL ledger (live write runs; every step a ledger claim/dispatch/commit + one side-effect row; fast dispatch)`,
      '',
      '| worker processes | runs | steps/run | steps/s | wall | side effects | ledger SUCCEEDED |',
      '|---:|---:|---:|---:|---:|---:|---:|',
    );
    for (const f of fleet) {
      out.push(
        `| ${f.workers} | ${f.runs} | ${f.stepsPerRun} | ${fmt(f.stepsPerSec, 1)} | ${fmt(f.ms)} ms | ${f.effects} | ${f.succeeded} |`,
      );
    }
  } else if (fleetSkipped) {
    out.push('', `Fleet rows skipped: ${fleetSkipped}`);
  }
  if (inflight) {
    const i = inflight;
    out.push(
      '',
      `Runs in flight: ${i.runs} live runs x ${i.stepsPerRun} ledger writes started at once on ${i.workers} worker processes, one PostgreSQL ledger, fast dispatch; guard on/off as ${i.reps.length} interleaved A/B repetitions`,
      '',
      '| rep | on steps/s | off steps/s | on/off | on completion | off completion | on: all started after | peak cached workflows (on / off) |',
      '|---:|---:|---:|---:|---:|---:|---:|---:|',
    );
    for (const [k, r] of i.reps.entries()) {
      out.push(
        `| ${k + 1} | ${fmt(r.on.stepsPerSec, 1)} | ${fmt(r.off.stepsPerSec, 1)} | ${fmt(r.ratio, 3)} | ${fmt(r.on.ms / 1000, 1)} s | ${fmt(r.off.ms / 1000, 1)} s | ${fmt(r.on.startMs / 1000, 1)} s | ${r.on.peakCached} / ${r.off.peakCached} |`,
      );
    }
    out.push(
      '',
      `on/off spread: min ${fmt(i.ratio.min, 3)}, median ${fmt(i.ratio.median, 3)}, max ${fmt(i.ratio.max, 3)} (target >= 0.95)`,
      `worker RSS per cached workflow: ${fmt(i.rssPerCachedWorkflow / 1024, 1)} KB ((peak RSS - RSS before) / peak cached workflows, 3 workers summed; idle RSS ${fmt(i.idleRss / 1e6)} MB)`,
    );
  }
  const describe = (label: string, l: LongRun): void => {
    out.push('');
    out.push(
      `${label}: ${l.steps + 1} steps in ${fmt(l.ms)} ms (${fmt(l.stepsPerSec, 1)} steps/s), ${l.runs} run(s), ${fmt(l.events)} events, ${fmt(l.bytes / 1e6, 1)} MB, ${fmt(l.eventsPerStep, 1)} events/step`,
    );
    out.push(
      l.suggestedAtEvent === null
        ? '  server never suggested continue-as-new'
        : `  continueAsNewSuggested first at event ${fmt(l.suggestedAtEvent)} (step ${l.suggestedAtStep}) -> the workflow continued-as-new`,
    );
    out.push(
      `  replay (Worker.runReplayHistories, ${l.replayedHistories} histor${l.replayedHistories === 1 ? 'y' : 'ies'}): ${fmt(l.replayMs)} ms`,
    );
  };
  if (long) describe('Long run, stock dev server', long);
  if (single)
    describe('Long run, raised suggest-continue-as-new / history-size limits (one history)', single);
  out.push('', `total bench time ${fmt(totalMs / 1000, 1)} s`, '');
  process.stdout.write(out.join('\n'));
}

runBench('bench:run', main);
