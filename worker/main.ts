/**
 * `npm run worker`: one process hosting the agent-run workflow and its activities.
 * Settings come from the environment (worker/env.ts; TLS and API keys via envconfig).
 */
import { NativeConnection, Runtime } from '@temporalio/worker';
import { createAgentWorker, openWorkerDeps, type WorkerDeps } from './create-worker';
import { loadConnectionOptions, readSearchAttributesMode, readWorkerEnv } from './env';
import { ensureSearchAttributes } from './search-attributes';
import { createTelemetry } from './telemetry';

async function run(): Promise<void> {
  const env = readWorkerEnv();
  const saMode = readSearchAttributesMode();
  // OTEL_* (worker/telemetry.ts; off when unset). The Temporal core's own metrics need the
  // runtime installed with the exporter before the first connection creates a default one.
  const telemetry = createTelemetry(process.env);
  if (telemetry.runtimeOptions) Runtime.install(telemetry.runtimeOptions);
  const { connectionOptions, namespace } = loadConnectionOptions();
  let connection: NativeConnection;
  try {
    connection = await NativeConnection.connect(connectionOptions);
  } catch (err) {
    throw new Error(
      `cannot reach Temporal at ${connectionOptions.address} (${(err as Error).message}). ` +
        'Start a dev server with "npm run dev:server" or set TEMPORAL_ADDRESS.',
    );
  }
  let deps: WorkerDeps | undefined;
  try {
    // Before polling: on a namespace without the search attributes every run would fail its
    // workflow task with BadSearchAttributes, forever (issue #8). Register them or exit.
    if (saMode !== 'skip') {
      const { registered } = await ensureSearchAttributes(connection, namespace, {
        register: saMode === 'register',
      });
      if (registered.length > 0)
        console.log(
          `worker: registered search attributes ${registered.join(', ')} in namespace ${namespace}`,
        );
    }
    deps = await openWorkerDeps({ ledgerUrl: env.ledgerUrl, worldUrl: env.worldUrl });
    // Worker.run() shuts down gracefully on SIGINT/SIGTERM (the SDK installs the handlers).
    const worker = await createAgentWorker({
      connection,
      namespace,
      taskQueue: env.taskQueue,
      deps,
      searchAttributes: 'skip', // checked above
      ...telemetry.workerOptions(deps.registry),
    });
    console.log(
      `worker: task queue ${env.taskQueue} on ${connectionOptions.address} (namespace ${namespace})`,
    );
    if (telemetry.enabled)
      console.log(
        `worker: OpenTelemetry on (traces ${telemetry.config.traces.exporter}, metrics ${telemetry.config.metrics.exporter})`,
      );
    await worker.run();
  } finally {
    await connection.close();
    await deps?.close();
    await telemetry.shutdown(); // flushes what the last runs recorded
  }
}

run().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
