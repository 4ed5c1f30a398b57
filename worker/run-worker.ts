/**
 * A worker process hosting the agent-run workflow and its activities, its settings from the
 * environment (worker/env.ts; TLS and API keys via envconfig): search attributes, the payload
 * codec, OpenTelemetry, the reaper schedule, graceful shutdown. The entry points choose the
 * tools: worker/main.ts (MCP tools of agent.config.json only) and demo/worker.ts
 * (`npm run worker`: the demo's world and tools).
 */
import { Client, Connection } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import { Runtime } from '@temporalio/worker';
import { dataConverterOf, isLocalDevServer, loadPayloadCodec } from '../codec';
import { connectToTemporal } from './connect-temporal';
import { createAgentWorker, type WorkerDeps } from './create-worker';
import {
  loadConnectionOptions,
  readSearchAttributesMode,
  readTemporalWaitMs,
  readWorkerEnv,
  readWorkerTuning,
  type WorkerEnv,
} from './env';
import { ensureReaperSchedule, readReaperEnv } from './reaper-schedule';
import { ensureSearchAttributes } from './search-attributes';
import { createTelemetry } from './telemetry';

/** Runs a worker until SIGINT/SIGTERM with the deps `openDeps` opens from the environment. */
export async function runWorker(openDeps: (env: WorkerEnv) => Promise<WorkerDeps>): Promise<void> {
  const env = readWorkerEnv();
  const saMode = readSearchAttributesMode();
  const tuning = readWorkerTuning();
  const reaper = readReaperEnv();
  for (const w of reaper.warnings) console.warn(`worker: ${w}`);
  // OTEL_* (worker/telemetry.ts; off when unset). The Temporal core's own metrics need the
  // runtime installed with the exporter before the first connection creates a default one.
  const telemetry = createTelemetry(process.env);
  if (telemetry.runtimeOptions) Runtime.install(telemetry.runtimeOptions);
  const { connectionOptions, namespace } = loadConnectionOptions();
  // Encrypted by default (codec/load-codec.ts): against a local dev server a missing default
  // key file (~/.config/agent-loop-guard/codec-keys.json, absolute: agentctl and the codec
  // server started anywhere find it) is created; anywhere else a worker without keys refuses
  // to start, naming the path it looked at (AGENT_CODEC=off opts out).
  const codec = loadPayloadCodec(process.env, {
    createKeyFile: isLocalDevServer(connectionOptions),
    warn: (m) => console.warn(`worker: ${m}`),
  });
  if (codec.createdKeyFile)
    console.log(`worker: payload encryption key created: ${codec.createdKeyFile} (mode 0600)`);
  const dataConverter = dataConverterOf(codec);
  // Waits for a server started at the same time (AGENT_TEMPORAL_WAIT, worker/connect-temporal.ts).
  const connection = await connectToTemporal(connectionOptions, namespace, { waitMs: readTemporalWaitMs() });
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
    deps = await openDeps(env);
    console.log(`worker: tools ${deps.registry.names().join(', ') || '(none)'}`);
    // Worker.run() shuts down gracefully on SIGINT/SIGTERM (the SDK installs the handlers).
    const worker = await createAgentWorker({
      connection,
      namespace,
      taskQueue: env.taskQueue,
      deps,
      searchAttributes: 'skip', // checked above
      tuning,
      dataConverter,
      ...telemetry.workerOptions(deps.registry),
    });
    if (reaper.enabled)
      await startReaperSchedule(connectionOptions, namespace, env.taskQueue, reaper, dataConverter);
    console.log(`worker: payloads ${codec.codec ? 'encrypted' : 'NOT encrypted'}: ${codec.source}`);
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

/**
 * Creates (or updates) the ledger reaper's schedule. Housekeeping must not keep runs from
 * being served: a failure here (e.g. an API key without schedule permissions) is logged.
 */
async function startReaperSchedule(
  connectionOptions: ReturnType<typeof loadConnectionOptions>['connectionOptions'],
  namespace: string,
  taskQueue: string,
  reaper: ReturnType<typeof readReaperEnv>,
  dataConverter: DataConverter,
): Promise<void> {
  let clientConnection: Connection | undefined;
  try {
    clientConnection = await Connection.connect(connectionOptions);
    const client = new Client({ connection: clientConnection, namespace, dataConverter });
    const { scheduleId, did } = await ensureReaperSchedule(client, { taskQueue, ...reaper });
    console.log(
      `worker: ledger reaper schedule ${scheduleId} ${did} (every ${reaper.intervalMs} ms, retention ${reaper.retentionMs} ms)`,
    );
  } catch (err) {
    console.error(
      `worker: could not create the ledger reaper schedule (${(err as Error).message}); settled ledger records are not reaped. ` +
        'Fix the permission or set AGENT_REAPER=off and reap with "agentctl ledger reap".',
    );
  } finally {
    await clientConnection?.close();
  }
}

/** The entry points' ending: a start failure is one line on stderr and exit 1. */
export function exitOnFailure(p: Promise<void>): void {
  p.catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
