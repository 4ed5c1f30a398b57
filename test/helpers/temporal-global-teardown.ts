/** jest globalTeardown: stops the dev server started by temporal-global-setup.ts (if it started one). */
import type { DevServerHandle } from '../../scripts/dev-server';
import { TEST_ADDRESS_ENV } from './temporal-env';

export default async function globalTeardown(): Promise<void> {
  const server = (globalThis as { __TEMPORAL_TEST_SERVER__?: DevServerHandle }).__TEMPORAL_TEST_SERVER__;
  if (!server) return;
  await server.stop();
  delete (globalThis as { __TEMPORAL_TEST_SERVER__?: DevServerHandle }).__TEMPORAL_TEST_SERVER__;
  delete process.env[TEST_ADDRESS_ENV];
}
