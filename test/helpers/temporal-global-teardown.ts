/** jest globalTeardown: stops the dev server started by temporal-global-setup.ts (if it started one) and removes the run's scratch directory. */
import { removeScratchDir } from './scratch-dir';
import { TEST_ADDRESS_ENV } from './temporal-env';

export default async function globalTeardown(): Promise<void> {
  const env = globalThis.__TEMPORAL_TEST_ENV__;
  if (env) {
    await env.teardown();
    globalThis.__TEMPORAL_TEST_ENV__ = undefined;
    delete process.env[TEST_ADDRESS_ENV];
  }
  removeScratchDir();
}
