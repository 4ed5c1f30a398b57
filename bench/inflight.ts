/**
 * `npm run bench:run -- --inflight N`: N short live runs in flight at once on 3 worker
 * processes sharing one PostgreSQL ledger (a private instance, scripts/chaos/postgres.ts),
 * guard on vs. off as interleaved A/B repetitions.
 *
 * Each run is `writes` live ledger writes (scripts/chaos/tool.ts: claim → effect row →
 * commit; the last one terminal). All N are started at once (at most `startConcurrency`
 * start calls in flight), then every result is read; the completion time runs from the
 * first start to the last result, and every run must end COMPLETED. The workers report
 * their cached workflows and RSS every 250 ms (`CHAOS_STATUS_MS`): RSS per cached workflow
 * = (peak RSS − RSS before the repetition) / peak cached workflows, summed over the workers.
 * The workflow cache holds every run in flight (`AGENT_MAX_CACHED_WORKFLOWS`, up to
 * `--max-cached` per worker), so no run is evicted and replayed mid-measurement below the cap.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Client,
  Connection,
  ServiceError,
  WorkflowExecutionAlreadyStartedError,
  type WorkflowHandle,
  type WorkflowStartOptions,
} from '@temporalio/client';
import { Pool } from 'pg';
import { openLedger } from '../storage/ledger';
import { dataConverterOf, loadPayloadCodec } from '../codec';
import type { RunInput, RunResult } from '../common/contracts';
import { fleetRunInput } from './fleet';
import { startThrowawayDevServer } from '../devserver/dev-server';
import { createEffectsTable } from '../scripts/chaos/effects';
import { Fleet } from '../scripts/chaos/fleet';
import { startPrivatePostgres } from '../scripts/chaos/postgres';
import { agentRunResult } from '../client/runs';

/** What {@link inflightRows} measures. */
export interface InflightOptions {
  readonly runs: number;
  readonly reps: number;
  readonly writes: number;
  readonly workers: number;
  /** Start calls in flight at once. */
  readonly startConcurrency: number;
  /** The dev server CLI (a fast-dispatch wrapper). */
  readonly cliPath: string;
  /** How the runs' scripted plan runs (RunInput.scriptedPlan). */
  readonly plan: 'prefetch' | 'local' | 'activity';
  /** Each worker's workflow cache cap (`AGENT_MAX_CACHED_WORKFLOWS`); beyond it runs are evicted and replayed. */
  readonly maxCached: number;
  /**
   * The dev server's mutable-state cache (`history.cacheMaxSize`, entries per history shard; 0:
   * the server's default, 512). The dev server has one shard, so with more runs in flight than
   * this every task reloads its run's mutable state from SQLite.
   */
  readonly historyCache: number;
}

/** One measurement: N runs in one guard mode. */
export interface InflightMeasurement {
  readonly guard: 'on' | 'off';
  readonly ms: number;
  /** First start → last start. */
  readonly startMs: number;
  readonly stepsPerSec: number;
  /** Peak cached workflows, summed over the workers. */
  readonly peakCached: number;
  /** Peak RSS minus RSS before the measurement, summed over the workers (bytes). */
  readonly rssDelta: number;
}

/** One A/B repetition: guard on and off, in alternating order. */
export interface InflightRep {
  readonly on: InflightMeasurement;
  readonly off: InflightMeasurement;
  /** on / off steps/s (the target: >= 0.95). */
  readonly ratio: number;
}

/** The `--inflight` result. */
export interface InflightResult {
  readonly runs: number;
  readonly workers: number;
  readonly stepsPerRun: number;
  readonly reps: InflightRep[];
  readonly ratio: { min: number; median: number; max: number };
  /** Mean over every measurement of rssDelta / peakCached (bytes). */
  readonly rssPerCachedWorkflow: number;
  /** Worker RSS before the first repetition, summed (bytes). */
  readonly idleRss: number;
}

function input(
  tag: string,
  writes: number,
  guardEnabled: boolean,
  scriptedPlan: InflightOptions['plan'],
): RunInput {
  return { ...fleetRunInput(tag, writes), goal: `bench inflight ${tag}`, guardEnabled, scriptedPlan };
}

/**
 * Runs `fn` over `items` with at most `limit` calls in flight; answers in order. After a
 * failure no new call starts, every call in flight settles, then the first error is thrown
 * (closing the connection under calls still retrying would crash the process instead).
 */
