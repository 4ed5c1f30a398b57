/**
 * `npm run bench:run`'s fleet rows: the same live write runs on 1 worker process and on 3
 * worker processes sharing one PostgreSQL ledger (a private instance, scripts/chaos/postgres.ts).
 * Each process is `npm run worker`'s worker with the chaos write tool (its side effect: one
 * PostgreSQL row) and no pause, spawned by the chaos harness's Fleet; nothing is killed here.
 * Every step is a real ledger write (claim → dispatch → effect → commit).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { Pool } from 'pg';
import { openLedger } from '../storage/ledger';
import { dataConverterOf, loadPayloadCodec } from '../codec';
import type { RunInput, RunResult } from '../common/contracts';
import { createEffectsTable } from '../scripts/chaos/effects';
import { Fleet } from '../scripts/chaos/fleet';
import { startPrivatePostgres } from '../scripts/chaos/postgres';
import { ChaosTemporal } from '../scripts/chaos/temporal';
import { CHAOS_TOOL } from '../scripts/chaos/tool';
import { agentRunResult } from '../client/runs';

/** One fleet row. */
export interface FleetRow {
  readonly workers: number;
  readonly runs: number;
  readonly stepsPerRun: number;
  readonly stepsPerSec: number;
  readonly ms: number;
  /** Side-effect rows over ledger SUCCEEDED records (both must equal runs × steps). */
  readonly effects: number;
  readonly succeeded: number;
}

/** A live scripted run of `writes` chaos-tool writes, the last one terminal (also bench/inflight.ts). */
export function fleetRunInput(tag: string, writes: number): RunInput {
  return {
    goal: `bench fleet ${tag}`,
    planner: {
      kind: 'scripted',
      live: true,
      script: {
        calls: Array.from({ length: writes }, (_, n) => ({
          tool: CHAOS_TOOL,
          args: { run: tag, n, ...(n === writes - 1 ? { final: true } : {}) },
        })),
        // (no kills here: a final write is never answered from the ledger, so it ends the run)
      },
    },
    guard: { maxSteps: writes + 10, maxMs: 1e12, noProgressLimit: writes + 10 },
    resumeWindowMs: 1000,
  };
}

/** Measures live write runs on each fleet size in `sizes` (a fresh ledger database per size). */
export async function fleetRows(
  bundleCode: string,
  sizes: readonly number[],
  runs: number,
  writes: number,
  log: (m: string) => void,
): Promise<FleetRow[]> {
  const dir = mkdtempSync(join(tmpdir(), 'alg-bench-fleet-'));
  const pg = await startPrivatePostgres();
  const temporal = await ChaosTemporal.start(dir).catch(async (err: unknown) => {
    pg.destroy();
    throw err;
  });
  const connection = await Connection.connect({ address: temporal.address });
  // The workers encrypt payloads (the default): this client reads them with the same fresh key.
  const codecKeys = `k1:${randomBytes(32).toString('base64')}`;
  const dataConverter = dataConverterOf(loadPayloadCodec({ AGENT_CODEC_KEYS: codecKeys }));
  const client = new Client({ connection, namespace: 'default', dataConverter });
  const bundlePath = join(dir, 'bundle.js');
  writeFileSync(bundlePath, bundleCode);
  const admin = new Pool({ connectionString: pg.url, max: 2 });
  const rows: FleetRow[] = [];
  try {
    await createEffectsTable(admin);
    const ledgerUrl = `${pg.url}?pool_max=10`;
    await (await openLedger(ledgerUrl)).close();
    for (const size of sizes) {
      await admin.query('TRUNCATE chaos_effects, ledger_records');
      const taskQueue = `bench-fleet-${randomUUID()}`;
      const fleet = new Fleet(
        {
          temporalAddress: temporal.address,
          taskQueue,
          ledgerUrl,
          effectsUrl: pg.url,
          bundlePath,
          dir,
          leaseMs: 30_000,
          maxPauseMs: 1,
          codecKeys,
        },
        size,
        log,
      );
      try {
        await fleet.startAll();
        const tag = randomUUID().slice(0, 8);
        const t0 = performance.now();
        const handles = await Promise.all(
          Array.from({ length: runs }, (_, i) =>
            client.workflow.start('agentRun', {
              taskQueue,
              workflowId: `bench-fleet-${tag}-${i}`,
              args: [fleetRunInput(`${tag}-${i}`, writes)],
            }),
          ),
        );
        const results = (await Promise.all(handles.map((h) => agentRunResult(h)))) as RunResult[];
        const ms = performance.now() - t0;
        for (const r of results) {
          if (r.terminal_state !== 'COMPLETED')
            throw new Error(`fleet run ${r.workflow_id} ended ${r.terminal_state} ${r.reason}`);
        }
        const effects = Number((await admin.query('SELECT count(*) AS n FROM chaos_effects')).rows[0].n);
        const succeeded = Number(
          (await admin.query("SELECT count(*) AS n FROM ledger_records WHERE state = 'SUCCEEDED'")).rows[0].n,
        );
        rows.push({
          workers: size,
          runs,
          stepsPerRun: writes,
          stepsPerSec: (runs * writes) / (ms / 1000),
          ms,
          effects,
          succeeded,
        });
        log(`  ${size} worker process(es): ${((runs * writes) / (ms / 1000)).toFixed(1)} steps/s`);
      } finally {
        await fleet.stopAll();
      }
    }
  } finally {
    await admin.end().catch(() => undefined);
    await connection.close().catch(() => undefined);
    await temporal.stop().catch(() => undefined);
    pg.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
  return rows;
}
