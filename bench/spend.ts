/**
 * `npm run bench:spend`: a tenant's spend limit under concurrency (docs/spec.md §7.10).
 *
 * Per cap: 50 concurrent LLM runs of one tenant, on 3 workers (each its own Temporal worker
 * and its own PostgreSQL pool, one task queue) sharing one PostgreSQL database (a fresh schema
 * of `BENCH_PG_URL`, default postgres://postgres@127.0.0.1:5432/test), against a local Chat
 * Completions server (testing/openai-server.ts, driven by the official `openai`
 * SDK) that bills fixed usage per request: 2,000 prompt + 200 completion tokens of gpt-4o-mini
 * ($0.15 / $0.60 per million) = $0.00042 a request. The model never finishes (each reply
 * searches for another topic), so only the tenant's cap stops the runs. An in-memory Temporal
 * dev server is started here.
 *
 * Columns: the cap; BILLED = the server's own request count × the price per request; USED =
 * billed / cap; RESERVED-UNBILLED = the tenant's reservations still open at the end (the spend
 * store's in-flight plus expired worst cases; must be 0 once every run stopped); RUNS STOPPED
 * spend_limit (of 50); FIRST / LAST STOP = from the start of the runs until the first / last
 * run was stopped (its status said so); REFUSED = refused reservations (one per stopped run,
 * plus any refused resume-less retry).
 *
 * Target (the summary line): for every cap, billed ≤ cap and every run stopped `spend_limit`.
 *
 * Flags: --json (one JSON object on stdout instead of the table); --caps 0.05,0.25 (USD).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, type Worker } from '@temporalio/worker';
import { Client as PgClient } from 'pg';
import { randomBytes } from 'node:crypto';
import { statusQuery, type RunInput } from '../common/contracts';
import { dataConverterOf, loadPayloadCodec } from '../codec';
import { openDemoWorkerDeps } from '../demo/deps';
import { startThrowawayDevServer } from '../devserver/dev-server';
import { quietWorkflowBundle } from '../scripts/workflow-bundle';
import { openLedger } from '../storage/ledger';
import { SpendStore, type SpendLimits } from '../storage/spend';
import { startOpenAIServer } from '../testing/openai-server';
import { createAgentWorker, type WorkerDeps } from '../worker/create-worker';
import type { agentRun } from '../workflows';
import { runBench } from './bench-worker';

const RUNS = 50;
const WORKERS = 3;
const PROMPT = 2000;
const COMPLETION = 200;
const PER_REQUEST_USD = (PROMPT * 0.15 + COMPLETION * 0.6) / 1e6;
const WINDOW_MS = 3_600_000;

/** One cap's row. */
interface Row {
  readonly capUsd: number;
  readonly billedUsd: number;
  readonly requests: number;
  readonly usedOfCap: number;
  readonly reservedUnbilledUsd: number;
  readonly runsStoppedSpendLimit: number;
  readonly otherStops: string[];
  readonly firstStopMs: number;
  readonly lastStopMs: number;
  readonly refused: number;
}

