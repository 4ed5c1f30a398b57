/**
 * `npm run dev:server`'s command line (scripts/dev-server.ts): its flags, its usage, and the
 * process that starts a dev server (devserver/dev-server.ts) and keeps it until a signal.
 */
import { loadPayloadCodec } from '../codec';
import { SEARCH_ATTRIBUTES } from '../common/search-attributes';
import { DEFAULT_DB_FILE, FAST_DISPATCH_DYNAMIC_CONFIG, startDevServer } from './dev-server';

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

/** The command line entry (scripts/dev-server.ts runs it). */
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
