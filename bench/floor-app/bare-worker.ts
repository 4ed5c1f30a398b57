/**
 * The hand-written twin of bench:floor's packed measurement: a bare Temporal worker in the same
 * app (bench/floor-workflow.ts: a loop of activity calls) whose exactly-once write keeps its own
 * idempotency record in ONE SQLite transaction with the effect (WAL, synchronous=FULL, like the
 * ledger), answering a duplicate from the record. Payloads go through the package's codec when
 * AGENT_CODEC_KEYS is set (the same encryption as the guarded worker), else Temporal's default
 * converter. Compiled into the bench's app; run with plain `node`.
 *
 * Environment: TEMPORAL_ADDRESS, FLOOR_TASK_QUEUE, FLOOR_DIR, AGENT_CODEC_KEYS (optional).
 */
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { NativeConnection, Worker } from '@temporalio/worker';
import { ready, serveParent } from './ipc';

/** One floor step's arguments and answer (bench/floor-workflow.ts). */
interface FloorStep {
  readonly tag: string;
  readonly n: number;
}

async function main(): Promise<void> {
  const db = new DatabaseSync(join(process.env.FLOOR_DIR!, 'bare.db'));
  db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL');
  db.exec(`CREATE TABLE IF NOT EXISTS floor_keys (key TEXT PRIMARY KEY, result TEXT);
           CREATE TABLE IF NOT EXISTS floor_effects (key TEXT PRIMARY KEY, n INTEGER NOT NULL)`);
  const find = db.prepare('SELECT result FROM floor_keys WHERE key = ?');
  const claim = db.prepare('INSERT INTO floor_keys (key) VALUES (?)');
  const effect = db.prepare('INSERT INTO floor_effects (key, n) VALUES (?, ?)');
  const done = db.prepare('UPDATE floor_keys SET result = ? WHERE key = ?');
  const once = (key: string, n: number): { n: number } => {
    db.exec('BEGIN IMMEDIATE');
    try {
      const prior = find.get(key) as { result: string | null } | undefined;
      const result = prior?.result ? (JSON.parse(prior.result) as { n: number }) : { n };
      if (!prior?.result) {
        claim.run(key);
        effect.run(key, n);
        done.run(JSON.stringify(result), key);
      }
      db.exec('COMMIT');
      return result;
    } catch (err) {
      db.exec('ROLLBACK');
      throw err;
    }
  };
  const codec = process.env.AGENT_CODEC_KEYS
    ? await import('../../worker/api').then((w) => ({
        dataConverter: w.dataConverterOf(w.loadPayloadCodec(process.env)),
      }))
    : {};
  const worker = await Worker.create({
    connection: await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS! }),
    namespace: 'default',
    taskQueue: process.env.FLOOR_TASK_QUEUE!,
    workflowsPath: require.resolve('./floor-workflow'),
    activities: {
      async floorPlain(a: FloorStep) {
        return { n: a.n };
      },
      async floorOnce(a: FloorStep) {
        return once(`floor:${a.tag}:${a.n}`, a.n);
      },
    },
    ...codec,
  });
  serveParent(() => worker.shutdown());
  const running = worker.run();
  ready();
  await running;
  db.close();
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bare worker: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
