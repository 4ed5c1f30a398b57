/**
 * What the demo runs on: a Temporal server (one already answering, said loudly with whose it
 * is, or the dev server it starts; another user's server on the default address is not
 * reused), an in-process worker over a fresh demo database, and agentctl's own client
 * connection (../connect.ts), so the demo reaches the server exactly as agentctl does.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { SEARCH_ATTRIBUTES } from '../common/search-attributes';
import { freePort, parseAddress, startDevServer, type DevServerHandle } from '../devserver/dev-server';
import { ownerText, portOwner, type PortOwner } from '../devserver/port-owner';
import { ensureTemporalCli } from '../devserver/temporal-cli';
import { createAgentWorker } from '../worker/create-worker';
import { dataConverterOf, isLocalDevServer } from '../codec';
import { DEFAULT_TEMPORAL_ADDRESS, loadConnectionOptions } from '../worker/env';
import { codecSettings, connect, connectionSettings, type Connected } from '../client/connect';
import { uiBaseFor } from '../client/format';
import { queueWorkers } from '../client/workers';
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

/**
 * What the demo says when it runs on a server it did not start: loudly, whose server it is
 * (address, namespace, the user listening there when the system tells) and what that means, and
 * the workers already polling the demo's task queue there (they would take the demo's runs).
 */
async function reusedServerBanner(
  c: Connected,
  address: string,
  owner: PortOwner | null,
  chosen: boolean,
): Promise<string[]> {
  const pollers = await queueWorkers(c, c.taskQueue).catch(() => null);
  const others = pollers?.live ?? [];
  return [
    `▸ Temporal server already answering at ${address} — reusing it: NOT started by this demo`,
    `  ! server ${address}, namespace ${c.namespace}, listening process of ${ownerText(owner)}` +
      `${chosen ? ' (TEMPORAL_ADDRESS names it)' : ''}`,
    "  ! its other runs show beside the demo's (agentctl list, the Web UI), and the demo's runs stay on it",
    ...(others.length
      ? [
          `  ! ${others.length} worker(s) already poll task queue ${c.taskQueue} there (${others.map((p) => p.identity).join(', ')}): ` +
            "they may take the demo's runs; set TEMPORAL_TASK_QUEUE to a queue of the demo's own",
        ]
      : []),
    '  a server of its own: stop that one, or TEMPORAL_ADDRESS=localhost:<free port> npm run demo',
  ];
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
  let serverEnv = env;
  let connected = await reuseServer(env, address);
  // Another user's server on the default port is not reused (its runs would show beside the
  // demo's, and the demo's worker would share its task queue): the demo starts its own.
  const owner = connected ? portOwner(parseAddress(address).port) : null;
  const chosen = Boolean(env.TEMPORAL_ADDRESS?.trim()) || address !== DEFAULT_TEMPORAL_ADDRESS;
  const othersServer = connected !== null && !chosen && isLocalDevServer(options) && owner?.you === false;
  if (othersServer) {
    await connected?.close().catch(() => undefined);
    connected = null;
    say(
      `▸ a Temporal server already listens on ${address}, started by ${ownerText(owner)}: not reusing it ` +
        "(its runs would mix with the demo's). Starting the demo's own server on a free port instead; " +
        `TEMPORAL_ADDRESS=${address} npm run demo would use that one.`,
    );
  }
  if (connected) {
    for (const line of await reusedServerBanner(connected, address, owner, chosen)) say(line);
  } else {
    say('▸ Temporal CLI…');
    const cli = await ensureTemporalCli();
    say(`  ${relative(process.cwd(), cli) || cli}`);
    const ports = othersServer ? { port: await freePort(), uiPort: await freePort() } : {};
    say(
      `▸ starting the Temporal dev server on ${othersServer ? `port ${ports.port}` : address}${o.once ? ' (in-memory: --once)' : ''}…`,
    );
    // The Web UI decodes through a codec server on loopback, so a run's summary, details,
    // input and result read as text there (docs/ui.md).
    server = await startDevServer({
      quiet: true,
      cliPath: cli,
      ...ports,
      ...(o.once ? { dbFile: null } : {}),
      ...(codec.codec ? { uiCodec: codec.codec } : {}),
    });
    uiBase = server.uiUrl ?? uiBase;
    say(`  ready: ${server.address}, Web UI ${uiBase}`);
    if (server.uiCodecUrl) say(`  the Web UI decodes payloads through the codec server ${server.uiCodecUrl}`);
    serverEnv = { ...env, TEMPORAL_ADDRESS: server.address };
    connected = await connect(serverEnv, 5_000);
  }

  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace(/\..*$/, '').replace('T', '-');
  mkdirSync(o.dataDir, { recursive: true });
  const dbFile = join(o.dataDir, `demo-${stamp}-${randomUUID().slice(0, 4)}.db`);
  const dbUrl = `sqlite:${dbFile}`;
  const deps = await openDemoWorkerDeps({ ledgerUrl: dbUrl, worldUrl: dbUrl, pollAfterMs: 300 });
  const { taskQueue, namespace } = connected;
  say(`▸ worker: task queue ${taskQueue}, ledger + demo world ${relative(process.cwd(), dbFile)}`);
  // The worker connects the worker's way (envconfig options as worker/run-worker.ts uses them).
  const nativeConnection = await NativeConnection.connect(loadConnectionOptions(serverEnv).connectionOptions);
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
