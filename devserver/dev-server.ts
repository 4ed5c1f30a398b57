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
import { DEFAULT_CODEC_PORT, startCodecServer, type CodecServerHandle } from '../codec';
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
