/**
 * `npm run bench:floor`: how close a guarded step comes to the floor — the same
 * step in a bare Temporal program a careful user would write by hand.
 *
 * By default it measures the product as packed (bench/floor-packed.ts): the tarball built by
 * `npm run build` + `npm pack`, installed in an app, its guarded worker set up as
 * docs/using.md shows and a hand-written twin in the same app, each a separate `node` process;
 * each mode's CPU is its worker process's own. Modes there: bare, bare-once, read, write,
 * write-own (the write tool's own SQLite file), and by name bare-plain, bare-once-plain (the
 * hand-written worker without the codec, a third process). Flags of that measurement:
 * --package dist|source (the tarball, or the repository's sources through tsx), --no-build (reuse the app's installed
 * tarball), --baseline-codec on|off (the hand-written worker's payloads encrypted like the
 * guarded one's, or Temporal's default converter); --rounds, --steps, --fsync-steps, --modes,
 * --json as below (fsyncs counted on the worker process).
 *
 * `--in-repo` (implied by --in-place, --dump, --replay and --long) is the measurement below, in
 * this process, over the repository's TypeScript sources:
 *
 * One throwaway dev server (fast dispatch), one process hosting two workers: the product's
 * (the real workflow and activities, a SQLite ledger, the default progress source and tool
 * counters, payloads encrypted) and a bare one (bench/floor-workflow.ts: a loop of activity
 * calls, the same data converter). Modes, interleaved over `--rounds` rounds (the order
 * rotates each round), one run of `--steps` steps each:
 *  - `bare`: a plain activity call per step;
 *  - `bare-once`: the hand-written exactly-once write (bench/floor-activities.ts: claim the
 *    key, insert, store the result in ONE SQLite transaction);
 *  - `read`: a scripted live run of guarded reads (a tool that answers from its args);
 *  - `write`: a scripted live run of guarded writes whose tool shares the ledger's store
 *    (`atomicWithLedger`: the insert runs in the ledger's transaction);
 *  - `write-ext`: the same writes with an external effect (a table in another SQLite file,
 *    its own transaction: the ledger's claim before it and its commit after it);
 *  - `write-wait`: `write`, waited for with `waitForAgentRun` instead of `handle.result()`.
 * Printed per mode (medians over the rounds): ms/step (start to result), CPU/step
 * (this process: both workers and the client; the dev server is another process),
 * history events/step, history bytes/step, the tool activity's scheduled and completed event
 * bytes, CPU/step by thread (main, workflow, SDK core; from /proc on Linux), and fsyncs/step (`strace -c -f -p` attached to this process for one extra run per
 * mode, untimed: ptrace slows every syscall); then the ratios, each the median of the rounds'
 * paired ratios. Only the ratios are figures on a shared machine: the load is printed.
 *
 * Flags: --rounds N (4)  --steps N (300)  --fsync-steps N (100; 0 skips)
 *        --modes bare,bare-once,read,write,write-ext,write-wait  --json
 *        --long 300,2000,10000: after the rounds (--rounds 0 for only these), one `write` run
 *          per length: ms/step over the whole run, its first and last window (1,000 steps, or a
 *          quarter of a shorter run) from the history's timestamps across its continue-as-new
 *          chain, and the number of runs in the chain.
 *        --dump: one run of --steps steps per mode; prints its history's bytes by event type and
 *          its fourth step's events (bytes, decoded payloads), and stops: where the bytes go.
 *        --in-place: the main thread's CPU per step measured in the running workers,
 *          around the activity's function, the SDK's activity task, workflow activation, its trip
 *          to the workflow thread and its sink-call round trip, and the codec
 *          (bench/floor-in-place.ts): where the main thread's share of a step goes.
 *        --replay N: after the rounds, each mode's last measured history replayed N times in this
 *          process by one replay worker (`Worker.runReplayHistories`, the same bundles and converter;
 *          the worker's start and its first replay are not counted): the workflow
 *          side's CPU per step (the workflow code, the SDK's activation and promise bookkeeping,
 *          the payloads' decoding), without the server, the activities or the machine's load
 *          between rounds moving it — the figure to compare two trees' workflow code with.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { countFsyncs, enc, historyFigures, median } from './floor-common';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { z } from 'zod';
import { dataConverterOf, loadPayloadCodec } from '../codec';
import type { RunInput } from '../common/contracts';
import { waitForAgentRun } from '../client/api';
import { startThrowawayDevServer } from '../devserver/dev-server';
import { cliWithDynamicConfig, FAST_DISPATCH_DYNAMIC_CONFIG } from '../scripts/chaos/temporal';
import { quietWorkflowBundle } from '../scripts/workflow-bundle';
import { openSqlite } from '../storage/sqlite-driver';
import { defineTool } from '../tools/define-tool';
import { NO_STORE_TX, type ToolStore } from '../tools/store';
import { agentSinks, createAgentWorker, openWorkerDeps } from '../worker/create-worker';
import { runBench } from './bench-worker';
import { installInPlace } from './floor-in-place';
import { createFloorActivities } from './floor-activities';
import { appFlag, DEFAULT_PACKED_MODES, PACKED_MODES, packedFloor, type PackedMode } from './floor-packed';
import type { FloorRunInput } from './floor-workflow';
import { agentRunResult } from '../client/runs';

type History = temporal.api.history.v1.IHistory;

const MODES = ['bare', 'bare-once', 'read', 'write', 'write-ext', 'write-wait'] as const;
type Mode = (typeof MODES)[number];

interface Options {
  rounds: number;
  steps: number;
  fsyncSteps: number;
  modes: Mode[];
  json: boolean;
  /** Long write runs: one run per length, its per-step time over windows. */
  long: number[];
  /** Print one middle step's history events per mode, sizes and decoded payloads, and stop. */
  dump: boolean;
  /** Replays of each mode's last measured history (0: none): the workflow side's CPU per step. */
  replay: number;
  /** Main-thread CPU of the SDK's and our pieces, measured in place (bench/floor-in-place.ts). */
  inPlace: boolean;
  /** The in-process measurement over the repository's sources (this file) instead of the packed one. */
  inRepo: boolean;
  /** The packed measurement's options (bench/floor-packed.ts). */
  packageFrom: 'dist' | 'source';
  build: boolean;
  baselineCodec: boolean;
  /** --modes as given (checked against the measurement's own list). */
  modeList: string[] | null;
}

