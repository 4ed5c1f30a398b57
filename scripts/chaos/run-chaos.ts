/**
 * One chaos run (docs/chaos.md): a dev server with its state in a file, a private
 * PostgreSQL holding the shared ledger and the side-effect rows, N worker processes, and
 * a few hundred live scripted runs whose every call is a write. While the runs are in
 * flight it SIGKILLs and restarts random workers, SIGKILLs and restarts the dev server once
 * and crash-restarts PostgreSQL once; then it waits for every run to settle and checks the
 * invariants (scripts/chaos/invariants.ts). Bounded in time; loopback only; everything it
 * started is stopped and deleted on every path out.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, Connection, WorkflowFailedError, WorkflowNotFoundError } from '@temporalio/client';
import { bundleWorkflowCode } from '@temporalio/worker';
import { Pool } from 'pg';
import { openLedger } from '../../storage/ledger';
import { dataConverterOf, loadPayloadCodec } from '../../codec';
import type { RunInput } from '../../common/contracts';
import { WORKFLOWS_PATH } from '../../worker/create-worker';
import { createEffectsTable } from './effects';
import { Fleet, type WorkerSlot } from './fleet';
import {
  checkInvariants,
  type ChaosEvent,
  type ChaosReport,
  type LedgerRow,
  type RunOutcome,
} from './invariants';
import { startPrivatePostgres, type PrivatePostgres } from './postgres';
import { ChaosTemporal } from './temporal';
import { CHAOS_DONE_TOOL, CHAOS_TOOL } from './tool';
import { agentRunResult } from '../../client/runs';

/** Options of {@link runChaos}. */
export interface ChaosOptions {
  /** Live runs started (default 200). */
  readonly runs: number;
  /** Writes per run; the last one is terminal (default 3). */
  readonly writesPerRun: number;
  /** Worker processes (default 3). */
  readonly workers: number;
  /** Worker SIGKILLs (default 12). */
  readonly kills: number;
  /** Time between kills, ms: uniform in [min, max] (default 1500–3500). */
  readonly killEveryMs: readonly [number, number];
  /** When the dev server is restarted, and PostgreSQL, in ms after the first start (default 8 s, 16 s). */
  readonly serverRestartAtMs: number;
  readonly pgRestartAtMs: number;
  /** Ledger lease of the workers (short, so a dead executor's dispatch expires in the run; default 3000). */
  readonly leaseMs: number;
  /** Longest pause of the write tool between its side effect and the ledger commit (default 300 ms). */
  readonly maxPauseMs: number;
  /** Everything, setup to the last check, must finish within this (default 290 s). */
  readonly deadlineMs: number;
  readonly log: (msg: string) => void;
}

/** The defaults of `npm run chaos`. */
export const DEFAULT_CHAOS_OPTIONS: ChaosOptions = {
  // 200 × 3 writes settle in ~2-3 min on 2 busy cores; 300 took 250 s of the 290 s budget.
  runs: 200,
  writesPerRun: 3,
  workers: 3,
  kills: 12,
  killEveryMs: [1500, 3500],
  serverRestartAtMs: 8_000,
  pgRestartAtMs: 16_000,
  leaseMs: 3_000,
  maxPauseMs: 300,
  deadlineMs: 290_000,
  log: () => undefined,
};

const between = ([min, max]: readonly [number, number]): number =>
  min + Math.floor(Math.random() * (max - min + 1));

/** Calls `fn` until it succeeds or `untilMs` (epoch) passes: the server may be restarting. */
async function retrying<T>(fn: () => Promise<T>, untilMs: number, what: string): Promise<T> {
  let last: unknown;
  while (Date.now() < untilMs) {
    try {
      return await fn();
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) throw err;
      last = err;
      await sleep(300);
    }
  }
  throw new Error(
    `${what}: gave up at the deadline (${last instanceof Error ? last.message : String(last)})`,
  );
}

