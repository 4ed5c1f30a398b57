/**
 * The guarded worker of bench:floor's packed measurement, written as an app writes it from
 * docs/using.md ("Your own worker") and docs/own-agent.md: `openWorkerDeps({ tools, store })` and
 * `createAgentWorker({ connection, namespace, taskQueue, deps })`, which bundles the workflow
 * itself and takes its payload codec from the environment (AGENT_CODEC_KEYS). Compiled into the
 * bench's app and loaded from the installed tarball (bench/floor-packed.ts rewrites the import
 * of the package entry); run with plain `node`.
 *
 * Tools: `floor_read` (answers from its args), `floor_write` (one insert in the ledger's
 * transaction: `atomicWithLedger` over a store in the ledger's SQLite file), `floor_write_own`
 * (one insert into the tool's own SQLite file, as examples/own-agent's ticket store: its own
 * transaction between the ledger's claim and commit).
 *
 * Environment: TEMPORAL_ADDRESS, FLOOR_TASK_QUEUE, FLOOR_DIR (the ledger and the tool's file),
 * AGENT_CODEC_KEYS.
 */
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { NativeConnection } from '@temporalio/worker';
import { z } from 'zod';
import { createAgentWorker, defineTool, openWorkerDeps } from '../../index';
import { ready, serveParent } from './ipc';

async function main(): Promise<void> {
  const dir = process.env.FLOOR_DIR!;
  const ledgerFile = join(dir, 'agent.db');
  const own = new DatabaseSync(join(dir, 'own.db'));
  own.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL');
  own.exec('CREATE TABLE IF NOT EXISTS floor_effects (key TEXT PRIMARY KEY, n INTEGER NOT NULL)');
  const ownInsert = own.prepare('INSERT INTO floor_effects (key, n) VALUES (?, ?)');
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
      name: 'floor_write_own',
      description: "bench: one insert in the tool's own database",
      effect: 'write',
      usesWorldTransaction: false,
      schema: args,
      operationKey: (a) => `floor-own:${a.tag}:${a.n}`,
      execute(a, ctx) {
        ownInsert.run(ctx.operationKey, a.n);
        return { data: { n: a.n }, terminal: a.final === true };
      },
    }),
  ];
  // A store in the ledger's file (docs/using.md, `ctx.tx`): floor_write's insert commits with
  // its ledger record. The effects table is the app's own, created before the worker starts.
  const db = new DatabaseSync(ledgerFile);
  db.exec('CREATE TABLE IF NOT EXISTS floor_effects (key TEXT PRIMARY KEY, n INTEGER NOT NULL)');
  db.close();
  const noTx = {
    run: () => Promise.reject(new Error('no store connection')),
    all: () => Promise.reject(new Error('no store connection')),
    get: () => Promise.reject(new Error('no store connection')),
  };
  const deps = await openWorkerDeps({
    ledgerUrl: `sqlite:${ledgerFile}`,
    tools,
    store: { file: ledgerFile, tx: noTx, transaction: (fn) => fn(noTx) },
    configPath: null,
  });
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
  own.close();
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(
      `product worker: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    process.exit(1);
  },
);
