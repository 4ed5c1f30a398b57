/**
 * `npm run bench:fleet`: a fleet of guarded runs against its hand-written twin.
 *
 * `--runs` concurrent runs of `--steps` write steps on `--workers` worker processes per side,
 * one dev server (fast dispatch), one PostgreSQL server (a fresh database per side, dropped at
 * the end):
 *  - guarded: the packed package as an app sets it up (bench/floor-app/fleet-product-worker.ts:
 *    `openWorkerDeps` with the PostgreSQL ledger + `createAgentWorker`, codec on); each step a
 *    live scripted write whose tool inserts one row into the app's own table;
 *  - hand-written: a bare Temporal worker in the same app (bench/floor-app/fleet-bare-worker.ts:
 *    one activity per step, its idempotency record `INSERT … ON CONFLICT` on the operation key
 *    in the same transaction as the effect row), the same codec unless `--baseline-codec off`.
 * All four worker processes start (and bundle) before anything is measured; the sides run one
 * after the other, the order alternating over `--rounds`.
 *
 * Per side: steps/s (all runs' steps over the wall time from the first start to the last
 * result), step latency p50/p99 (from the histories: one step's activity scheduled → the next
 * step's, the last → the run's completion), the worker processes' CPU (process.cpuUsage deltas,
 * summed) and their peak summed RSS, scaled per 1,000 runs, PostgreSQL transactions per step
 * (pg_stat_database.xact_commit of the side's database, delta / steps, read once the counters
 * settle) and history bytes per step. Then the ratios guarded / hand-written, against the
 * targets (throughput ≥ 0.85×, p99 ≤ 1.3×).
 *
 * Flags: --runs N (1000)  --steps N (20)  --workers N (2)  --rounds N (1)
 *        --pg URL (PG_URL, else postgres://postgres@127.0.0.1:5432/test: where the databases are made)
 *        --package dist|source (dist)  --no-build  --baseline-codec on|off (on)  --json
 *        --ledger-pool N (the guarded workers' ledger `pool_max`; default the ledger's 10)
 *        --twin-pool N (the hand-written workers' pool; 10)
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { Pool } from 'pg';
import { dataConverterOf, loadPayloadCodec } from '../codec';
import type { RunInput, RunResult } from '../common/contracts';
import { agentRunResult } from '../client/runs';
import { startThrowawayDevServer } from '../devserver/dev-server';
import { cliWithDynamicConfig, FAST_DISPATCH_DYNAMIC_CONFIG } from '../scripts/chaos/temporal';
import { runBench } from './bench-worker';
import { enc } from './floor-common';
import { AppWorker, appFlag, prepareApp } from './floor-packed';
import { percentile } from './fleet-profile';
import type { FloorRunInput } from './floor-workflow';

type History = temporal.api.history.v1.IHistory;
type Side = 'guarded' | 'hand-written';

interface Options {
  runs: number;
  steps: number;
  workers: number;
  rounds: number;
  pg: string;
  packageFrom: 'dist' | 'source';
  build: boolean;
  baselineCodec: boolean;
  /** The guarded workers' ledger pool (`pool_max`; null: the ledger's default, 10). */
  ledgerPool: number | null;
  /** The hand-written workers' pool (10, as the ledger's default). */
  twinPool: number;
  json: boolean;
}

function parseArgs(argv: string[]): Options {
  const o: Options = {
    runs: 1000,
    steps: 20,
    workers: 2,
    rounds: 1,
    pg: process.env.PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
    packageFrom: 'dist',
    build: true,
    baselineCodec: true,
    ledgerPool: null,
    twinPool: 10,
    json: false,
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
      case '--runs':
        o.runs = int(flag, value(), 1);
        break;
      case '--steps':
        o.steps = int(flag, value(), 1);
        break;
      case '--workers':
        o.workers = int(flag, value(), 1);
        break;
      case '--rounds':
        o.rounds = int(flag, value(), 1);
        break;
      case '--pg':
        o.pg = value() ?? '';
        break;
      case '--package':
      case '--no-build':
      case '--baseline-codec':
        appFlag(o, flag, value);
        break;
      case '--ledger-pool':
        o.ledgerPool = int(flag, value(), 1);
        break;
      case '--twin-pool':
        o.twinPool = int(flag, value(), 1);
        break;
      case '--json':
        o.json = true;
        break;
      default:
        throw new Error(`unknown flag ${a} (see the header of bench/fleet-twin.ts)`);
    }
  }
  return o;
}

