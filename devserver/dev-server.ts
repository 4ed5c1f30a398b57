/**
 * `npm run dev:server` — a local Temporal dev server (`temporal server start-dev`) with:
 *   - the frontend on TEMPORAL_ADDRESS (default localhost:7233), Web UI on port + 1000 (8233);
 *   - persistent SQLite state in ./data/temporal.db (`--db-filename`), so runs survive restarts;
 *   - namespace `default` (always created by start-dev);
 *   - the agent search attributes (common/search-attributes.ts) registered at start
 *     (`--search-attribute AgentState=Keyword …`).
 *
 * `startDevServer()` is reusable (demo, tests): it resolves once the frontend answers AND the
 * search attributes are visible, and returns `{ address, uiUrl, stop() }`.
 *
 * Flags: `--port N`, `--ui-port N`, `--codec-port N`, `--no-codec`, `--help` (DEV_SERVER_USAGE).
 * Environment: TEMPORAL_ADDRESS (host:port), TEMPORAL_UI_PORT, TEMPORAL_DB_FILE
 * (`:memory:` or empty for a throwaway server), TEMPORAL_CLI (see devserver/temporal-cli.ts).
 *
 * Payload encryption (docs/deploy.md "Payload encryption key"): `npm run dev:server` creates
 * the default key file ~/.config/agent-loop-guard/codec-keys.json (absolute, 0600; under
 * $XDG_CONFIG_HOME when set) on first start unless keys are configured (AGENT_CODEC_KEYS /
 * AGENT_CODEC_KEY_FILE), a legacy ./data/codec-keys.json exists, or AGENT_CODEC=off, so
 * workers, agentctl and the codec server of this user encrypt alike, from any directory.
 * `npm run dev:server` (and the demo) also serve a codec server on loopback (port 8888, or a
 * free one when 8888 is taken; `--codec-port N`) and point the Web UI at it, so the UI shows
 * a run's summary, current details, input and result decoded without extra flags.
 * `--no-codec` leaves it out (the UI then shows payloads as the server stores them: ciphertext).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { Connection } from '@temporalio/client';
import type { PayloadCodec } from '@temporalio/common';
import { DEFAULT_CODEC_PORT, loadPayloadCodec, startCodecServer, type CodecServerHandle } from '../codec';
import { SEARCH_ATTRIBUTES, searchAttributeCliArgs } from '../common/search-attributes';
import { ownerText, portOwner } from './port-owner';
import { ensureTemporalCli, PROJECT_ROOT } from './temporal-cli';

export const DEFAULT_TEMPORAL_ADDRESS = 'localhost:7233';
export const DEFAULT_DB_FILE = path.join(PROJECT_ROOT, 'data', 'temporal.db');
export const DEV_NAMESPACE = 'default';

/**
 * The dev server runs one history shard whose transfer queue is read at most 20 times a second
 * by default (`history.transferProcessorMaxPollRPS`), so every workflow task waits ~25 ms before
 * it is dispatched — most of a step's time (docs/performance.md). Raising it changes no
 * semantics; `npm run dev:server`, the chaos run and the bench use it.
 */
export const FAST_DISPATCH_DYNAMIC_CONFIG: readonly string[] = ['history.transferProcessorMaxPollRPS=1000'];

