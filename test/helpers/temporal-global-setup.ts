/**
 * jest globalSetup: ONE Temporal dev server for the whole test run, started with
 * `TestWorkflowEnvironment.createLocal` from the locally installed CLI
 * (`executable: { type: 'existing-path' }` — the SDK's own download cannot work offline).
 * In-memory, random port, search attributes registered. Its address goes to
 * TEMPORAL_TEST_ADDRESS, which the jest workers inherit; test/helpers/temporal-env.ts
 * `createTestEnv()` connects to it. If TEMPORAL_TEST_ADDRESS is already set (an external
 * server), nothing is started.
 */
import { createTestEnv, TEST_ADDRESS_ENV } from './temporal-env';
import type { TestWorkflowEnvironment } from '@temporalio/testing';

declare global {
  var __TEMPORAL_TEST_ENV__: TestWorkflowEnvironment | undefined;
}

export default async function globalSetup(): Promise<void> {
  if (process.env[TEST_ADDRESS_ENV]) return;
  const env = await createTestEnv({ ownServer: true });
  globalThis.__TEMPORAL_TEST_ENV__ = env;
  process.env[TEST_ADDRESS_ENV] = env.address;
}