/** Runs `fn` over `items`, at most `limit` at a time. */
async function pool<T, R>(items: readonly T[], limit: number, fn: (x: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!);
      }
    }),
  );
  return out;
}

/** A live slot whose process owns a DISPATCHED ledger record now (none while PostgreSQL is down). */
async function dispatchingSlot(admin: Pool, live: readonly WorkerSlot[]): Promise<WorkerSlot | undefined> {
  try {
    const rows = (
      await admin.query<{ owner: string }>(
        "SELECT owner FROM ledger_records WHERE state = 'DISPATCHED' ORDER BY dispatched_at DESC",
      )
    ).rows;
    for (const r of rows) {
      const pid = Number(/^worker-(\d+)\//.exec(r.owner)?.[1] ?? NaN);
      const slot = live.find((s) => s.proc?.pid === pid);
      if (slot) return slot;
    }
  } catch {
    // PostgreSQL restarting: a random kill instead.
  }
  return undefined;
}

function runInput(tag: string, writes: number): RunInput {
  const calls = [
    ...Array.from({ length: writes }, (_, n) => ({ tool: CHAOS_TOOL, args: { run: tag, n } })),
    { tool: CHAOS_DONE_TOOL, args: { run: tag } },
  ];
  return {
    goal: `chaos ${tag}`,
    planner: { kind: 'scripted', live: true, script: { calls } },
    // Only the chaos may end a run: no budget or progress rule fires on a slow, write-only script.
    guard: { maxSteps: writes * 4 + 10, maxMs: 3_600_000, noProgressLimit: writes * 4 + 10 },
    // A run stopped NEEDS_HUMAN waits briefly, then closes with its StopReport (what is checked).
    resumeWindowMs: 2_000,
    // A killed worker's activities are retried elsewhere once these run out.
    timeouts: { plannerStartToCloseMs: 5_000, toolStartToCloseMs: 10_000, toolHeartbeatMs: 2_000 },
  };
}

/** Runs the chaos and returns the report (it does not throw on a violated invariant). */
export async function runChaos(partial: Partial<ChaosOptions> = {}): Promise<ChaosReport> {
  const o: ChaosOptions = { ...DEFAULT_CHAOS_OPTIONS, ...partial };
  const t00 = Date.now();
  const deadline = t00 + o.deadlineMs;
  const dir = mkdtempSync(join(tmpdir(), 'alg-chaos-'));
  const cleanups: (() => Promise<void> | void)[] = [() => rmSync(dir, { recursive: true, force: true })];
  const onSignal = (sig: NodeJS.Signals): void => {
    o.log(`${sig}: cleaning up`);
    void runCleanups().finally(() => process.exit(130));
  };
  let cleaned = false;
  const runCleanups = async (): Promise<void> => {
    if (cleaned) return;
    cleaned = true;
    for (const c of cleanups.reverse()) await Promise.resolve(c()).catch(() => undefined);
  };
  // A harness that crashes must not leave a PostgreSQL, a dev server or workers behind.
  const onCrash = (err: unknown): void => {
    console.error(
      `chaos harness crashed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`,
    );
    void runCleanups().finally(() => process.exit(2));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  process.on('uncaughtException', onCrash);
  process.on('unhandledRejection', onCrash);
  try {
    o.log('setup: private PostgreSQL, dev server with a db file, workflow bundle…');
    const pg: PrivatePostgres = await startPrivatePostgres();
    cleanups.push(() => pg.destroy());
    const admin = new Pool({ connectionString: pg.url, max: 2 });
    admin.on('error', () => undefined);
    cleanups.push(() => admin.end());
    await createEffectsTable(admin);
    const ledgerUrl = `${pg.url}?pool_max=8&connect_timeout_ms=3000&statement_timeout_ms=10000`;
    await (await openLedger(ledgerUrl)).close(); // migrate once, before the workers race to

    const [temporal, bundle] = await Promise.all([
      ChaosTemporal.start(dir),
      bundleWorkflowCode({
        workflowsPath: WORKFLOWS_PATH,
        logger: { trace() {}, debug() {}, info() {}, warn() {}, error: console.error, log() {} } as never,
      }),
    ]);
    cleanups.push(() => temporal.stop());
    const bundlePath = join(dir, 'workflow-bundle.js');
    writeFileSync(bundlePath, bundle.code);

    const taskQueue = `chaos-${randomUUID()}`;
    // Payloads are encrypted by default: one fresh key per chaos run, the same for every worker
    // process and for this harness's client (else the client could not read the results).
    const codecKeys = `k1:${randomBytes(32).toString('base64')}`;
    const fleet = new Fleet(
      {
        codecKeys,
        temporalAddress: temporal.address,
        taskQueue,
        ledgerUrl,
        effectsUrl: pg.url,
        bundlePath,
        dir,
        leaseMs: o.leaseMs,
        maxPauseMs: o.maxPauseMs,
      },
      o.workers,
      o.log,
    );
    cleanups.push(() => fleet.stopAll());
    await fleet.startAll();

    const connection = await Connection.connect({ address: temporal.address });
    cleanups.push(() => connection.close());
    const dataConverter = dataConverterOf(loadPayloadCodec({ AGENT_CODEC_KEYS: codecKeys }));
    const client = (): Client => new Client({ connection, namespace: 'default', dataConverter });

    // ---- start the runs
    const tag = randomUUID().slice(0, 8);
    const ids = Array.from({ length: o.runs }, (_, i) => `chaos-${tag}-${i}`);
    o.log(`starting ${o.runs} runs × ${o.writesPerRun} writes on ${o.workers} workers…`);
    const t0 = Date.now();
    const started = new Set<string>();
    const starting = pool(ids, 25, async (id) => {
      await retrying(
        async () => {
          try {
            await client().workflow.start('agentRun', {
              taskQueue,
              workflowId: id,
              args: [runInput(id, o.writesPerRun)],
            });
          } catch (err) {
            // Started before the server went away, its answer lost: the run exists.
            if ((err as Error).name !== 'WorkflowExecutionAlreadyStartedError') throw err;
          }
        },
        deadline,
        `start ${id}`,
      );
      started.add(id);
    });

    const running = async (): Promise<number> =>
      Number(
        (await client().workflow.count(`TaskQueue = "${taskQueue}" AND ExecutionStatus = "Running"`)).count,
      );

    // ---- the chaos
    const events: ChaosEvent[] = [];
    let serverDone = false;
    let pgDone = false;
    let killsDone = 0;
    let nextKill = t0 + between(o.killEveryMs);
    const chaosEnd = t0 + Math.max(o.serverRestartAtMs, o.pgRestartAtMs) + 60_000;
    while (Date.now() < Math.min(deadline - 60_000, chaosEnd)) {
      const now = Date.now();
      if (!serverDone && now - t0 >= o.serverRestartAtMs) {
        serverDone = true;
        const open = await running().catch(() => -1);
        const s = Date.now();
        // The client's channel reconnects by itself to the same address: calls in flight retry.
        await temporal.restart();
        events.push({ kind: 'temporal_restart', atMs: s - t0, openRuns: open, downMs: Date.now() - s });
        o.log(`  dev server SIGKILLed and restarted (${open} runs open, ${Date.now() - s} ms)`);
      }
      if (!pgDone && now - t0 >= o.pgRestartAtMs) {
        pgDone = true;
        const open = await running().catch(() => -1);
        const s = Date.now();
        await pg.restart();
        events.push({ kind: 'postgres_restart', atMs: s - t0, openRuns: open, downMs: Date.now() - s });
        o.log(`  PostgreSQL crash-restarted (${open} runs open, ${Date.now() - s} ms)`);
      }
      if (killsDone < o.kills && now >= nextKill) {
        const live = fleet.slots.filter((s) => s.proc !== null);
        // Every other kill is aimed at a worker holding a DISPATCHED record (between dispatch and
        // commit), so the UNKNOWN path is exercised, not left to luck; the others are random.
        const aimed = killsDone % 2 === 1 ? await dispatchingSlot(admin, live) : undefined;
        const slot = aimed ?? live[Math.floor(Math.random() * live.length)];
        if (slot) {
          const k = await fleet.kill(slot, t0);
          if (k) {
            killsDone += 1;
            const open = await running().catch(() => -1);
            events.push({ kind: 'worker_kill', atMs: k.atMs, openRuns: open, pid: k.pid, aimed: !!aimed });
            o.log(`  SIGKILL worker ${k.pid} (slot ${k.slot}${aimed ? ', aimed' : ''}; ${open} runs open)`);
            fleet.restartLater(slot, between([300, 1500]));
          }
        }
        nextKill = Date.now() + between(o.killEveryMs);
      }
      if (serverDone && pgDone && killsDone >= o.kills) break;
      await sleep(100);
    }
    await starting;

    // ---- settle: every slot serving, every run closed
    o.log('chaos over; waiting for every run to settle…');
    await fleet.ensureAll();
    let open = -1;
    while (Date.now() < deadline - 10_000) {
      open = await running().catch(() => -1);
      if (open === 0) break;
      await sleep(1000);
    }
    const settledMs = Date.now() - t0;

    // ---- read every run
    const outcomes: RunOutcome[] = await pool(ids, 20, async (id): Promise<RunOutcome> => {
      if (!started.has(id)) return { id, status: 'NOT_STARTED', result: null };
      try {
        const h = client().workflow.getHandle(id);
        const d = await retrying(() => h.describe(), deadline, `describe ${id}`);
        const status = d.status.name;
        if (status !== 'COMPLETED' && status !== 'FAILED') return { id, status, result: null };
        // A run that did not complete closes FAILED with its RunResult in the failure; a FAILED
        // workflow without one (a crash of the workflow itself) has no result to read.
        const result = await retrying(
          () =>
            agentRunResult(h).catch((err: unknown) =>
              status === 'FAILED' && isFailure(err) ? null : Promise.reject(err),
            ),
          deadline,
          `result ${id}`,
        );
        return { id, status, result };
      } catch (err) {
        if (err instanceof WorkflowNotFoundError) return { id, status: 'NOT_FOUND', result: null };
        return { id, status: `UNREADABLE: ${(err as Error).message}`, result: null };
      }
    });
    const effects = (
      await admin.query<{ op_key: string; run_id: string; pid: number }>(
        'SELECT op_key, run_id, pid FROM chaos_effects',
      )
    ).rows;
    const ledger: LedgerRow[] = (
      await admin.query<{
        key: string;
        state: string;
        owner: string;
        run_id: string;
        dispatched_at: string | null;
        finished_at: string | null;
      }>(
        `SELECT key, state, owner, run_id,
                (extract(epoch from dispatched_at) * 1000)::float8::text AS dispatched_at,
                (extract(epoch from finished_at) * 1000)::float8::text AS finished_at
           FROM ledger_records`,
      )
    ).rows.map((r) => ({
      ...r,
      dispatched_at: r.dispatched_at === null ? null : Number(r.dispatched_at),
      finished_at: r.finished_at === null ? null : Number(r.finished_at),
    }));
    return checkInvariants({
      options: { runs: o.runs, writesPerRun: o.writesPerRun, workers: o.workers, kills: o.kills },
      outcomes,
      effects,
      ledger,
      events,
      t0,
      killedPids: fleet.killedPids(),
      unexpectedExits: fleet.unexpectedExits.map((e) => ({ pid: e.pid, code: e.code, signal: e.signal })),
      settledMs,
      totalMs: Date.now() - t00,
    });
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    process.off('uncaughtException', onCrash);
    process.off('unhandledRejection', onCrash);
    await runCleanups();
  }
}

/** A workflow that failed (not a connection or server error, which are retried). */
function isFailure(err: unknown): boolean {
  return err instanceof WorkflowFailedError;
}
