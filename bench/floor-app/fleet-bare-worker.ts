/**
 * The hand-written twin of bench:fleet (bench/fleet-twin.ts), one of its processes: a bare
 * Temporal worker (bench/floor-workflow.ts: one activity call per step) whose activity keeps
 * its own idempotency record in PostgreSQL — `INSERT … ON CONFLICT (op_key) DO NOTHING` on the
 * operation key in the same transaction as the effect row, a duplicate answered from the
 * record. Payloads through the package's codec when AGENT_CODEC_KEYS is set. Compiled into the
 * bench's app; run with plain `node`.
 *
 * Environment: TEMPORAL_ADDRESS, FLOOR_TASK_QUEUE, FLEET_DB_URL, FLEET_POOL (connections, 10),
 * AGENT_CODEC_KEYS (optional).
 */
import { NativeConnection, Worker } from '@temporalio/worker';
import { Pool } from 'pg';
import { ready, serveParent } from './ipc';

/** One step's arguments and answer (bench/floor-workflow.ts). */
interface FloorStep {
  readonly tag: string;
  readonly n: number;
}

async function main(): Promise<void> {
  const pool = new Pool({
    connectionString: process.env.FLEET_DB_URL!,
    max: Number(process.env.FLEET_POOL ?? 10),
  });
  const once = async (key: string, n: number): Promise<{ n: number }> => {
    const c = await pool.connect();
    try {
      await c.query('BEGIN');
      const claimed = await c.query(
        'INSERT INTO twin_ops (op_key, result) VALUES ($1, $2) ON CONFLICT (op_key) DO NOTHING',
        [key, JSON.stringify({ n })],
      );
      let result = { n };
      if (claimed.rowCount === 1) {
        await c.query('INSERT INTO twin_effects (op_key, n) VALUES ($1, $2)', [key, n]);
      } else {
        const prior = await c.query<{ result: string }>('SELECT result FROM twin_ops WHERE op_key = $1', [
          key,
        ]);
        result = JSON.parse(prior.rows[0]!.result) as { n: number };
      }
      await c.query('COMMIT');
      return result;
    } catch (err) {
      await c.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      c.release();
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
      floorOnce: (a: FloorStep) => once(`twin:${a.tag}:${a.n}`, a.n),
    },
    ...codec,
  });
  serveParent(() => worker.shutdown());
  const running = worker.run();
  ready();
  await running;
  await pool.end();
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`twin worker: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
