/**
 * `npm run bench:run`: throughput and history cost of the durable run (issue 3 item 12).
 *
 * Everything is in-process and throwaway: the bench starts its own in-memory Temporal dev
 * server (`startDevServer({ port: 0, dbFile: null, headless: true })`), one worker with the
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
 * Flags: --steps N  --concurrency 1,10,100  --max-row-steps N  --replay-steps N (0 skips)
 *        --single-history  --json (one JSON object on stdout instead of the table)
 */
import { randomUUID } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Client,
  Connection,
  type WorkflowHandle,
  type WorkflowHandleWithFirstExecutionRunId,
} from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import type { RunInput, RunResult } from '../common/contracts';
import { startDevServer, type DevServerHandle } from '../scripts/dev-server';
import { ensureTemporalCli } from '../scripts/temporal-cli';
import { createAgentWorker, openWorkerDeps, WORKFLOWS_PATH, type WorkerDeps } from '../worker/create-worker';
import type { agentRun } from '../workflows';

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
}

function parseArgs(argv: string[]): Options {
  const o: Options = {
    steps: 50,
    concurrency: [1, 10, 100],
    maxRowSteps: 1000,
    replaySteps: 1000,
    singleHistory: false,
    json: false,
  };
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
    switch (flag) {
      case '--steps':
        o.steps = int(flag, value(), 1);
        break;
      case '--concurrency':
        o.concurrency = (value() ?? '').split(',').map((s) => int(flag, s.trim(), 1));
        break;
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
      case '-h':
      case '--help':
        process.stdout.write(
          'usage: tsx bench/run.ts [--steps 50] [--concurrency 1,10,100] [--max-row-steps 1000] [--replay-steps 1000] [--single-history] [--json]\n',
        );
        process.exit(0);
        break;
      default:
        throw new Error(`unknown flag ${a} (try --help)`);
    }
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

function runInput(steps: number, guardEnabled: boolean): RunInput {
  return {
    goal: `bench: ${steps} steps, guard ${guardEnabled ? 'on' : 'off'}`,
    planner: { kind: 'scripted', script: script(steps) },
    guard: { maxSteps: steps + 10, maxMs: 1e12 },
    guardEnabled,
    maxHistoryEvents: 10_000_000,
    resumeWindowMs: 1000,
  };
}

interface Stack {
  server: DevServerHandle;
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
  const server = await startDevServer({
    ip: '127.0.0.1',
    port: 0,
    dbFile: null,
    headless: true,
    quiet: true,
    logLevel: 'error',
    ...(cliPath ? { cliPath } : {}),
  });
  const dir = mkdtempSync(join(tmpdir(), 'alg-bench-'));
  const dbUrl = `sqlite:${join(dir, 'agent.db')}`;
  const deps = await openWorkerDeps({ ledgerUrl: dbUrl, worldUrl: dbUrl });
  const native = await NativeConnection.connect({ address: server.address });
  const connection = await Connection.connect({ address: server.address });
  const client = new Client({ connection, namespace: server.namespace });
  const taskQueue = `bench-${randomUUID()}`;
  const worker = await createAgentWorker({
    connection: native,
    namespace: server.namespace,
    taskQueue,
    deps,
    workflowBundle: bundle,
  });
  const running = worker.run();
  return {
    server,
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
  onMs: number;
  offMs: number;
}

async function measure(
  s: Stack,
  concurrency: number,
  steps: number,
  guardEnabled: boolean,
): Promise<{ ms: number; handles: WorkflowHandle<typeof agentRun>[] }> {
  const input = runInput(steps, guardEnabled);
  const t0 = performance.now();
  const handles = await Promise.all(
    Array.from({ length: concurrency }, (_, i) =>
      startRun(s, input, `${guardEnabled ? 'on' : 'off'}-c${concurrency}-${i}`),
    ),
  );
  const results = await Promise.all(handles.map((h) => h.result()));
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

async function longRun(s: Stack, bundle: { code: string }, steps: number): Promise<LongRun> {
  const input = runInput(steps, true);
  const t0 = performance.now();
  const handle = await startRun(s, input, `long-${steps}`);
  const r = await handle.result();
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
    { workflowBundle: bundle, replayName: 'bench' },
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

  const noop = (): void => undefined;
  const bundle = await bundleWorkflowCode({
    workflowsPath: WORKFLOWS_PATH,
    logger: { trace: noop, debug: noop, info: noop, warn: noop, error: console.error, log: noop },
  });

  log('starting an in-memory dev server + worker…');
  const s = await startStack(bundle);
  const rows: ConcurrencyRow[] = [];
  const perStep: Record<'on' | 'off', { events: number; bytes: number }> = {
    on: { events: 0, bytes: 0 },
    off: { events: 0, bytes: 0 },
  };
  let long: LongRun | null = null;
  let single: LongRun | null = null;
  try {
    // Warm-up: JIT, workflow cache, SQLite pages. Not counted.
    await measure(s, 2, 10, true);
    await measure(s, 2, 10, false);

    for (const [i, c] of o.concurrency.entries()) {
      const steps = Math.max(1, Math.min(o.steps, Math.floor(o.maxRowSteps / c)));
      // Alternate the order so neither mode always runs first (on a fresher server).
      let on, off;
      if (i % 2 === 0) {
        on = await measure(s, c, steps, true);
        off = await measure(s, c, steps, false);
      } else {
        off = await measure(s, c, steps, false);
        on = await measure(s, c, steps, true);
      }
      const total = c * (steps + 1);
      const row: ConcurrencyRow = {
        concurrency: c,
        stepsPerRun: steps + 1,
        onStepsPerSec: total / (on.ms / 1000),
        offStepsPerSec: total / (off.ms / 1000),
        ratio: 0,
        onMs: on.ms,
        offMs: off.ms,
      };
      row.ratio = row.offStepsPerSec / row.onStepsPerSec;
      rows.push(row);
      log(`  concurrency ${c}: on ${fmt(row.onStepsPerSec)} steps/s, off ${fmt(row.offStepsPerSec)} steps/s`);
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
      long = await longRun(s, bundle, o.replaySteps);
    }
  } finally {
    await s.close();
  }

  if (long && long.runs > 1 && o.singleHistory) {
    log(
      `the stock server split it into ${long.runs} runs; again with raised limits for one ${o.replaySteps}-step history…`,
    );
    const dir = mkdtempSync(join(tmpdir(), 'alg-bench-cli-'));
    try {
      const s2 = await startStack(bundle, await raisedLimitsCli(dir));
      try {
        single = await longRun(s2, bundle, o.replaySteps);
      } finally {
        await s2.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const totalMs = performance.now() - wall0;

  if (o.json) {
    process.stdout.write(
      `${JSON.stringify({ concurrency: rows, historyPerStep: perStep, longRun: long, singleHistory: single, totalMs })}\n`,
    );
    return;
  }

  const out: string[] = [];
  out.push(
    '',
    'Durable run throughput (fixture-mode scripted runs; step = one tool call = plan + runTool activity + guard)',
    '',
  );
  out.push(
    '| concurrent runs | steps/run | guard on steps/s | guard off steps/s | off/on | on wall | off wall |',
  );
  out.push('|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of rows) {
    out.push(
      `| ${r.concurrency} | ${r.stepsPerRun} | ${fmt(r.onStepsPerSec, 1)} | ${fmt(r.offStepsPerSec, 1)} | ${fmt(r.ratio, 2)}x | ${fmt(r.onMs)} ms | ${fmt(r.offMs)} ms |`,
    );
  }
  out.push('');
  out.push(
    `History per step (one run of the first row): guard on ${fmt(perStep.on.events, 1)} events (${fmt(perStep.on.bytes)} B), guard off ${fmt(perStep.off.events, 1)} events (${fmt(perStep.off.bytes)} B)`,
  );
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

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(
      `bench:run failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    process.exit(1);
  },
);