async function freshSchema(base: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const schema = `bench_spend_${randomBytes(5).toString('hex')}`;
  const admin = new PgClient({ connectionString: base });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  const u = new URL(base);
  u.searchParams.set('schema', schema);
  u.searchParams.set('pool_max', '8');
  return {
    url: u.toString(),
    async drop() {
      await admin.query(`DROP SCHEMA ${schema} CASCADE`);
      await admin.end();
    },
  };
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const json = args.includes('--json');
  let caps = [0.05, 0.25];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--json') continue;
    if (args[i] === '--caps' && args[i + 1]) {
      caps = (args[++i] as string).split(',').map(Number);
      if (caps.some((c) => !Number.isFinite(c) || c <= 0))
        throw new Error('--caps: positive USD amounts, e.g. 0.05,0.25');
      continue;
    }
    throw new Error(`unknown flag ${args[i]}`);
  }
  const log = (msg: string): void => {
    if (!json) process.stderr.write(`${msg}\n`);
  };
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const wall0 = performance.now();

  const model = await startOpenAIServer((i) => ({
    tool_calls: [{ name: 'search', arguments: JSON.stringify({ query: `topic${i}` }) }],
    usage: { prompt_tokens: PROMPT, completion_tokens: COMPLETION },
  }));
  process.env.AGENT_MODEL_ENDPOINTS = JSON.stringify({
    'bench-llm': { provider: 'openai', baseURL: model.baseURL },
  });

  log('starting an in-memory dev server, a PostgreSQL schema and 3 workers…');
  const bundle = await quietWorkflowBundle();
  const server = await startThrowawayDevServer();
  const pg = await freshSchema(process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test');
  const dir = mkdtempSync(join(tmpdir(), 'alg-bench-spend-'));
  const tenants = caps.map((_, i) => `bench-${i}`);
  const limits: SpendLimits = Object.fromEntries(
    caps.map((c, i) => [tenants[i], { maxUsd: c, windowMs: WINDOW_MS }]),
  );
  const dataConverter = dataConverterOf(
    loadPayloadCodec({ AGENT_CODEC_KEYS: `k1:${randomBytes(32).toString('base64')}` }),
  );
  const taskQueue = `bench-spend-${randomUUID()}`;
  const workers: { worker: Worker; running: Promise<void>; deps: WorkerDeps; native: NativeConnection }[] =
    [];
  const connection = await Connection.connect({ address: server.address });
  const client = new Client({ connection, namespace: server.namespace, dataConverter });
  const ledger = await openLedger(pg.url);
  const store = SpendStore.over(ledger, limits);
  const rows: Row[] = [];
  try {
    for (let w = 0; w < WORKERS; w++) {
      const deps = await openDemoWorkerDeps({
        ledgerUrl: pg.url,
        worldUrl: `sqlite:${join(dir, `world-${w}.db`)}`,
      });
      const native = await NativeConnection.connect({ address: server.address });
      const worker = await createAgentWorker({
        dataConverter,
        connection: native,
        namespace: server.namespace,
        taskQueue,
        deps: { ...deps, spendLimits: limits },
        workflowBundle: bundle,
      });
      workers.push({ worker, running: worker.run(), deps, native });
    }

    for (const [c, capUsd] of caps.entries()) {
      const tenant = tenants[c] as string;
      log(`  cap $${capUsd}: ${RUNS} runs of tenant ${tenant}…`);
      const before = model.completionRequests().length;
      const input: RunInput = {
        goal: 'research every topic',
        planner: { kind: 'openai', model: 'gpt-4o-mini', maxTokens: COMPLETION, endpoint: 'bench-llm' },
        guard: { steerLimit: 0, noProgressLimit: 10_000, maxSteps: 10_000, maxMs: 3_600_000 },
        tenant,
        resumeWindowMs: 600_000,
      };
      const t0 = performance.now();
      const handles = await Promise.all(
        Array.from({ length: RUNS }, (_, i) =>
          client.workflow.start<typeof agentRun>('agentRun', {
            taskQueue,
            workflowId: `bench-spend-${c}-${i}-${randomUUID()}`,
            args: [input],
          }),
        ),
      );
      const stoppedAt = new Map<number, { ms: number; reason: string | null }>();
      while (stoppedAt.size < RUNS) {
        if (performance.now() - t0 > 600_000)
          throw new Error(`cap $${capUsd}: not every run stopped within 10 minutes`);
        await new Promise((r) => setTimeout(r, 250));
        await Promise.all(
          handles.map(async (h, i) => {
            if (stoppedAt.has(i)) return;
            const s = await h.query(statusQuery);
            if (s.waitingForResume || s.terminalState !== null)
              stoppedAt.set(i, { ms: performance.now() - t0, reason: s.guardReason ?? s.terminalState });
          }),
        );
      }
      const requests = model.completionRequests().length - before;
      const st = await store.status(tenant);
      const times = [...stoppedAt.values()].map((s) => s.ms);
      const reasons = [...stoppedAt.values()].map((s) => s.reason);
      rows.push({
        capUsd,
        billedUsd: round(requests * PER_REQUEST_USD),
        requests,
        usedOfCap: (requests * PER_REQUEST_USD) / capUsd,
        reservedUnbilledUsd: round(st.inFlightUsd + st.expiredUsd),
        runsStoppedSpendLimit: reasons.filter((r) => r === 'spend_limit').length,
        otherStops: reasons.filter((r) => r !== 'spend_limit').map(String),
        firstStopMs: Math.min(...times),
        lastStopMs: Math.max(...times),
        refused: st.calls.refused,
      });
      await Promise.all(handles.map((h) => h.terminate('bench done').catch(() => undefined)));
    }
  } finally {
    for (const w of workers) w.worker.shutdown();
    for (const w of workers) {
      await w.running.catch(() => undefined);
      await w.deps.close();
      await w.native.close();
    }
    await ledger.close();
    await connection.close();
    await server.stop();
    await model.close();
    await pg.drop().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }

  const met = rows.every(
    (r) => r.billedUsd <= r.capUsd && r.runsStoppedSpendLimit === RUNS && r.reservedUnbilledUsd === 0,
  );
  const totalMs = performance.now() - wall0;
  if (json) {
    process.stdout.write(
      `${JSON.stringify({ runs: RUNS, workers: WORKERS, perRequestUsd: PER_REQUEST_USD, rows, met, totalMs })}\n`,
    );
    return;
  }
  const out = [
    '',
    `Tenant spend limit: ${RUNS} concurrent runs of one tenant on ${WORKERS} workers sharing PostgreSQL; the model server`,
    `bills ${PROMPT} + ${COMPLETION} tokens of gpt-4o-mini = $${PER_REQUEST_USD} per request`,
    '',
    '| cap | billed (server) | requests | used of cap | reserved-but-unbilled at end | runs stopped spend_limit | first stop | last stop | refused reservations |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map(
      (r) =>
        `| $${r.capUsd} | $${r.billedUsd} | ${r.requests} | ${(r.usedOfCap * 100).toFixed(1)}% | $${r.reservedUnbilledUsd} | ${r.runsStoppedSpendLimit}/${RUNS}${r.otherStops.length ? ` (others: ${r.otherStops.join(', ')})` : ''} | ${(r.firstStopMs / 1000).toFixed(1)} s | ${(r.lastStopMs / 1000).toFixed(1)} s | ${r.refused} |`,
    ),
    '',
    `target: billed ≤ cap, every run stopped spend_limit, nothing left reserved -> ${met ? 'MET' : 'NOT MET'}`,
    '',
    `total bench time ${(totalMs / 1000).toFixed(1)} s`,
    '',
  ];
  process.stdout.write(out.join('\n'));
}

function round(usd: number): number {
  return Math.round(usd * 1e10) / 1e10;
}

runBench('bench:spend', main);
