/**
 * A worker in a process of its own, for a test that SIGKILLs it (test/conversation/worker-kill.test.ts):
 * the real worker (createAgentWorker over the demo deps) on the shared test server, the run's
 * task queue and SQLite file, the test's payload codec and the jest run's shared bundle. Prints
 * `ready` once it polls. Environment: TEMPORAL_TEST_ADDRESS, CONV_TASK_QUEUE, CONV_DB_URL,
 * AGENT_MODEL_ENDPOINTS (and the codec keys and bundle path jest's globalSetup exported).
 */
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { createAgentWorker } from '../../worker/create-worker';
import { openDemoWorkerDeps } from '../../demo/deps';
import { sharedWorkflowBundle } from './shared-bundle';
import { testDataConverter } from './temporal-env';

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const url = process.env.CONV_DB_URL!;
  const connection = await NativeConnection.connect({ address: process.env.TEMPORAL_TEST_ADDRESS! });
  const deps = await openDemoWorkerDeps({ ledgerUrl: url, worldUrl: url, pollAfterMs: 100 });
  const worker = await createAgentWorker({
    connection,
    namespace: 'default',
    taskQueue: process.env.CONV_TASK_QUEUE!,
    deps,
    dataConverter: testDataConverter(),
    workflowBundle: await sharedWorkflowBundle(),
  });
  const running = worker.run();
  process.stdout.write('ready\n');
  await running;
}

main().catch((err: unknown) => {
  process.stderr.write(`conversation worker: ${String(err)}\n`);
  process.exit(1);
});
