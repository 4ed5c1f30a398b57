/**
 * A real Temporal dev server for workflow tests — no downloads, no Docker.
 *
 * Usage in a test file:
 *
 *   import { createTestEnv, uniqueTaskQueue } from './temporal-env';
 *   let env: TestWorkflowEnvironment;
 *   beforeAll(async () => { env = await createTestEnv(); });
 *   afterAll(async () => { await env?.teardown(); });
 *   // Worker.create({ connection: env.nativeConnection, namespace: env.namespace ?? 'default',
 *   //                 taskQueue: uniqueTaskQueue('agent-run'), workflowsPath: …, activities })
 *   // env.client.workflow.start(…, { taskQueue, workflowId: uniqueId('run') })
 *
 * Two modes, chosen automatically:
 *  - SHARED (default under `npm test`): jest's globalSetup (test/helpers/temporal-global-setup.ts)
 *    starts ONE dev server with `TestWorkflowEnvironment.createLocal` (existing-path CLI,
 *    in-memory, random port) for the whole run and exports its address as TEMPORAL_TEST_ADDRESS; createTestEnv() connects to it with
 *    `TestWorkflowEnvironment.createFromExistingServer` and teardown() only closes connections.
 *    Test files run in parallel against it, so ALWAYS use unique task queues / workflow ids.
 *  - OWN SERVER (TEMPORAL_TEST_ADDRESS unset, e.g. a single file run without globalSetup):
 *    `TestWorkflowEnvironment.createLocal` spawns a private dev server from the locally installed
 *    CLI (`existing-path`, never the SDK's cached download), with the search attributes from
 *    common/search-attributes.ts registered; teardown() stops it.
 *
 * Either way the search attributes (AgentState, AgentGuardReason, AgentSteps, AgentRootRun) exist in the
 * `default` namespace when createTestEnv() resolves.
 *
 * Payloads are encrypted, as by default in production (docs/security.md): the env's client
 * uses {@link testDataConverter}, and so must every worker of the runs it reads
 * (run-harness.ts does). The key ring comes from the codec's own policy (codec/load-codec.ts)
 * over process.env; see {@link TEST_CODEC_KEY_ENV}.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DataConverter } from '@temporalio/common';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { dataConverterOf, loadPayloadCodec } from '../../codec';
import { SEARCH_ATTRIBUTE_KEYS } from '../../common/search-attributes';
import { ensureTemporalCli } from '../../devserver/temporal-cli';
import { FAST_DISPATCH_DYNAMIC_CONFIG } from '../../devserver/dev-server';

export const TEST_ADDRESS_ENV = 'TEMPORAL_TEST_ADDRESS';
export const TEST_NAMESPACE = 'default';

/**
 * The variable that carries the test key ring. Unless keys are configured already (or
 * AGENT_CODEC=off), loading this module sets AGENT_CODEC_KEYS to a fresh random key, so this
 * process and every process a test spawns with process.env (`npm run worker`, agentctl, the
 * demo) share one ring, as a deployment's workers and clients do.
 */
export const TEST_CODEC_KEY_ENV = 'AGENT_CODEC_KEYS';
if (!process.env.AGENT_CODEC_KEYS && !process.env.AGENT_CODEC_KEY_FILE) {
  process.env[TEST_CODEC_KEY_ENV] =
    `test-${randomBytes(3).toString('hex')}:${randomBytes(32).toString('base64')}`;
}

/**
 * A test process's configuration home (XDG_CONFIG_HOME), a fresh temporary directory: a
 * process a test starts without the test keys (e.g. `npm run worker` with AGENT_* taken away,
 * test/worker/search-attributes.test.ts) creates its default payload key file
 * (codec/load-codec.ts: `$XDG_CONFIG_HOME/agent-loop-guard/codec-keys.json`) there, never in
 * the real ~/.config. Kept when it is one of these already (a child of a test process).
 */
const TEST_CONFIG_HOME_PREFIX = join(tmpdir(), 'alg-test-config-');
if (!process.env.XDG_CONFIG_HOME?.startsWith(TEST_CONFIG_HOME_PREFIX))
  process.env.XDG_CONFIG_HOME = mkdtempSync(TEST_CONFIG_HOME_PREFIX);

/** The data converter of every test client and worker (the codec of process.env, see above). */
export function testDataConverter(): DataConverter {
  return dataConverterOf(loadPayloadCodec(process.env));
}

/**
 * The test server's `--dynamic-config-value`s: fast workflow-task dispatch
 * (devserver/dev-server.ts FAST_DISPATCH_DYNAMIC_CONFIG), and timers that fire on time. The
 * server never fires a timer (a `sleep`, a `condition` timeout, an activity retry's backoff)
 * earlier than its timer queue's read level, now + `history.timerProcessorMaxTimeShift`
 * (default 1 s): a 100 ms poll wait or a 300 ms resume window takes a second. At 50 ms the
 * tests' short timers last what they say.
 */
export const TEST_DYNAMIC_CONFIG: readonly string[] = [
  ...FAST_DISPATCH_DYNAMIC_CONFIG,
  'history.timerProcessorMaxTimeShift="50ms"',
];

export interface CreateTestEnvOptions {
  /** Force a private server even when a shared one is available (e.g. a test that kills the server). */
  ownServer?: boolean;
  /** Extra `temporal server start-dev` args for a private server (default: {@link TEST_DYNAMIC_CONFIG}). */
  extraArgs?: string[];
}

/** A `TestWorkflowEnvironment` on a real dev server; see the module comment. Always call `teardown()`. */
export async function createTestEnv(options: CreateTestEnvOptions = {}): Promise<TestWorkflowEnvironment> {
  const shared = process.env[TEST_ADDRESS_ENV];
  if (shared && !options.ownServer) {
    return TestWorkflowEnvironment.createFromExistingServer({
      address: shared,
      namespace: TEST_NAMESPACE,
      client: { dataConverter: testDataConverter() },
    });
  }
  return TestWorkflowEnvironment.createLocal({
    client: { dataConverter: testDataConverter() },
    server: {
      executable: { type: 'existing-path', path: await ensureTemporalCli({ quiet: true }) },
      ip: '127.0.0.1',
      namespace: TEST_NAMESPACE,
      searchAttributes: [...SEARCH_ATTRIBUTE_KEYS],
      // The SDK's default log format "pretty" is accepted by the CLI; keep the noise down.
      log: { format: 'pretty', level: 'error' },
      // Fast dispatch and prompt timers (TEST_DYNAMIC_CONFIG) unless told otherwise.
      extraArgs: options.extraArgs ?? TEST_DYNAMIC_CONFIG.flatMap((v) => ['--dynamic-config-value', v]),
    },
  });
}

/** `prefix-<uuid>`: task queues and workflow ids must not collide on a shared server. */
export function uniqueId(prefix: string): string {
  return `${prefix}-${randomUUID()}`;
}

export const uniqueTaskQueue = (prefix = 'test'): string => uniqueId(`tq-${prefix}`);
