/**
 * `npm run worker`: one process hosting the agent-run workflow and its activities.
 * Settings come from the environment (worker/env.ts; TLS and API keys via envconfig).
 */
import { NativeConnection } from '@temporalio/worker';
import { createAgentWorker, openWorkerDeps } from './create-worker';
import { loadConnectionOptions, readWorkerEnv } from './env';

async function run(): Promise<void> {
  const env = readWorkerEnv();
  const { connectionOptions, namespace } = loadConnectionOptions();
  const deps = await openWorkerDeps({ ledgerUrl: env.ledgerUrl, worldUrl: env.worldUrl });
  let connection: NativeConnection;
  try {
    connection = await NativeConnection.connect(connectionOptions);
  } catch (err) {
    await deps.close();
    throw new Error(
      `cannot reach Temporal at ${connectionOptions.address} (${(err as Error).message}). ` +
        'Start a dev server with "npm run dev:server" or set TEMPORAL_ADDRESS.',
    );
  }
  try {
    // Worker.run() shuts down gracefully on SIGINT/SIGTERM (the SDK installs the handlers).
    const worker = await createAgentWorker({ connection, namespace, taskQueue: env.taskQueue, deps });
    console.log(
      `worker: task queue ${env.taskQueue} on ${connectionOptions.address} (namespace ${namespace})`,
    );
    await worker.run();
  } finally {
    await connection.close();
    await deps.close();
  }
}

run().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