function parseArgs(argv: string[]): Options {
  const o: Options = {
    rounds: 4,
    steps: 300,
    fsyncSteps: 100,
    modes: [...MODES],
    json: false,
    long: [],
    dump: false,
    replay: 0,
    inPlace: false,
    inRepo: false,
    packageFrom: 'dist',
    build: true,
    baselineCodec: true,
    modeList: null,
  };
  const int = (name: string, v: string | undefined, min: number): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) throw new Error(`${name}: expected an integer >= ${min}, got ${v}`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const eq = a.indexOf('=');
    const [flag, inline] = eq > 0 ? [a.slice(0, eq), a.slice(eq + 1)] : [a, undefined];
    const value = (): string | undefined => inline ?? argv[++i];
    switch (flag) {
      case '--rounds':
        o.rounds = int(flag, value(), 0);
        break;
      case '--steps':
        o.steps = int(flag, value(), 2);
        break;
      case '--fsync-steps':
        o.fsyncSteps = int(flag, value(), 0);
        break;
      case '--modes':
        o.modeList = (value() ?? '').split(',');
        break;
      case '--in-repo':
        o.inRepo = true;
        break;
      case '--package':
      case '--no-build':
      case '--baseline-codec':
        appFlag(o, flag, value);
        break;
      case '--replay':
        o.replay = int(flag, value(), 0);
        break;
      case '--long':
        o.long = (value() ?? '').split(',').map((v) => int(flag, v.trim(), 10));
        break;
      case '--json':
        o.json = true;
        break;
      case '--dump':
        o.dump = true;
        break;
      case '--in-place':
        o.inPlace = true;
        break;
      default:
        throw new Error(`unknown flag ${a} (see the header of bench/floor.ts)`);
    }
  }
  // What only runs in this process: measured in the repository's sources.
  if (o.inPlace || o.dump || o.replay > 0 || o.long.length > 0) o.inRepo = true;
  const known: readonly string[] = o.inRepo ? MODES : PACKED_MODES;
  for (const m of o.modeList ?? [])
    if (!known.includes(m)) throw new Error(`--modes: expected some of ${known.join(',')}, got ${m}`);
  if (o.inRepo && o.modeList) o.modes = o.modeList as Mode[];
  return o;
}

