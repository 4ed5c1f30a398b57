/**
 * What the demo runs on: a Temporal server (one already answering, or the dev server it
 * starts), an in-process worker over a fresh demo database, and agentctl's own client
 * connection (../connect.ts), so the demo reaches the server exactly as agentctl does.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { SEARCH_ATTRIBUTES } from '../common/search-attributes';
import { startDevServer, type DevServerHandle } from '../devserver/dev-server';
import { ensureTemporalCli } from '../devserver/temporal-cli';
import { createAgentWorker } from '../worker/create-worker';
import { dataConverterOf } from '../codec';
import { loadConnectionOptions } from '../worker/env';
import { codecSettings, connect, connectionSettings, type Connected } from '../client/connect';
import { uiBaseFor } from '../client/format';
import { openDemoWorkerDeps, type DemoWorkerDeps } from './deps';

/** The running demo stack. */
export interface DemoStack {
  readonly connected: Connected;
  readonly deps: DemoWorkerDeps;
  /** The dev server this demo started; null when it reuses one. */
  readonly server: DevServerHandle | null;
  readonly uiBase: string;
  /** The demo database (ledger + world). */
  readonly dbFile: string;
  /** Timestamp part of this demo's file and workflow ids. */
  readonly stamp: string;
  /** Resolves when the worker has stopped (after `stop()`, or SIGINT/SIGTERM). */
  readonly workerDone: Promise<void>;
  /** Stops the worker (if it still runs) and closes everything this stack opened. */
  stop(): Promise<void>;
}

/** Options of {@link startStack}. */
export interface StackOptions {
  /** Dev server in memory (and everything stops at the end). */
  readonly once: boolean;
  readonly dataDir: string;
  readonly say: (line?: string) => void;
}

const SERVER_ERROR = 'the Temporal server';

/**
 * A client on a server already answering (with the search attributes the runs write), or
 * null when nothing answers. A server without them is an error: starting another one on
 * the same port cannot work.
 */
async function reuseServer(env: NodeJS.ProcessEnv, address: string): Promise<Connected | null> {
  let c: Connected | undefined;
  try {
    c = await connect(env, 1_500);
    const res = await c.connection.operatorService.listSearchAttributes({ namespace: c.namespace });
    const have = Object.keys(res.customAttributes ?? {});
    const missing = Object.keys(SEARCH_ATTRIBUTES).filter((n) => !have.includes(n));
    if (missing.length) {
      throw new Error(
        `${SERVER_ERROR} at ${address} answers but lacks the search attributes ${missing.join(', ')}; ` +
          'stop it and run `npm run dev:server` (it registers them), or set TEMPORAL_ADDRESS to another port',
      );
    }
    return c;
  } catch (err) {
    await c?.close().catch(() => undefined);
    if ((err as Error).message.startsWith(SERVER_ERROR)) throw err;
    return null;
  }
}

/** Brings the stack up, printing what it does. */
export async function startStack(o: StackOptions): Promise<DemoStack> {
  const { say } = o;
  const env = process.env;
  try {
    Runtime.install({ logger: new DefaultLogger('WARN') });
  } catch {
    // Already installed.
  }
  const { options } = connectionSettings(env);
  const address = options.address;
  // Encrypted by default: on first start against a local server this creates the default key
  // file (~/.config/agent-loop-guard/codec-keys.json, 0600); agentctl, the codec server and
  // `npm run worker` find the same file from any directory.
  const codec = codecSettings(env, options);
  say(codec.codec ? `▸ payloads encrypted (${codec.source})` : `▸ payloads NOT encrypted (${codec.source})`);

  let server: DevServerHandle | null = null;
  let uiBase = uiBaseFor(address, env);
  let connected = await reuseServer(env, address);
  if (connected) {
    say(`▸ Temporal server already answering at ${address} — reusing it`);
  } else {
    say('▸ Temporal CLI…');
    const cli = await ensureTemporalCli();
    say(`  ${relative(process.cwd(), cli) || cli}`);
    say(`▸ starting the Temporal dev server on ${address}${o.once ? ' (in-memory: --once)' : ''}…`);
    // The Web UI decodes through a codec server on loopback, so a run's summary, details,
    // input and result read as text there (docs/ui.md).
    server = await startDevServer({
      quiet: true,
      cliPath: cli,
      ...(o.once ? { dbFile: null } : {}),
      ...(codec.codec ? { uiCodec: codec.codec } : {}),
    });
    uiBase = server.uiUrl ?? uiBase;
    say(`  ready: ${server.address}, Web UI ${uiBase}`);
    if (server.uiCodecUrl) say(`  the Web UI decodes payloads through the codec server ${server.uiCodecUrl}`);
    connected = await connect(env, 5_000);
  }

  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace(/\..*$/, '').replace('T', '-');
  mkdirSync(o.dataDir, { recursive: true });
  const dbFile = join(o.dataDir, `demo-${stamp}-${randomUUID().slice(0, 4)}.db`);
  const dbUrl = `sqlite:${dbFile}`;
  const deps = await openDemoWorkerDeps({ ledgerUrl: dbUrl, worldUrl: dbUrl, pollAfterMs: 300 });
  const { taskQueue, namespace } = connected;
  say(`▸ worker: task queue ${taskQueue}, ledger + demo world ${relative(process.cwd(), dbFile)}`);
  // The worker connects the worker's way (envconfig options as worker/run-worker.ts uses them).
  const nativeConnection = await NativeConnection.connect(loadConnectionOptions(env).connectionOptions);
  const worker = await createAgentWorker({
    connection: nativeConnection,
    namespace,
    taskQueue,
    deps,
    dataConverter: dataConverterOf(codec),
  });
  const workerDone = worker.run().catch(() => undefined);
  const client = connected;

  return {
    connected: client,
    deps,
    server,
    uiBase,
    dbFile,
    stamp,
    workerDone,
    async stop() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await workerDone;
      await nativeConnection.close().catch(() => undefined);
      await client.close().catch(() => undefined);
      await deps.close().catch(() => undefined);
      await server?.stop();
    },
  };
}
