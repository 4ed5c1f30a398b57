/**
 * The guarded worker of bench:fleet (bench/fleet-twin.ts), one of its processes, written as an
 * app writes it from docs/using.md: `openWorkerDeps({ ledgerUrl: 'postgres://…', tools })` and
 * `createAgentWorker`, the codec from AGENT_CODEC_KEYS. Its write tool keeps its effect in the
 * app's own PostgreSQL table (its own pool, as a tool with its own store does): one row per
 * operation key. Compiled into the bench's app and loaded from the installed tarball.
 *
 * Environment: TEMPORAL_ADDRESS, FLOOR_TASK_QUEUE, LEDGER_URL, FLEET_EFFECTS_URL,
 * AGENT_CODEC_KEYS.
 */
import { NativeConnection } from '@temporalio/worker';
import { Pool } from 'pg';
import { z } from 'zod';
import { createAgentWorker, defineTool, openWorkerDeps } from '../../index';
import { ready, serveParent } from './ipc';

async function main(): Promise<void> {
  const effects = new Pool({ connectionString: process.env.FLEET_EFFECTS_URL!, max: 10 });
  const write = defineTool({
    name: 'fleet_write',
    description: 'bench: one row in the app’s own PostgreSQL table',
    effect: 'write',
    usesWorldTransaction: false,
    schema: z
      .object({ run: z.string().min(1), n: z.number().int().min(0), final: z.boolean().optional() })
      .strict(),
    operationKey: (a) => `fleet:${a.run}:${a.n}`,
    async execute(a, ctx) {
      await effects.query('INSERT INTO fleet_effects (op_key, n) VALUES ($1, $2)', [ctx.operationKey, a.n]);
      return { data: { n: a.n }, terminal: a.final === true };
    },
  });
  const deps = await openWorkerDeps({ ledgerUrl: process.env.LEDGER_URL!, tools: [write], configPath: null });
  const worker = await createAgentWorker({
    connection: await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS! }),
    namespace: 'default',
    taskQueue: process.env.FLOOR_TASK_QUEUE!,
    deps,
  });
  serveParent(() => worker.shutdown());
  const running = worker.run();
  ready();
  await running;
  await deps.close();
  await effects.end();
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(
      `fleet worker: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    process.exit(1);
  },
);
