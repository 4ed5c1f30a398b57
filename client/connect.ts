/**
 * agentctl's Temporal connection, configured the Temporal way: `loadConnectionOptions()`
 * (connection/env.ts → @temporalio/envconfig: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE,
 * TEMPORAL_API_KEY, TEMPORAL_TLS_*, TEMPORAL_PROFILE / TOML profile). An unreachable
 * server is exit code 4 with the address tried and how to start one. Payloads go through the
 * workers' codec (AGENT_CODEC*, codec/load-codec.ts), so agentctl reads what they encrypt.
 * On a local dev server with no key configured anywhere, the first process creates the
 * default key file (absolute, the same for every process of this user: docs/deploy.md
 * "Payload encryption key") and says so on stderr; against any other server a missing key
 * is exit 2 naming the path looked at.
 */
import { Client, Connection, type ConnectionOptions } from '@temporalio/client';
import { CodecError, dataConverterOf, isLocalDevServer, loadPayloadCodec, type LoadedCodec } from '../codec';
import { loadConnectionOptions, readWorkerEnv } from '../connection/env';
import { CliError, Exit } from './format';

/** A connected client plus what it was configured with. */
export interface Connected {
  readonly client: Client;
  readonly connection: Connection;
  readonly address: string;
  readonly namespace: string;
  /** TEMPORAL_TASK_QUEUE or the default `agent-loop-guard`. */
  readonly taskQueue: string;
  /** The payload codec the client encrypts and decrypts with (null: AGENT_CODEC=off). */
  readonly codec: LoadedCodec;
  close(): Promise<void>;
}

/** Settings without connecting (bad env → exit 2). */
export function connectionSettings(env: NodeJS.ProcessEnv = process.env): {
  options: ConnectionOptions & { address: string };
  namespace: string;
  taskQueue: string;
} {
  try {
    const { connectionOptions, namespace } = loadConnectionOptions(env);
    const o = connectionOptions as unknown as Record<string, unknown>;
    const options: ConnectionOptions & { address: string } = { address: connectionOptions.address };
    if (o.tls !== undefined) options.tls = o.tls as ConnectionOptions['tls'];
    if (typeof o.apiKey === 'string') options.apiKey = o.apiKey;
    if (o.metadata !== undefined) options.metadata = o.metadata as ConnectionOptions['metadata'];
    return { options, namespace, taskQueue: readWorkerEnv(env).taskQueue };
  } catch (err) {
    throw new CliError(Exit.USAGE, (err as Error).message);
  }
}

/**
 * The payload codec agentctl uses (codec/load-codec.ts: the workers' policy, so the client
 * reads what they write). Bad or missing key configuration → exit 2. Creating the default
 * key file (local dev server only) is reported on stderr with its absolute path.
 */
export function codecSettings(
  env: NodeJS.ProcessEnv,
  options: ConnectionOptions & { address: string },
): LoadedCodec {
  try {
    const loaded = loadPayloadCodec(env, { createKeyFile: isLocalDevServer(options) });
    if (loaded.createdKeyFile)
      process.stderr.write(
        `agent-loop-guard: created the payload encryption key file ${loaded.createdKeyFile} (mode 0600; ` +
          'no AGENT_CODEC_KEYS or AGENT_CODEC_KEY_FILE set, local dev server). Workers and agentctl without those variables use it; ' +
          'a process given other keys cannot read what this one encrypts.\n',
      );
    return loaded;
  } catch (err) {
    if (err instanceof CodecError) throw new CliError(Exit.USAGE, err.message);
    throw err;
  }
}

/** The message of an unreachable server. */
export function unreachableMessage(address: string, detail: string): string {
  return (
    `cannot reach the Temporal server at ${address} (${detail}).\n` +
    'Start it with `npm run dev:server` (or `npm run demo`), or point TEMPORAL_ADDRESS at a running server.'
  );
}

/** Connects (eagerly, with a short timeout) or throws CliError(4). */
export async function connect(env: NodeJS.ProcessEnv = process.env, timeoutMs = 3_000): Promise<Connected> {
  const { options, namespace, taskQueue } = connectionSettings(env);
  const codec = codecSettings(env, options);
  let connection: Connection;
  try {
    connection = await Connection.connect({ ...options, connectTimeout: timeoutMs });
  } catch (err) {
    const detail = (err as Error).message?.split('\n')[0] ?? String(err);
    throw new CliError(Exit.UNREACHABLE, unreachableMessage(options.address, detail));
  }
  const client = new Client({ connection, namespace, dataConverter: dataConverterOf(codec) });
  return {
    client,
    connection,
    address: options.address,
    namespace,
    taskQueue,
    codec,
    close: () => connection.close(),
  };
}