export interface DevServerOptions {
  /** Bind address (default: host of TEMPORAL_ADDRESS, i.e. `localhost`). */
  ip?: string;
  /** Frontend gRPC port (default: port of TEMPORAL_ADDRESS, i.e. 7233). 0 = pick a free port. */
  port?: number;
  /** Web UI port (default port + 1000). */
  uiPort?: number;
  /** Disable the Web UI. */
  headless?: boolean;
  /** SQLite file (default ./data/temporal.db). `null` or ':memory:' = in-memory, lost on stop. */
  dbFile?: string | null;
  /** Don't echo the server's output (it is still kept for error messages). */
  quiet?: boolean;
  /** Server log level (default warn). */
  logLevel?: 'debug' | 'info' | 'warn' | 'error';
  /** How long to wait for the server to answer (default 60 s). */
  startTimeoutMs?: number;
  /** Path to the CLI (default: ensureTemporalCli()). */
  cliPath?: string;
  /** Codec server the Web UI decodes payloads through (`--ui-codec-endpoint`); none by default. */
  uiCodecEndpoint?: string;
  /**
   * Serve a codec server with this codec on loopback for the Web UI (CORS: the UI's origins
   * only) and point the UI at it; closed by `stop()`. Ignored when headless or when
   * {@link uiCodecEndpoint} is given. `npm run dev:server` and the demo pass the payload codec.
   */
  uiCodec?: PayloadCodec;
  /** Port of the {@link uiCodec} server (default 8888; a free one when 8888 is taken; 0 = free). */
  uiCodecPort?: number;
  /** `KEY=VALUE`s passed as `--dynamic-config-value` (e.g. {@link FAST_DISPATCH_DYNAMIC_CONFIG}); none by default. */
  dynamicConfig?: readonly string[];
}

export interface DevServerHandle {
  /** `host:port` for `Connection.connect({ address })` / `NativeConnection.connect`. */
  readonly address: string;
  readonly namespace: string;
  /** Web UI URL, or undefined when headless. */
  readonly uiUrl: string | undefined;
  /** The codec server the Web UI decodes through, when there is one. */
  readonly uiCodecUrl: string | undefined;
  readonly pid: number | undefined;
  /** Resolves when the server process exits (for any reason). */
  readonly exited: Promise<void>;
  /** SIGTERM, then SIGKILL after `timeoutMs` (default 10 s). Idempotent. */
  stop(timeoutMs?: number): Promise<void>;
}

export function parseAddress(address: string): { host: string; port: number } {
  const m = /^(.*):(\d+)$/.exec(address.trim());
  if (!m || !m[1]) throw new Error(`Invalid TEMPORAL_ADDRESS '${address}', expected host:port`);
  return { host: m[1].replace(/^\[(.*)\]$/, '$1'), port: Number(m[2]) };
}

/** A free TCP port on `host` (the OS picks one). */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen(0, host, () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

function portInUse(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = net.connect({ host, port });
    const done = (used: boolean) => {
      sock.destroy();
      resolve(used);
    };
    sock.setTimeout(1000, () => done(false));
    sock.once('connect', () => done(true));
    sock.once('error', () => done(false));
  });
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Resolves when `address` answers and lists all of SEARCH_ATTRIBUTES in `namespace`. */
export async function waitForServer(
  address: string,
  opts: { namespace?: string; timeoutMs?: number; isDead?: () => string | undefined } = {},
): Promise<void> {
  const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
  const namespace = opts.namespace ?? DEV_NAMESPACE;
  let lastErr: unknown;
  while (Date.now() < deadline) {
    const dead = opts.isDead?.();
    if (dead) throw new Error(dead);
    let conn: Connection | undefined;
    try {
      conn = await Connection.connect({ address, connectTimeout: 2_000 });
      const res = await conn.operatorService.listSearchAttributes({ namespace });
      const have = Object.keys(res.customAttributes ?? {});
      const missing = Object.keys(SEARCH_ATTRIBUTES).filter((n) => !have.includes(n));
      if (missing.length === 0) return;
      lastErr = new Error(`search attributes not registered yet: ${missing.join(', ')}`);
    } catch (err) {
      lastErr = err;
    } finally {
      await conn?.close().catch(() => undefined);
    }
    await sleep(250);
  }
  throw new Error(`Temporal at ${address} did not become ready in time: ${String(lastErr)}`);
}

/**
 * A throwaway dev server for a bench or a script: in memory, on a free loopback port, no UI,
 * quiet; `extra` adds or overrides options (dynamic config, the CLI path).
 */
export function startThrowawayDevServer(extra: DevServerOptions = {}): Promise<DevServerHandle> {
  return startDevServer({
    ip: '127.0.0.1',
    port: 0,
    dbFile: null,
    headless: true,
    quiet: true,
    logLevel: 'error',
    ...extra,
  });
}