async function pooled<T, R>(items: readonly T[], limit: number, fn: (x: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  let failed: { err: unknown } | null = null;
  const lane = async (): Promise<void> => {
    while (next < items.length && !failed) {
      const i = next++;
      try {
        out[i] = await fn(items[i]!);
      } catch (err) {
        failed ??= { err };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  if (failed) throw (failed as { err: unknown }).err;
  return out;
}

/**
 * A run's result. The long poll behind it can fail on a loaded server ("Failed to get Workflow
 * execution history", a deadline): the run is still there, so it is asked again (at most 10 times).
 */
async function resultOf(h: WorkflowHandle): Promise<RunResult> {
  for (let attempt = 1; ; attempt++) {
    try {
      return (await agentRunResult(h)) as RunResult;
    } catch (err) {
      if (!(err instanceof ServiceError) || attempt >= 10) throw err;
      await sleep(1000);
    }
  }
}

/**
 * Starts a run; a start whose first attempt reached the server but timed out on the client
 * (a loaded server) is retried by the client and answered "already started": that run is ours.
 */
async function startRun(client: Client, options: WorkflowStartOptions): Promise<WorkflowHandle> {
  try {
    return await client.workflow.start('agentRun', options);
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    return client.workflow.getHandle(options.workflowId);
  }
}

/** The latest `status <cached> <rss>` line of each worker, and the peaks since `reset()`. */
class WorkerStatus {
  readonly latest: { cached: number; rss: number }[] = [];
  private peak: { cached: number; rss: number }[] = [];

  constructor(fleet: Fleet) {
    for (const slot of fleet.slots) {
      this.latest[slot.index] = { cached: 0, rss: 0 };
      let buf = '';
      slot.proc?.stdout?.on('data', (d: Buffer) => {
        buf += d.toString();
        const lines = buf.split('\n');
        buf = lines.pop() ?? '';
        for (const line of lines) {
          const m = /^status (\d+) (\d+)$/.exec(line.trim());
          if (!m) continue;
          const s = { cached: Number(m[1]), rss: Number(m[2]) };
          this.latest[slot.index] = s;
          const p = this.peak[slot.index];
          if (p)
            this.peak[slot.index] = { cached: Math.max(p.cached, s.cached), rss: Math.max(p.rss, s.rss) };
        }
      });
    }
  }

  /** Starts a new peak from the latest report; answers the RSS now (summed). */
  reset(): number {
    this.peak = this.latest.map((s) => ({ ...s }));
    return this.latest.reduce((a, s) => a + s.rss, 0);
  }

  /** Peak cached workflows and peak RSS since `reset()`, summed over the workers. */
  peaks(): { cached: number; rss: number } {
    return this.peak.reduce((a, p) => ({ cached: a.cached + p.cached, rss: a.rss + p.rss }), {
      cached: 0,
      rss: 0,
    });
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The median (the mean of the middle two for an even count). */
function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** Measures N runs in flight, guard on and off, `reps` interleaved repetitions. */
export async function inflightRows(
  bundleCode: string,
  o: InflightOptions,
  log: (m: string) => void,
): Promise<InflightResult> {
  const dir = mkdtempSync(join(tmpdir(), 'alg-bench-inflight-'));
  const pg = await startPrivatePostgres();
  const server = await startThrowawayDevServer({
    cliPath: o.cliPath,
    // The history service's events cache holds every run in flight's recent events (its
    // default, 512 KiB, is sized for a handful: each dispatch would read them back from SQLite).
    dynamicConfig: [
      `history.eventsCacheMaxSizeBytes=${256 * 1024 * 1024}`,
      ...(o.historyCache > 0 ? [`history.cacheMaxSize=${o.historyCache}`] : []),
    ],
  }).catch((err: unknown) => {
    pg.destroy();
    throw err;
  });
  const connection = await Connection.connect({ address: server.address });
  const codecKeys = `k1:${randomBytes(32).toString('base64')}`;
  const dataConverter = dataConverterOf(loadPayloadCodec({ AGENT_CODEC_KEYS: codecKeys }));
  const client = new Client({ connection, namespace: server.namespace, dataConverter });
  const bundlePath = join(dir, 'bundle.js');
  writeFileSync(bundlePath, bundleCode);
  const admin = new Pool({ connectionString: pg.url, max: 2 });
  const taskQueue = `bench-inflight-${randomUUID()}`;
  const perWorker = Math.ceil(o.runs / o.workers);
  const fleet = new Fleet(
    {
      temporalAddress: server.address,
      taskQueue,
      ledgerUrl: `${pg.url}?pool_max=20`,
      effectsUrl: pg.url,
      bundlePath,
      dir,
      leaseMs: 30_000,
      maxPauseMs: 1,
      codecKeys,
      extraEnv: {
        // Every run in flight stays cached (a worker may get more than its share), up to the cap.
        AGENT_MAX_CACHED_WORKFLOWS: String(Math.min(o.maxCached, Math.max(1000, Math.ceil(perWorker * 1.5)))),
        CHAOS_STATUS_MS: '250',
        // Room for the cache: the SDK sizes nothing by itself once the cache size is given.
        NODE_OPTIONS: '--max-old-space-size=6144',
      },
    },
    o.workers,
    log,
  );
  try {
    await createEffectsTable(admin);
    await (await openLedger(`${pg.url}?pool_max=2`)).close();
    await fleet.startAll();
    const status = new WorkerStatus(fleet);

    const measure = async (guard: 'on' | 'off', runs: number): Promise<InflightMeasurement> => {
      await admin.query('TRUNCATE chaos_effects, ledger_records');
      await sleep(600); // two status reports after the last measurement's evictions
      const idle = status.reset();
      const tag = randomUUID().slice(0, 8);
      const t0 = performance.now();
      const handles: WorkflowHandle[] = await pooled(
        Array.from({ length: runs }, (_, i) => i),
        o.startConcurrency,
        (i) =>
          startRun(client, {
            taskQueue,
            workflowId: `bench-inflight-${guard}-${tag}-${i}`,
            args: [input(`${tag}-${i}`, o.writes, guard === 'on', o.plan)],
          }),
      );
      const startMs = performance.now() - t0;
      const results = await pooled(handles, 200, resultOf);
      const ms = performance.now() - t0;
      const bad = results.filter((r) => r.terminal_state !== 'COMPLETED');
      if (bad.length > 0) {
        const r = bad[0]!;
        throw new Error(
          `${bad.length} of ${runs} inflight runs did not complete; first: ${r.workflow_id} ${r.terminal_state} ${r.reason}`,
        );
      }
      const peaks = status.peaks();
      return {
        guard,
        ms,
        startMs,
        stepsPerSec: (runs * o.writes) / (ms / 1000),
        peakCached: peaks.cached,
        rssDelta: Math.max(0, peaks.rss - idle),
      };
    };

    log(`  warm-up: ${Math.min(50, o.runs)} runs per guard mode…`);
    await measure('on', Math.min(50, o.runs));
    await measure('off', Math.min(50, o.runs));
    await sleep(600);
    const idleRss = status.reset();
    const reps: InflightRep[] = [];
    for (let k = 0; k < o.reps; k++) {
      // Interleaved: on first in even repetitions, off first in odd ones.
      const order: ('on' | 'off')[] = k % 2 === 0 ? ['on', 'off'] : ['off', 'on'];
      const got: Partial<Record<'on' | 'off', InflightMeasurement>> = {};
      for (const guard of order) {
        const m = await measure(guard, o.runs);
        got[guard] = m;
        log(
          `  rep ${k + 1} guard ${guard}: ${o.runs} runs in ${(m.ms / 1000).toFixed(1)} s (started in ${(m.startMs / 1000).toFixed(1)} s), ${m.stepsPerSec.toFixed(1)} steps/s, ${m.peakCached} cached at peak`,
        );
      }
      const on = got.on!;
      const off = got.off!;
      reps.push({ on, off, ratio: on.stepsPerSec / off.stepsPerSec });
    }
    const ratios = reps.map((r) => r.ratio);
    const perCached = reps
      .flatMap((r) => [r.on, r.off])
      .filter((m) => m.peakCached > 0)
      .map((m) => m.rssDelta / m.peakCached);
    return {
      runs: o.runs,
      workers: o.workers,
      stepsPerRun: o.writes,
      reps,
      ratio: { min: Math.min(...ratios), median: median(ratios), max: Math.max(...ratios) },
      rssPerCachedWorkflow: perCached.length ? perCached.reduce((a, b) => a + b, 0) / perCached.length : 0,
      idleRss,
    };
  } finally {
    await fleet.stopAll().catch(() => undefined);
    await admin.end().catch(() => undefined);
    await connection.close().catch(() => undefined);
    await server.stop().catch(() => undefined);
    pg.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
}
