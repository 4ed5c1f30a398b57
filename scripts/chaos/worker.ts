/**
 * One chaos worker process: `npm run worker`'s worker (createAgentWorker over
 * openWorkerDeps) with the `chaos_write` tool registered and short leases, so a killed
 * executor's dispatch expires within the chaos run. The harness (scripts/chaos/run-chaos.ts)
 * starts, SIGKILLs and restarts these.
 *
 * Environment: TEMPORAL_ADDRESS, TEMPORAL_TASK_QUEUE, LEDGER_URL (PostgreSQL, shared),
 * WORLD_URL (this process's own SQLite world), CHAOS_EFFECTS_URL, CHAOS_BUNDLE (a prebuilt
 * workflow bundle file, so a restart does not re-bundle), CHAOS_LEASE_MS, CHAOS_MAX_PAUSE_MS;
 * CHAOS_STATUS_MS (optional, bench/inflight.ts): every that many ms a line
 * `status <cached workflows> <rss bytes>` on stdout.
 */
import { readFileSync } from 'node:fs';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { Pool } from 'pg';
import { createAgentWorker, type WorkerDeps } from '../../worker/create-worker';
import { readWorkerEnv, readWorkerTuning } from '../../worker/env';
import { createChaosDoneTool, createChaosTool } from './tool';
import { openDemoWorkerDeps } from '../../demo/deps';

function required(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`chaos worker: ${name} is not set`);
  return v;
}

/** A worker whose harness died (SIGKILLed, say) exits instead of serving an orphaned fleet. */
function exitWithParent(): void {
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent) process.exit(1);
  }, 1000).unref();
}

async function run(): Promise<void> {
  exitWithParent();
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const env = readWorkerEnv();
  const effects = new Pool({
    connectionString: required('CHAOS_EFFECTS_URL'),
    max: 4,
    connectionTimeoutMillis: 3000,
  });
  effects.on('error', () => undefined);
  const connection = await NativeConnection.connect({ address: env.temporalAddress });
  let deps: WorkerDeps | undefined;
  try {
    deps = await openDemoWorkerDeps({
      ledgerUrl: env.ledgerUrl,
      worldUrl: env.worldUrl,
      demoTools: false,
      tools: [
        createChaosTool(effects, { maxPauseMs: Number(process.env.CHAOS_MAX_PAUSE_MS ?? 150) }),
        createChaosDoneTool(),
      ],
      leaseMs: Number(process.env.CHAOS_LEASE_MS ?? 3000),
    });
    const worker = await createAgentWorker({
      connection,
      namespace: env.namespace,
      taskQueue: env.taskQueue,
      deps,
      workflowBundle: { code: readFileSync(required('CHAOS_BUNDLE'), 'utf8') },
      searchAttributes: 'skip',
      tuning: readWorkerTuning(),
    });
    process.stdout.write(`ready ${process.pid}\n`);
    const statusMs = Number(process.env.CHAOS_STATUS_MS ?? 0);
    if (statusMs > 0) {
      setInterval(() => {
        const cached = worker.getStatus().numCachedWorkflows;
        process.stdout.write(`status ${cached} ${process.memoryUsage.rss()}\n`);
      }, statusMs).unref();
    }
    await worker.run();
  } finally {
    await connection.close().catch(() => undefined);
    await deps?.close().catch(() => undefined);
    await effects.end().catch(() => undefined);
  }
}

run().catch((err: unknown) => {
  console.error(`chaos worker ${process.pid}: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