/** Start `temporal server start-dev` and wait until it is ready. */
export async function startDevServer(options: DevServerOptions = {}): Promise<DevServerHandle> {
  const envAddr = parseAddress(process.env.TEMPORAL_ADDRESS || DEFAULT_TEMPORAL_ADDRESS);
  const ip = options.ip ?? envAddr.host;
  const requestedPort = options.port ?? envAddr.port;
  const port = requestedPort === 0 ? await freePort(ip === 'localhost' ? '127.0.0.1' : ip) : requestedPort;
  const headless = options.headless ?? false;
  const envUiPort = process.env.TEMPORAL_UI_PORT ? Number(process.env.TEMPORAL_UI_PORT) : undefined;
  const uiPort = options.uiPort ?? envUiPort ?? port + 1000;
  const envDb = process.env.TEMPORAL_DB_FILE;
  const dbFileOpt =
    options.dbFile !== undefined ? options.dbFile : envDb !== undefined ? envDb : DEFAULT_DB_FILE;
  const dbFile = dbFileOpt && dbFileOpt !== ':memory:' ? path.resolve(dbFileOpt) : undefined;
  const address = `${ip.includes(':') ? `[${ip}]` : ip}:${port}`;

  if (await portInUse(ip, port)) {
    throw new Error(
      `Port ${port} on ${ip} is already in use (listening: ${ownerText(portOwner(port))}) — another Temporal server? ` +
        'Use it (TEMPORAL_ADDRESS), stop it, or start this one elsewhere: `npm run dev:server -- --port <other port>`.',
    );
  }

  const cli = options.cliPath ?? (await ensureTemporalCli({ quiet: options.quiet }));
  if (dbFile) fs.mkdirSync(path.dirname(dbFile), { recursive: true });

  const uiHost = ip === '0.0.0.0' || ip === '::' ? 'localhost' : ip;
  const codecServer =
    options.uiCodec && !headless && !options.uiCodecEndpoint
      ? await startUiCodecServer(
          options.uiCodec,
          options.uiCodecPort ?? DEFAULT_CODEC_PORT,
          [...new Set([uiHost, 'localhost', '127.0.0.1'])].map(
            (h) => `http://${h.includes(':') ? `[${h}]` : h}:${uiPort}`,
          ),
        )
      : undefined;
  const uiCodecEndpoint = headless ? undefined : (options.uiCodecEndpoint ?? codecServer?.url);

  const args = [
    'server',
    'start-dev',
    '--ip',
    ip,
    '--port',
    String(port),
    '--namespace',
    DEV_NAMESPACE,
    '--log-level',
    options.logLevel ?? 'warn',
    ...(headless ? ['--headless'] : ['--ui-port', String(uiPort)]),
    ...(uiCodecEndpoint ? ['--ui-codec-endpoint', uiCodecEndpoint] : []),
    ...(dbFile ? ['--db-filename', dbFile] : []),
    ...(options.dynamicConfig ?? []).flatMap((v) => ['--dynamic-config-value', v]),
    ...searchAttributeCliArgs(),
  ];

  const child: ChildProcess = spawn(cli, args, {
    stdio: ['ignore', options.quiet ? 'pipe' : 'inherit', options.quiet ? 'pipe' : 'inherit'],
  });
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-8_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  let exited: string | undefined;
  const exitPromise = new Promise<void>((resolve) => {
    child.once('exit', (code, signal) => {
      exited = `temporal server start-dev exited early (code ${code ?? 'null'}, signal ${signal ?? 'none'})`;
      resolve();
    });
    child.once('error', (err) => {
      exited = `failed to spawn ${cli}: ${err.message}`;
      resolve();
    });
  });

  let stopping: Promise<void> | undefined;
  const stop = (timeoutMs = 10_000): Promise<void> => {
    stopping ??= (async () => {
      await codecServer?.close().catch(() => undefined);
      if (exited || child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      let timer: NodeJS.Timeout | undefined;
      const killed = await Promise.race([
        exitPromise.then(() => true),
        new Promise<boolean>((r) => {
          timer = setTimeout(() => r(false), timeoutMs);
        }),
      ]);
      clearTimeout(timer);
      if (!killed) {
        child.kill('SIGKILL');
        await exitPromise;
      }
    })();
    return stopping;
  };

  try {
    await waitForServer(address, {
      namespace: DEV_NAMESPACE,
      timeoutMs: options.startTimeoutMs ?? 60_000,
      isDead: () => (exited ? `${exited}\n${output}`.trim() : undefined),
    });
  } catch (err) {
    await stop(2_000);
    throw err;
  }

  return {
    address,
    namespace: DEV_NAMESPACE,
    uiUrl: headless ? undefined : `http://${uiHost.includes(':') ? `[${uiHost}]` : uiHost}:${uiPort}`,
    uiCodecUrl: uiCodecEndpoint,
    pid: child.pid,
    exited: exitPromise,
    stop,
  };
}

/**
 * The Web UI's codec server on loopback: on `port`, or on a free one when `port` is taken (a
 * second dev server, or a demo next to `npm run dev:server`), since the UI learns the URL at start.
 */
async function startUiCodecServer(
  codec: PayloadCodec,
  port: number,
  origins: string[],
): Promise<CodecServerHandle> {
  try {
    return await startCodecServer({ codec, port, origins });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE' || port === 0) throw err;
    return startCodecServer({ codec, port: 0, origins });
  }
}

/** What `npm run dev:server` was asked for on its command line. */
export interface DevServerCliOptions {
  /** Serve the Web UI's codec server (default on; `--no-codec` turns it off). */
  readonly codec: boolean;
  /** `--codec-port N` (default 8888, a free one when taken). */
  readonly codecPort: number | undefined;
  /** `--port N`: the frontend's gRPC port (default the port of TEMPORAL_ADDRESS, 7233). */
  readonly port?: number;
  /** `--ui-port N`: the Web UI's port (default TEMPORAL_UI_PORT, else the frontend's port + 1000). */
  readonly uiPort?: number;
  /** `--help`: print the usage and start nothing. */
  readonly help?: boolean;
}

/** `npm run dev:server -- --help`. */
export const DEV_SERVER_USAGE = `Usage: npm run dev:server [-- options]

A local Temporal dev server (temporal server start-dev) with the agent search attributes, its
Web UI, and a codec server the UI decodes payloads through. Ctrl-C stops it.

Options:
  --port N          frontend (gRPC) port (default: the port of TEMPORAL_ADDRESS, else 7233);
                    workers and agentctl then need TEMPORAL_ADDRESS=localhost:N
  --ui-port N       Web UI port (default: TEMPORAL_UI_PORT, else the frontend port + 1000: 8233)
  --codec-port N    the UI's codec server port (default 8888; a free one when 8888 is taken)
  --no-codec        no codec server: the UI shows payloads as stored (ciphertext)
  -h, --help        this text

Environment: TEMPORAL_ADDRESS (host:port), TEMPORAL_UI_PORT, TEMPORAL_DB_FILE (default
data/temporal.db; :memory: for a throwaway server), TEMPORAL_CLI, AGENT_CODEC_* (docs/deploy.md).
Docs: docs/ui.md (ports), docs/operations.md.`;

/** A port number flag's value (0-65535; 0 only where `zero` allows it), or an error naming the flag. */
function portValue(flag: string, v: string | undefined, zero: boolean): number {
  const n = Number(v);
  if (v === undefined || !/^\d+$/.test(v) || n > 65535 || (!zero && n === 0))
    throw new Error(`${flag} needs a port number (${zero ? 0 : 1}-65535), got ${v ?? 'nothing'}`);
  return n;
}

/**
 * Parses `npm run dev:server`'s flags: `--port N`, `--ui-port N`, `--no-codec`, `--codec-port N`,
 * `--help`, and `--codec` (the default since the codec server is on by default; still accepted).
 * Throws on anything else, naming it.
 */
export function parseDevServerArgs(argv: readonly string[]): DevServerCliOptions {
  let codec = true;
  let codecPort: number | undefined;
  let port: number | undefined;
  let uiPort: number | undefined;
  let help = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const eq = a.indexOf('=');
    const flag = eq >= 0 ? a.slice(0, eq) : a;
    const value = () => (eq >= 0 ? a.slice(eq + 1) : argv[++i]);
    if (a === '--codec') codec = true;
    else if (a === '--no-codec') codec = false;
    else if (a === '--help' || a === '-h') help = true;
    else if (flag === '--codec-port') codecPort = portValue('--codec-port', value(), true);
    else if (flag === '--port') port = portValue('--port', value(), false);
    else if (flag === '--ui-port') uiPort = portValue('--ui-port', value(), false);
    else
      throw new Error(
        `unknown option ${a} (options: --port N, --ui-port N, --codec-port N, --no-codec, --help)`,
      );
  }
  return {
    codec,
    codecPort,
    ...(port !== undefined ? { port } : {}),
    ...(uiPort !== undefined ? { uiPort } : {}),
    ...(help ? { help } : {}),
  };
}