/** One run's figures, per step. */
interface Sample {
  ms: number;
  cpuMs: number;
  /** CPU ms/step of the main thread, the workflow threads and the SDK core's threads (Linux). */
  mainMs: number;
  workflowMs: number;
  coreMs: number;
  events: number;
  bytes: number;
  /** The tool activity's ActivityTaskScheduled / ActivityTaskCompleted event, bytes (mean). */
  scheduledBytes: number;
  completedBytes: number;
}

type ThreadGroup = 'main' | 'workflow' | 'core';

/**
 * CPU ms so far of this process's threads by group, from /proc (Linux; zeros elsewhere): the
 * main thread (activities, codec, the SDK's JS), the workflow threads (Node worker threads,
 * named `node` on Node 22 and `WorkerThread` on Node 24, started after the SDK core's first
 * thread), the core's threads (`tokio-*`, `workflow-proces…`). V8's own threads (GC,
 * compilers: `node` before the core's on Node 22, `V8Worker` on 24) are in no column.
 */
function threadCpu(): Record<ThreadGroup, number> {
  const out: Record<ThreadGroup, number> = { main: 0, workflow: 0, core: 0 };
  let tids: number[];
  try {
    tids = readdirSync('/proc/self/task')
      .map(Number)
      .sort((a, b) => a - b);
  } catch {
    return out;
  }
  const tick = 1000 / 100; // USER_HZ
  let coreSeen = false;
  for (const tid of tids) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    } catch {
      continue;
    }
    const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ms = (Number(f[11]) + Number(f[12])) * tick;
    if (tid === process.pid) out.main += ms;
    else if (comm.startsWith('tokio') || comm.startsWith('workflow-proces')) {
      coreSeen = true;
      out.core += ms;
    } else if ((comm === 'node' || comm === 'WorkerThread') && coreSeen) out.workflow += ms;
  }
  return out;
}

/** One long run's figures. */
interface LongRow {
  steps: number;
  msPerStep: number;
  window: number;
  firstMsPerStep: number;
  lastMsPerStep: number;
  /** Executions in the continue-as-new chain. */
  runs: number;
  /** ms/step of the first window after each continue-as-new, against the run's mean. */
  afterContinueAsNew: number[];
}