/** One side's figures in one round. */
interface SideRow {
  side: Side;
  round: number;
  stepsPerSec: number;
  wallS: number;
  p50Ms: number;
  p99Ms: number;
  /** The side's worker processes' CPU seconds, summed, per 1,000 runs. */
  cpuSPer1000Runs: number;
  /** The side's worker processes' peak summed RSS (MiB) during the phase. */
  peakRssMiB: number;
  xactPerStep: number;
  historyBytesPerStep: number;
}

const ms = (e: temporal.api.history.v1.IHistoryEvent): number =>
  Number(e.eventTime?.seconds ?? 0) * 1000 + (e.eventTime?.nanos ?? 0) / 1e6;

/** One run's step latencies (ms) and history bytes; `activity` is the step's activity type. */
function stepFigures(h: History, activity: string): { latencies: number[]; bytes: number } {
  const EventType = temporal.api.enums.v1.EventType;
  const scheduled: number[] = [];
  let end = NaN;
  let bytes = 0;
  for (const e of h.events ?? []) {
    bytes += enc(e);
    if (
      e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED &&
      e.activityTaskScheduledEventAttributes?.activityType?.name === activity
    )
      scheduled.push(ms(e));
    if (e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED) end = ms(e);
  }
  const latencies = scheduled.map((t, i) => (scheduled[i + 1] ?? end) - t);
  return { latencies, bytes };
}

