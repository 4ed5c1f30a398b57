/**
 * jest globalSetup, once per run, before the workers start (they inherit what it puts in
 * process.env):
 *  - below the Node floor (common/node-floor.ts) it says so and exits 1;
 *  - the run's scratch directory becomes TMPDIR (scratch-dir.ts: /dev/shm when it has room);
 *  - ONE Temporal dev server for the whole test run, started with
 *    `TestWorkflowEnvironment.createLocal` from the locally installed CLI
 *    (`executable: { type: 'existing-path' }` — the SDK's own download cannot work offline).
 *    In-memory, random port, search attributes registered, short timers on time
 *    (temporal-env.ts TEST_DYNAMIC_CONFIG). Its address goes to TEMPORAL_TEST_ADDRESS;
 *    test/helpers/temporal-env.ts `createTestEnv()` connects to it. If TEMPORAL_TEST_ADDRESS is
 *    already set (an external server), none is started;
 *  - ONE workflow bundle, written to a file the workers load (shared-bundle.ts).
 */
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { NODE_FLOOR_MAJOR, nodeFloorProblem } from '../../common/node-floor';
import { enterScratchDir } from './scratch-dir';
import { writeSharedBundle } from './shared-bundle';

declare global {
  var __TEMPORAL_TEST_ENV__: TestWorkflowEnvironment | undefined;
}

export default async function globalSetup(): Promise<void> {
  // Below the Node floor the SQLite ledger cannot load (no node:sqlite): say so and stop.
  const problem = nodeFloorProblem(process.versions.node, 'npm test');
  if (problem !== undefined) {
    process.stderr.write(
      `\n${problem}\nOr install Node ${NODE_FLOOR_MAJOR} (nvm install ${NODE_FLOOR_MAJOR}).\n`,
    );
    process.exit(1);
  }
  const dir = enterScratchDir();
  // Loaded only now: temporal-env.ts makes the test config home under TMPDIR when it loads.
  const { createTestEnv, TEST_ADDRESS_ENV } = await import('./temporal-env');
  const server = async (): Promise<void> => {
    if (process.env[TEST_ADDRESS_ENV]) return;
    const env = await createTestEnv({ ownServer: true });
    globalThis.__TEMPORAL_TEST_ENV__ = env;
    process.env[TEST_ADDRESS_ENV] = env.address;
  };
  await Promise.all([server(), writeSharedBundle(dir)]);
}