/** The scheduled times (ms) of every `runTool` activity of a continue-as-new chain, in order. */
async function toolTimes(
  client: Client,
  workflowId: string,
  firstRunId: string,
): Promise<{ times: number[]; starts: number[] }> {
  const EventType = temporal.api.enums.v1.EventType;
  const times: number[] = [];
  const starts: number[] = [];
  let runId: string | null = firstRunId;
  while (runId) {
    const h: History = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    runId = null;
    starts.push(times.length);
    for (const e of h.events ?? []) {
      if (
        e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED &&
        e.activityTaskScheduledEventAttributes?.activityType?.name === 'runTool'
      ) {
        const t = e.eventTime;
        times.push(Number(t?.seconds ?? 0) * 1000 + Math.floor((t?.nanos ?? 0) / 1e6));
      }
      const next: string | null | undefined =
        e.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId;
      if (next) runId = next;
    }
  }
  return { times, starts };
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  if (!o.inRepo) {
    await packedFloor({
      rounds: o.rounds,
      steps: o.steps,
      fsyncSteps: o.fsyncSteps,
      modes: (o.modeList as PackedMode[] | null) ?? [...DEFAULT_PACKED_MODES],
      json: o.json,
      packageFrom: o.packageFrom,
      build: o.build,
      baselineCodec: o.baselineCodec,
    });
    return;
  }
  const log = (m: string) => process.stderr.write(`${m}\n`);
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const load0 = loadavg();
  const dir = mkdtempSync(join(tmpdir(), 'alg-bench-floor-'));
  const cliPath = await cliWithDynamicConfig(dir, FAST_DISPATCH_DYNAMIC_CONFIG);
  const server = await startThrowawayDevServer({ cliPath });
  const ledgerFile = join(dir, 'agent.db');
  const extFile = join(dir, 'external.db');
  const floor = createFloorActivities(join(dir, 'floor.db'));
  const ext = openSqlite(extFile);
  ext.exec('PRAGMA journal_mode = WAL');
  ext.exec('PRAGMA synchronous = FULL');
  ext.exec('CREATE TABLE floor_effects (key TEXT PRIMARY KEY, n INTEGER NOT NULL)');
  const extInsert = ext.prepare('INSERT INTO floor_effects (key, n) VALUES (?, ?)');

  const args = z
    .object({ tag: z.string().min(1), n: z.number().int().min(0), final: z.boolean().optional() })
    .strict();
  const tools = [
    defineTool({
      name: 'floor_read',
      description: 'bench: answers from its args',
      effect: 'read',
      usesWorldTransaction: false,
      schema: args,
      execute: (a) => ({ data: { n: a.n }, terminal: a.final === true }),
    }),
    defineTool({
      name: 'floor_write',
      description: "bench: one insert in the ledger's transaction",
      effect: 'write',
      atomicWithLedger: true,
      schema: args,
      operationKey: (a) => `floor:${a.tag}:${a.n}`,
      async execute(a, ctx) {
        await ctx.tx.run('INSERT INTO floor_effects (key, n) VALUES (?, ?)', [ctx.operationKey, a.n]);
        return { data: { n: a.n }, terminal: a.final === true };
      },
    }),
    defineTool({
      name: 'floor_write_ext',
      description: 'bench: one insert in another database (an external effect)',
      effect: 'write',
      usesWorldTransaction: false,
      schema: args,
      operationKey: (a) => `floor-ext:${a.tag}:${a.n}`,
      execute(a, ctx) {
        extInsert.run(ctx.operationKey, a.n);
        return { data: { n: a.n }, terminal: a.final === true };
      },
    }),
  ];
  // The tools' store is the ledger's file (floor_write runs in the ledger's own transaction).
  const store: ToolStore = { file: ledgerFile, tx: NO_STORE_TX, transaction: (fn) => fn(NO_STORE_TX) };
  const deps = await openWorkerDeps({ ledgerUrl: `sqlite:${ledgerFile}`, tools, store, configPath: null });
  {
    const db = openSqlite(ledgerFile);
    db.exec('CREATE TABLE IF NOT EXISTS floor_effects (key TEXT PRIMARY KEY, n INTEGER NOT NULL)');
    db.close();
  }
  const native = await NativeConnection.connect({ address: server.address });
  const connection = await Connection.connect({ address: server.address });
  const dataConverter = dataConverterOf(
    loadPayloadCodec({
      AGENT_CODEC_KEYS: `k1:${randomBytes(32).toString('base64')}`,
      // The codec's compression follows the environment (AGENT_CODEC_COMPRESS=off to compare).
      ...(process.env.AGENT_CODEC_COMPRESS ? { AGENT_CODEC_COMPRESS: process.env.AGENT_CODEC_COMPRESS } : {}),
    }),
  );
  // Installed before the workers exist; wraps the SDK's prototypes for this process.
  const inPlace = o.inPlace ? installInPlace() : null;
  const codec = dataConverter.payloadCodecs?.[0];
  if (inPlace && codec) inPlace.wrapCodec(codec);
  const measuredInterceptors = inPlace ? { activity: [inPlace.activityInterceptor] } : undefined;
  const client = new Client({ connection, namespace: 'default', dataConverter });
  const productQueue = `floor-product-${randomUUID()}`;
  const bareQueue = `floor-bare-${randomUUID()}`;
  log('bundling the workflows…');
  const noop = (): void => undefined;
  const [productBundle, bareBundle] = [
    // The product's worker has no telemetry: its bundle is the one createAgentWorker builds then.
    await quietWorkflowBundle({ telemetry: false }),
    await bundleWorkflowCode({
      workflowsPath: require.resolve('./floor-workflow'),
      logger: { trace: noop, debug: noop, info: noop, warn: noop, error: console.error, log: noop },
    }),
  ];
  const product = await createAgentWorker({
    dataConverter,
    connection: native,
    namespace: 'default',
    taskQueue: productQueue,
    deps,
    workflowBundle: productBundle,
    ...(measuredInterceptors ? { interceptors: measuredInterceptors } : {}),
  });
  const bare = await Worker.create({
    connection: native,
    namespace: 'default',
    taskQueue: bareQueue,
    dataConverter,
    workflowBundle: bareBundle,
    activities: { floorPlain: floor.floorPlain, floorOnce: floor.floorOnce },
    ...(measuredInterceptors ? { interceptors: measuredInterceptors } : {}),
  });
  const running = [product.run(), bare.run()];

  const productInput = (tool: string, tag: string, steps: number): RunInput => ({
    goal: `bench floor ${tag}`,
    planner: {
      kind: 'scripted',
      live: true,
      script: {
        calls: Array.from({ length: steps }, (_, n) => ({
          tool,
          args: { tag, n, ...(n === steps - 1 ? { final: true } : {}) },
        })),
      },
    },
    guard: { maxSteps: steps + 10, maxMs: 1e12, noProgressLimit: steps + 10 },
    resumeWindowMs: 1000,
  });

  /** Starts one run of `mode` and waits for it the way the mode says. */
  async function runOnce(mode: Mode, steps: number): Promise<WorkflowHandle> {
    const tag = randomUUID().slice(0, 8);
    const workflowId = `floor-${mode}-${tag}`;
    if (mode === 'bare' || mode === 'bare-once') {
      const input: FloorRunInput = { tag, steps, once: mode === 'bare-once' };
      const h = await client.workflow.start('floorRun', { taskQueue: bareQueue, workflowId, args: [input] });
      const last = await h.result();
      if (last !== steps - 1) throw new Error(`floor run ${workflowId} answered ${String(last)}`);
      return h;
    }
    const tool = mode === 'read' ? 'floor_read' : mode === 'write-ext' ? 'floor_write_ext' : 'floor_write';
    const h = await client.workflow.start('agentRun', {
      taskQueue: productQueue,
      workflowId,
      args: [productInput(tool, tag, steps)],
    });
    const r =
      mode === 'write-wait'
        ? (await waitForAgentRun(client, h, { untilWaiting: false, timeoutMs: 3_600_000 })).result
        : await agentRunResult(h);
    if (r?.terminal_state !== 'COMPLETED' || r.executed !== steps)
      throw new Error(`run ${workflowId} ended ${r?.terminal_state} ${r?.reason} after ${r?.executed} steps`);
    return h;
  }

  /** Each mode's last measured run, for --replay. */
  const lastRun = new Map<Mode, WorkflowHandle>();

  async function measure(mode: Mode, steps: number): Promise<Sample> {
    const th0 = threadCpu();
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    inPlace?.setMode(mode);
    const h = await runOnce(mode, steps).finally(() => inPlace?.setMode(null));
    inPlace?.addSteps(mode, steps);
    const ms = performance.now() - t0;
    lastRun.set(mode, h);
    const cpu = process.cpuUsage(cpu0);
    const th1 = threadCpu();
    const f = historyFigures(await h.fetchHistory());
    const per = (k: ThreadGroup): number => (th1[k] - th0[k]) / steps;
    return {
      ms: ms / steps,
      cpuMs: (cpu.user + cpu.system) / 1000 / steps,
      mainMs: per('main'),
      workflowMs: per('workflow'),
      coreMs: per('core'),
      events: f.events / steps,
      bytes: f.bytes / steps,
      scheduledBytes: f.scheduled,
      completedBytes: f.completed,
    };
  }

  async function longRun(steps: number): Promise<LongRow> {
    const tag = randomUUID().slice(0, 8);
    const workflowId = `floor-long-${tag}`;
    const t0 = performance.now();
    const h = await client.workflow.start('agentRun', {
      taskQueue: productQueue,
      workflowId,
      args: [productInput('floor_write', tag, steps)],
    });
    const r = await agentRunResult(h);
    const ms = performance.now() - t0;
    if (r.terminal_state !== 'COMPLETED' || r.executed !== steps)
      throw new Error(
        `long run ${workflowId} ended ${r.terminal_state} ${r.reason} after ${r.executed} steps`,
      );
    const { times, starts } = await toolTimes(client, workflowId, h.firstExecutionRunId);
    const window = Math.min(1000, Math.floor(steps / 4));
    const per = (from: number) => (times[from + window]! - times[from]!) / window;
    const mean = (times[times.length - 1]! - times[0]!) / (times.length - 1);
    return {
      steps,
      msPerStep: ms / steps,
      window,
      firstMsPerStep: per(0),
      lastMsPerStep: per(times.length - 1 - window),
      runs: starts.length,
      afterContinueAsNew: starts
        .slice(1)
        .filter((s) => s + 50 < times.length)
        .map((s) => (times[s + 50]! - times[s]!) / 50 / mean),
    };
  }

  /** `--replay`: CPU ms per step of replaying `mode`'s last measured history `n` times. */
  async function replayCpu(mode: Mode, n: number): Promise<number | null> {
    const h = lastRun.get(mode);
    if (!h) return null;
    const history = await h.fetchHistory();
    const EventType = temporal.api.enums.v1.EventType;
    const steps = (history.events ?? []).filter(
      (e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
    ).length;
    const floorMode = mode === 'bare' || mode === 'bare-once';
    const options = floorMode
      ? { workflowBundle: bareBundle, dataConverter }
      : { workflowBundle: productBundle, dataConverter, sinks: agentSinks() };
    // One replay worker for every replay (its start is not a workflow's cost); the first
    // replay warms it and is not counted.
    let cpu0 = process.cpuUsage();
    let replayed = 0;
    const copies = (function* () {
      for (let i = 0; i <= n; i++) yield { history, workflowId: `replay-${mode}-${i}` };
    })();
    for await (const r of Worker.runReplayHistories(options, copies)) {
      if (r.error) throw r.error;
      if (replayed++ === 0) cpu0 = process.cpuUsage();
    }
    const cpu = process.cpuUsage(cpu0);
    return (cpu.user + cpu.system) / 1000 / n / Math.max(1, steps);
  }

  /** `--dump`: one run of `mode`; bytes by event type, and its fourth step's events decoded. */
  async function dumpStep(mode: Mode): Promise<void> {
    const h = await runOnce(mode, Math.max(6, o.steps));
    const events = (await h.fetchHistory()).events ?? [];
    const EventType = temporal.api.enums.v1.EventType;
    const scheduled = events
      .map((e, i) => (e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED ? i : -1))
      .filter((i) => i >= 0);
    const [from, to] = [scheduled[3] ?? 0, scheduled[4] ?? events.length];
    const rest = new Map<string, { n: number; bytes: number }>();
    for (const e of events) {
      const type = EventType[e.eventType ?? 0] ?? String(e.eventType);
      const r = rest.get(type) ?? { n: 0, bytes: 0 };
      rest.set(type, { n: r.n + 1, bytes: r.bytes + enc(e) });
    }
    process.stdout.write(
      `\n## ${mode}: ${events.length} events, ${events.reduce((a, e) => a + enc(e), 0)} B; by type: ${[...rest].map(([t, r]) => `${t} ×${r.n} ${r.bytes} B`).join(', ')}\n`,
    );
    const codec = dataConverter.payloadCodecs?.[0];
    const decode = async (v: unknown): Promise<unknown> => {
      if (Array.isArray(v)) return Promise.all(v.map(decode));
      if (!v || typeof v !== 'object' || ArrayBuffer.isView(v)) return v;
      const o = v as Record<string, unknown>;
      if (o.data instanceof Uint8Array && o.metadata && typeof o.metadata === 'object') {
        const [p] = codec ? await codec.decode([o as never]) : [o as never];
        const bytes = (p as { data?: Uint8Array }).data ?? new Uint8Array();
        return `<${o.data.length} B> ${Buffer.from(bytes).toString('utf8')}`;
      }
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(o)) if (x !== null && x !== undefined) out[k] = await decode(x);
      return out;
    };
    process.stdout.write(`\n## ${mode}: events of step 4\n`);
    const last = events[events.length - 1];
    for (const e of [...events.slice(from, to), ...(last ? [last] : [])]) {
      const type = EventType[e.eventType ?? 0] ?? String(e.eventType);
      const body = Object.entries(e).find(([k, v]) => k.endsWith('Attributes') && v);
      const meta = e.userMetadata ? ` userMetadata=${JSON.stringify(await decode(e.userMetadata))}` : '';
      process.stdout.write(
        `${enc(e)} B ${type}${meta}\n  ${JSON.stringify(body ? await decode(body[1]) : {})}\n`,
      );
    }
  }

  const longRows: LongRow[] = [];
  const replayed = new Map<Mode, number | null>();
  const samples = new Map<Mode, Sample[]>(o.modes.map((m) => [m, []]));
  const fsyncs = new Map<Mode, number>();
  try {
    if (o.dump) {
      for (const m of o.modes) await dumpStep(m);
      return;
    }
    log(`warm-up (${o.modes.join(', ')}: 20 steps each)…`);
    for (const m of o.modes) await runOnce(m, 20);
    for (let r = 0; r < o.rounds; r++) {
      const order = o.modes.map((_, i) => o.modes[(i + r) % o.modes.length]!);
      for (const m of order) {
        const s = await measure(m, o.steps);
        samples.get(m)!.push(s);
        log(`round ${r + 1}/${o.rounds} ${m}: ${s.ms.toFixed(2)} ms/step, ${s.cpuMs.toFixed(2)} ms CPU/step`);
      }
    }
    for (const n of o.long) {
      const row = await longRun(n);
      longRows.push(row);
      log(
        `long ${n}: ${row.msPerStep.toFixed(2)} ms/step; first ${row.window} ${row.firstMsPerStep.toFixed(2)}, last ${row.window} ${row.lastMsPerStep.toFixed(2)} ms/step; ${row.runs} run(s)`,
      );
    }
    if (o.replay > 0) {
      for (const m of o.modes) {
        const cpu = await replayCpu(m, o.replay);
        replayed.set(m, cpu);
        if (cpu !== null) log(`replay ${m}: ${cpu.toFixed(2)} ms CPU/step`);
      }
    }
    if (o.fsyncSteps > 0 && o.rounds > 0) {
      for (const m of o.modes) {
        const n = await countFsyncs(dir, async () => {
          await runOnce(m, o.fsyncSteps);
        });
        fsyncs.set(m, n / o.fsyncSteps);
        log(`fsyncs ${m}: ${(n / o.fsyncSteps).toFixed(2)}/step`);
      }
    }
  } finally {
    product.shutdown();
    bare.shutdown();
    await Promise.allSettled(running);
    await deps.close();
    floor.close();
    ext.close();
    await connection.close();
    await native.close();
    await server.stop().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
  const load1 = loadavg();

  const med = (m: Mode, k: keyof Sample): number => median((samples.get(m) ?? []).map((s) => s[k]));
  /** Median over rounds of a/b paired by round. */
  const ratio = (a: Mode, b: Mode, k: keyof Sample): number | null => {
    const sa = samples.get(a);
    const sb = samples.get(b);
    if (!sa || !sb) return null;
    return median(sa.map((s, i) => s[k] / sb[i]![k]));
  };
  const replayRatio = (a: Mode, b: Mode): number | null => {
    const x = replayed.get(a);
    const y = replayed.get(b);
    return x != null && y != null ? x / y : null;
  };
  const rows = o.modes.map((m) => ({
    mode: m,
    msPerStep: med(m, 'ms'),
    cpuMsPerStep: med(m, 'cpuMs'),
    mainMsPerStep: med(m, 'mainMs'),
    workflowMsPerStep: med(m, 'workflowMs'),
    coreMsPerStep: med(m, 'coreMs'),
    eventsPerStep: med(m, 'events'),
    bytesPerStep: med(m, 'bytes'),
    scheduledBytes: med(m, 'scheduledBytes'),
    completedBytes: med(m, 'completedBytes'),
    fsyncsPerStep: fsyncs.get(m) ?? null,
    replayCpuMsPerStep: replayed.get(m) ?? null,
  }));
  const ratios = [
    {
      name: 'guarded write / hand-written exactly-once, wall',
      target: 1.2,
      value: ratio('write', 'bare-once', 'ms'),
    },
    {
      name: 'guarded write / hand-written exactly-once, CPU',
      target: 1.2,
      value: ratio('write', 'bare-once', 'cpuMs'),
    },
    { name: 'guarded read / bare call, wall', target: 1.2, value: ratio('read', 'bare', 'ms') },
    { name: 'guarded read / bare call, CPU', target: 1.2, value: ratio('read', 'bare', 'cpuMs') },
    {
      name: 'guarded write / hand-written exactly-once, workflow-thread CPU',
      target: null,
      value: ratio('write', 'bare-once', 'workflowMs'),
    },
    {
      name: 'guarded write / hand-written exactly-once, main-thread CPU',
      target: null,
      value: ratio('write', 'bare-once', 'mainMs'),
    },
    { name: 'history bytes/step, write / floor', target: 1.5, value: ratio('write', 'bare-once', 'bytes') },
    {
      name: 'external write / hand-written exactly-once, wall',
      target: null,
      value: ratio('write-ext', 'bare-once', 'ms'),
    },
    {
      name: 'waitForAgentRun / handle.result(), wall',
      target: 1.1,
      value: ratio('write-wait', 'write', 'ms'),
    },
    {
      name: 'workflow side replayed, write / hand-written exactly-once, CPU',
      target: null,
      value: replayRatio('write', 'bare-once'),
    },
    {
      name: 'workflow side replayed, read / bare call, CPU',
      target: null,
      value: replayRatio('read', 'bare'),
    },
  ].filter((r) => r.value !== null);
  const load = { start: load0.map((x) => +x.toFixed(2)), end: load1.map((x) => +x.toFixed(2)), cores: 2 };
  if (o.json) {
    process.stdout.write(`${JSON.stringify({ options: o, load, rows, ratios, long: longRows }, null, 2)}\n`);
    return;
  }
  const f = (x: number | null, d = 2) => (x === null || Number.isNaN(x) ? '–' : x.toFixed(d));
  const out: string[] = [];
  out.push(
    `bench:floor — ${o.rounds} interleaved rounds of ${o.steps} steps, fsyncs from one ${o.fsyncSteps}-step run per mode; load ${load.start.join('/')} → ${load.end.join('/')}`,
  );
  out.push('');
  out.push(
    '| mode       | ms/step | CPU ms/step | CPU main / workflow / core | events/step | bytes/step | tool scheduled B | tool completed B | fsyncs/step | replayed CPU ms/step |',
  );
  out.push(
    '| ---------- | ------: | ----------: | -------------------------: | ----------: | ---------: | ---------------: | ---------------: | ----------: | -------------------: |',
  );
  for (const r of rows) {
    out.push(
      `| ${r.mode.padEnd(10)} | ${f(r.msPerStep)} | ${f(r.cpuMsPerStep)} | ${f(r.mainMsPerStep)} / ${f(r.workflowMsPerStep)} / ${f(r.coreMsPerStep)} | ${f(r.eventsPerStep)} | ${f(r.bytesPerStep, 0)} | ${f(r.scheduledBytes, 0)} | ${f(r.completedBytes, 0)} | ${f(r.fsyncsPerStep)} | ${f(r.replayCpuMsPerStep)} |`,
    );
  }
  out.push('');
  out.push('| ratio (median of paired rounds) | value | target |');
  out.push('| ------------------------------- | ----: | -----: |');
  for (const r of ratios)
    out.push(`| ${r.name} | ${f(r.value)}× | ${r.target === null ? '–' : `≤ ${r.target}×`} |`);
  if (longRows.length > 0) {
    out.push('');
    out.push(
      '| long write run | ms/step | window | first window ms/step | last window ms/step | last/first | runs in the chain | first 50 steps after each continue-as-new / chain mean |',
    );
    out.push('| ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |');
    for (const l of longRows)
      out.push(
        `| ${l.steps} | ${f(l.msPerStep)} | ${l.window} | ${f(l.firstMsPerStep)} | ${f(l.lastMsPerStep)} | ${f(l.lastMsPerStep / l.firstMsPerStep)}× | ${l.runs} | ${l.afterContinueAsNew.map((x) => `${f(x)}×`).join(' ') || '–'} |`,
      );
  }
  if (inPlace) {
    out.push('');
    out.push(inPlace.table(o.modes));
  }
  process.stdout.write(`${out.join('\n')}\n`);
}

runBench('bench:floor', main);