/** The command line entry (devserver/dev-server.ts). */
export async function main(argv: readonly string[] = process.argv.slice(2)): Promise<void> {
  const cli = parseDevServerArgs(argv);
  if (cli.help) return void process.stdout.write(`${DEV_SERVER_USAGE}\n`);
  const loaded = loadPayloadCodec(process.env, {
    createKeyFile: true,
    warn: (m) => process.stderr.write(`dev-server: ${m}\n`),
  });
  if (loaded.createdKeyFile)
    process.stdout.write(`payload encryption key created: ${loaded.createdKeyFile}\n`);
  const payloads = { source: loaded.source, encrypted: loaded.codec !== null };
  const server = await startDevServer({
    dynamicConfig: FAST_DISPATCH_DYNAMIC_CONFIG,
    ...(cli.codec && loaded.codec ? { uiCodec: loaded.codec } : {}),
    ...(cli.codecPort !== undefined ? { uiCodecPort: cli.codecPort } : {}),
    ...(cli.port !== undefined ? { port: cli.port } : {}),
    ...(cli.uiPort !== undefined ? { uiPort: cli.uiPort } : {}),
  });
  const codecLine = server.uiCodecUrl
    ? `${server.uiCodecUrl} (the web UI decodes payloads through it; --no-codec to leave it out)`
    : !payloads.encrypted
      ? 'none (payloads are not encrypted)'
      : 'none (--no-codec): the web UI shows payloads, summaries and details as ciphertext';
  const attrs = Object.entries(SEARCH_ATTRIBUTES)
    .map(([n, t]) => `${n}=${t}`)
    .join(', ');
  process.stdout.write(
    [
      '',
      `Temporal dev server ready`,
      `  address:   ${server.address}  (namespace ${server.namespace})`,
      `  web UI:    ${server.uiUrl ?? '(headless)'}`,
      `  search attributes: ${attrs}`,
      `  state:     ${process.env.TEMPORAL_DB_FILE ?? DEFAULT_DB_FILE}`,
      ...(server.address.endsWith(':7233')
        ? []
        : [`  workers and agentctl: TEMPORAL_ADDRESS=${server.address} (not the default port 7233)`]),
      `  payloads:  ${payloads.encrypted ? 'encrypted' : 'NOT encrypted'} (${payloads.source})`,
      `  codec:     ${codecLine}`,
      'Ctrl-C to stop.',
      '',
    ].join('\n'),
  );
  let shuttingDown = false;
  const shutdown = (signal: NodeJS.Signals) => {
    if (shuttingDown) return;
    shuttingDown = true;
    process.stdout.write(`\n${signal}: stopping the Temporal dev server…\n`);
    server.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGINT', shutdown);
  process.on('SIGTERM', shutdown);
  void server.exited.then(() => {
    if (shuttingDown) return;
    process.stderr.write('[dev-server] the Temporal dev server exited unexpectedly\n');
    process.exit(1);
  });
}
