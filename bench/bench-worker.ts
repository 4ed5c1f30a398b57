/**
 * What the benches that drive durable runs share: one worker with the real workflow and
 * activities on a dev server the bench started, a client with the same (fresh, encrypted)
 * data converter, and the teardown in the right order; and the benches' exit handling.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { Client, Connection, type ConnectionOptions } from '@temporalio/client';
import { NativeConnection, type Worker } from '@temporalio/worker';
import { dataConverterOf, loadPayloadCodec } from '../codec';
import { createAgentWorker, type WorkerDeps } from '../worker/create-worker';

/** A running bench worker and its client. */
export interface BenchWorker {
  readonly client: Client;
  readonly worker: Worker;
  readonly taskQueue: string;
  /** Stops the worker, then closes the deps and both connections (not the server). */
  close(): Promise<void>;
}

/** Starts one worker over `deps` on the server at `address`; payloads encrypted under a fresh key. */
export async function startBenchWorker(o: {
  readonly address: string;
  readonly namespace: string;
  readonly deps: WorkerDeps;
  readonly workflowBundle: { code: string };
  readonly name: string;
  readonly channelArgs?: ConnectionOptions['channelArgs'];
}): Promise<BenchWorker> {
  const native = await NativeConnection.connect({ address: o.address });
  const connection = await Connection.connect({
    address: o.address,
    ...(o.channelArgs ? { channelArgs: o.channelArgs } : {}),
  });
  // Payloads are encrypted (the default policy): worker and client share one fresh key.
  const dataConverter = dataConverterOf(
    loadPayloadCodec({ AGENT_CODEC_KEYS: `k1:${randomBytes(32).toString('base64')}` }),
  );
  const client = new Client({ connection, namespace: o.namespace, dataConverter });
  const taskQueue = `bench-${o.name}-${randomUUID()}`;
  const worker = await createAgentWorker({
    dataConverter,
    connection: native,
    namespace: o.namespace,
    taskQueue,
    deps: o.deps,
    workflowBundle: o.workflowBundle,
  });
  const running = worker.run();
  return {
    client,
    worker,
    taskQueue,
    async close() {
      worker.shutdown();
      await running.catch(() => undefined);
      await o.deps.close();
      await connection.close();
      await native.close();
    },
  };
}

/** Runs a bench's `main` and exits: 0 when it finished, 1 with its stack when it threw. */
export function runBench(name: string, main: () => Promise<void>): void {
  main().then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(
        `${name} failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
      );
      process.exit(1);
    },
  );
}