/** Runs `fn` over `items`, at most `n` at a time. */
async function pooled<T, R>(items: readonly T[], n: number, fn: (x: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!);
      }
    }),
  );
  return out;
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  const log = (m: string) => process.stderr.write(`${m}\n`);
  const wall0 = performance.now();
  const load0 = loadavg();
  const app = prepareApp('fleet', o, log);
  const dir = mkdtempSync(join(tmpdir(), 'alg-bench-fleet-'));
  const suffix = randomUUID().slice(0, 8);
  const dbs: Record<Side, string> = {
    guarded: `alg_fleet_g_${suffix}`,
    'hand-written': `alg_fleet_t_${suffix}`,
  };
  const urlOf = (db: string): string => {
    const u = new URL(o.pg);
    u.pathname = `/${db}`;
    return u.toString();
  };
  const admin = new Pool({ connectionString: o.pg, max: 1 });
  // A connection ended by the databases' drop at the end is no error of the bench.
  const ignore = (): void => undefined;
  admin.on('error', ignore);
  for (const db of Object.values(dbs)) await admin.query(`CREATE DATABASE ${db}`);
  const pools: Record<Side, Pool> = {
    guarded: new Pool({ connectionString: urlOf(dbs.guarded), max: 1 }),
    'hand-written': new Pool({ connectionString: urlOf(dbs['hand-written']), max: 1 }),
  };
  for (const p of Object.values(pools)) p.on('error', ignore);
  await pools.guarded.query('CREATE TABLE fleet_effects (op_key TEXT PRIMARY KEY, n INTEGER NOT NULL)');
  await pools['hand-written'].query(
    `CREATE TABLE twin_ops (op_key TEXT PRIMARY KEY, result TEXT NOT NULL);
     CREATE TABLE twin_effects (op_key TEXT PRIMARY KEY, n INTEGER NOT NULL)`,
  );
  const cliPath = await cliWithDynamicConfig(dir, FAST_DISPATCH_DYNAMIC_CONFIG);
  const server = await startThrowawayDevServer({ cliPath });
  const codecKeys = `k1:${randomBytes(32).toString('base64')}`;
  const queues: Record<Side, string> = {
    guarded: `fleet-guarded-${suffix}`,
    'hand-written': `fleet-twin-${suffix}`,
  };
  const connection = await Connection.connect({ address: server.address });
  const codecClient = new Client({
    connection,
    namespace: 'default',
    dataConverter: dataConverterOf(loadPayloadCodec({ AGENT_CODEC_KEYS: codecKeys })),
  });
  const clients: Record<Side, Client> = {
    guarded: codecClient,
    'hand-written': o.baselineCodec ? codecClient : new Client({ connection, namespace: 'default' }),
  };
  const workers: Record<Side, AppWorker[]> = { guarded: [], 'hand-written': [] };
  const rows: SideRow[] = [];
  try {
    log(`starting ${o.workers} worker process(es) per side (${o.packageFrom})…`);
    await Promise.all(
      Array.from({ length: o.workers }, (_, i) => [
        AppWorker.start(
          join(app, 'fleet-product-worker.js'),
          {
            TEMPORAL_ADDRESS: server.address,
            FLOOR_TASK_QUEUE: queues.guarded,
            LEDGER_URL: o.ledgerPool ? `${urlOf(dbs.guarded)}?pool_max=${o.ledgerPool}` : urlOf(dbs.guarded),
            FLEET_EFFECTS_URL: urlOf(dbs.guarded),
            AGENT_CODEC_KEYS: codecKeys,
          },
          o.packageFrom,
          join(dir, `guarded-${i}.log`),
        ).then((w) => workers.guarded.push(w)),
        AppWorker.start(
          join(app, 'fleet-bare-worker.js'),
          {
            TEMPORAL_ADDRESS: server.address,
            FLOOR_TASK_QUEUE: queues['hand-written'],
            FLEET_DB_URL: urlOf(dbs['hand-written']),
            FLEET_POOL: String(o.twinPool),
            AGENT_CODEC_KEYS: o.baselineCodec ? codecKeys : '',
          },
          o.packageFrom,
          join(dir, `twin-${i}.log`),
        ).then((w) => workers['hand-written'].push(w)),
      ]).flat(),
    );

    const startRun = async (side: Side, tag: string, steps: number): Promise<WorkflowHandle> => {
      if (side === 'hand-written') {
        const input: FloorRunInput = { tag, steps, once: true };
        return clients[side].workflow.start('floorRun', {
          taskQueue: queues[side],
          workflowId: `fleet-twin-${tag}`,
          args: [input],
        });
      }
      const input: RunInput = {
        goal: `bench fleet ${tag}`,
        planner: {
          kind: 'scripted',
          live: true,
          script: {
            calls: Array.from({ length: steps }, (_, n) => ({
              tool: 'fleet_write',
              args: { run: tag, n, ...(n === steps - 1 ? { final: true } : {}) },
            })),
          },
        },
        guard: { maxSteps: steps + 10, maxMs: 1e12, noProgressLimit: steps + 10 },
        resumeWindowMs: 1000,
      };
      return clients[side].workflow.start('agentRun', {
        taskQueue: queues[side],
        workflowId: `fleet-guarded-${tag}`,
        args: [input],
      });
    };
    const awaitRun = async (side: Side, h: WorkflowHandle, steps: number): Promise<void> => {
      if (side === 'hand-written') {
        const last = await h.result();
        if (last !== steps - 1) throw new Error(`twin run ${h.workflowId} answered ${String(last)}`);
        return;
      }
      const r: RunResult = await agentRunResult(h);
      if (r.terminal_state !== 'COMPLETED' || r.executed !== steps)
        throw new Error(
          `run ${h.workflowId} ended ${r.terminal_state} ${r.reason} after ${r.executed} steps`,
        );
    };
    const runMany = async (side: Side, runs: number, steps: number): Promise<WorkflowHandle[]> => {
      const tags = Array.from({ length: runs }, () => randomUUID().slice(0, 12));
      const handles = await pooled(tags, 100, (t) => startRun(side, t, steps));
      await Promise.all(handles.map((h) => awaitRun(side, h, steps)));
      return handles;
    };
    /**
     * The side's database's committed transactions, once the backends have flushed them: a
     * backend that flushed its counters less than a second ago keeps the next ones until it has
     * been idle 10 s (PostgreSQL 15's PGSTAT_IDLE_INTERVAL), so this waits 11 s, then reads
     * until two reads a second apart agree. Autovacuum's transactions on the database count too.
     */
    const xacts = async (side: Side): Promise<number> => {
      await sleep(11_000);
      let last = -1;
      for (let i = 0; i < 15; i++) {
        // Read from the admin connection: a query on the side's own database would count too.
        const r = await admin.query<{ n: string }>(
          'SELECT xact_commit AS n FROM pg_stat_database WHERE datname = $1',
          [dbs[side]],
        );
        const n = Number(r.rows[0]!.n);
        if (n === last) return n;
        last = n;
        await sleep(1000);
      }
      return last;
    };
    const usage = async (side: Side): Promise<{ cpuUs: number; rss: number }> => {
      const us = await Promise.all(workers[side].map((w) => w.usage()));
      return {
        cpuUs: us.reduce((a, u) => a + u.user + u.system, 0),
        rss: us.reduce((a, u) => a + u.rss, 0),
      };
    };

    log('warm-up (20 runs of 3 steps per side)…');
    for (const side of ['guarded', 'hand-written'] as const) await runMany(side, 20, 3);

    for (let round = 0; round < o.rounds; round++) {
      const order: Side[] = round % 2 === 0 ? ['guarded', 'hand-written'] : ['hand-written', 'guarded'];
      for (const side of order) {
        const x0 = await xacts(side);
        const u0 = await usage(side);
        let peak = u0.rss;
        let sampling = true;
        const sampler = (async () => {
          while (sampling) {
            await sleep(500);
            if (sampling) peak = Math.max(peak, (await usage(side)).rss);
          }
        })();
        const t0 = performance.now();
        const handles = await runMany(side, o.runs, o.steps);
        const wallMs = performance.now() - t0;
        sampling = false;
        await sampler;
        const u1 = await usage(side);
        peak = Math.max(peak, u1.rss);
        const x1 = await xacts(side);
        const steps = o.runs * o.steps;
        log(
          `round ${round + 1} ${side}: ${(steps / (wallMs / 1000)).toFixed(1)} steps/s; reading the histories…`,
        );
        const figures = await pooled(handles, 16, async (h) =>
          stepFigures(await h.fetchHistory(), side === 'guarded' ? 'runTool' : 'floorOnce'),
        );
        const latencies = figures.flatMap((f) => f.latencies);
        rows.push({
          side,
          round,
          stepsPerSec: steps / (wallMs / 1000),
          wallS: wallMs / 1000,
          p50Ms: percentile(latencies, 50),
          p99Ms: percentile(latencies, 99),
          cpuSPer1000Runs: (u1.cpuUs - u0.cpuUs) / 1e6 / (o.runs / 1000),
          peakRssMiB: peak / 2 ** 20,
          xactPerStep: (x1 - x0) / steps,
          historyBytesPerStep: figures.reduce((a, f) => a + f.bytes, 0) / steps,
        });
      }
    }
    // Every step's effect is in its table exactly once (both sides' own check of the work).
    const counted = {
      guarded: Number((await pools.guarded.query('SELECT count(*) AS n FROM fleet_effects')).rows[0].n),
      'hand-written': Number(
        (await pools['hand-written'].query('SELECT count(*) AS n FROM twin_effects')).rows[0].n,
      ),
    };
    const expected = o.rounds * o.runs * o.steps + 20 * 3;
    for (const side of ['guarded', 'hand-written'] as const)
      if (counted[side] !== expected)
        throw new Error(`${side}: ${counted[side]} effect rows, expected ${expected}`);
  } finally {
    await Promise.allSettled([...workers.guarded, ...workers['hand-written']].map((w) => w.stop()));
    await connection.close().catch(() => undefined);
    await server.stop().catch(() => undefined);
    await Promise.allSettled(Object.values(pools).map((p) => p.end()));
    for (const db of Object.values(dbs))
      await admin.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`).catch(() => undefined);
    await admin.end().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
  const load1 = loadavg();
  const wallS = (performance.now() - wall0) / 1000;
  const med = (side: Side, k: keyof SideRow): number => {
    const xs = rows.filter((r) => r.side === side).map((r) => r[k] as number);
    const s = [...xs].sort((a, b) => a - b);
    const m = s.length >> 1;
    return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
  };
  const cols: [keyof SideRow, string, number][] = [
    ['stepsPerSec', 'steps/s', 1],
    ['p50Ms', 'step p50 ms', 1],
    ['p99Ms', 'step p99 ms', 1],
    ['cpuSPer1000Runs', 'worker CPU s / 1,000 runs', 1],
    ['peakRssMiB', `peak worker RSS MiB (${o.workers} processes)`, 0],
    ['xactPerStep', 'PostgreSQL xact/step', 2],
    ['historyBytesPerStep', 'history bytes/step', 0],
  ];
  const ratio = (k: keyof SideRow): number => med('guarded', k) / med('hand-written', k);
  const targets: Partial<Record<keyof SideRow, string>> = { stepsPerSec: '≥ 0.85×', p99Ms: '≤ 1.3×' };
  const pass = {
    throughput: ratio('stepsPerSec') >= 0.85,
    p99: ratio('p99Ms') <= 1.3,
  };
  const load = { start: load0.map((x) => +x.toFixed(2)), end: load1.map((x) => +x.toFixed(2)), cores: 2 };
  if (o.json) {
    process.stdout.write(`${JSON.stringify({ options: o, load, wallS, rows, pass }, null, 2)}\n`);
    return;
  }
  const out: string[] = [];
  out.push(
    `bench:fleet — ${o.runs} concurrent runs × ${o.steps} write steps, ${o.workers} worker processes per side, PostgreSQL; ${o.rounds} round(s), medians; package ${o.packageFrom}; pools: ledger ${o.ledgerPool ?? 10}, twin ${o.twinPool}; baseline codec ${o.baselineCodec ? 'on' : 'off'}; load ${load.start.join('/')} → ${load.end.join('/')}; wall ${wallS.toFixed(0)} s`,
  );
  out.push('');
  out.push('| figure | guarded | hand-written | guarded / hand-written | target |');
  out.push('| ------ | ------: | -----------: | ---------------------: | -----: |');
  for (const [k, name, d] of cols)
    out.push(
      `| ${name} | ${med('guarded', k).toFixed(d)} | ${med('hand-written', k).toFixed(d)} | ${ratio(k).toFixed(2)}× | ${targets[k] ?? '–'} |`,
    );
  if (o.rounds > 1) {
    out.push('');
    out.push('| round | side | steps/s | p50 ms | p99 ms | CPU s / 1,000 runs |');
    out.push('| ----: | ---- | ------: | -----: | -----: | -----------------: |');
    for (const r of rows)
      out.push(
        `| ${r.round + 1} | ${r.side} | ${r.stepsPerSec.toFixed(1)} | ${r.p50Ms.toFixed(1)} | ${r.p99Ms.toFixed(1)} | ${r.cpuSPer1000Runs.toFixed(1)} |`,
      );
  }
  out.push('');
  out.push(
    `throughput ${pass.throughput ? 'meets' : 'misses'} ≥ 0.85×; p99 ${pass.p99 ? 'meets' : 'misses'} ≤ 1.3×`,
  );
  process.stdout.write(`${out.join('\n')}\n`);
}

runBench('bench:fleet', main);
