/**
 * jest globalSetup: ONE Temporal dev server for the whole test run (in-memory, headless, random
 * port, search attributes registered). Its address goes to TEMPORAL_TEST_ADDRESS, which the jest
 * workers inherit; test/helpers/temporal-env.ts `createTestEnv()` connects to it.
 * If TEMPORAL_TEST_ADDRESS is already set (an external server), nothing is started.
 */
import { startDevServer, type DevServerHandle } from '../../scripts/dev-server';
import { TEST_ADDRESS_ENV } from './temporal-env';

declare global {
  var __TEMPORAL_TEST_SERVER__: DevServerHandle | undefined;
}

export default async function globalSetup(): Promise<void> {
  if (process.env[TEST_ADDRESS_ENV]) return;
  const server = await startDevServer({
    ip: '127.0.0.1',
    port: 0,
    headless: true,
    dbFile: null,
    quiet: true,
    logLevel: 'error',
  });
  globalThis.__TEMPORAL_TEST_SERVER__ = server;
  process.env[TEST_ADDRESS_ENV] = server.address;
}
