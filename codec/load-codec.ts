/**
 * Which payload codec a process uses: the ONE policy every worker, agentctl, the demo, the
 * dev server and the test harness apply, so they all encrypt and decrypt alike.
 *
 * Encrypted by default. In order:
 *  1. `AGENT_CODEC=off`: no codec, payloads stay plain text (an explicit opt-out);
 *  2. `AGENT_CODEC_KEYS` (`kid:base64,…`, newest last, or `AGENT_CODEC_ACTIVE_KEY`);
 *  3. `AGENT_CODEC_KEY_FILE`: that JSON key file, which must exist;
 *  4. the default key file `data/codec-keys.json` (relative to the working directory, like
 *     the default ledger `sqlite:data/agent.db`) when it exists;
 *  5. otherwise, on a local development setup (`createKeyFile`: `npm run dev:server`,
 *     `npm run demo`, and a worker or agentctl talking to a loopback server without TLS or an
 *     API key) the default key file is created (mode 0600, one fresh key);
 *  6. anywhere else the process refuses to start: a production worker without keys would
 *     write plain text into history, or write ciphertext nobody else can read.
 */
import { resolve } from 'node:path';
import type { DataConverter } from '@temporalio/common';
import { AesGcmCodec } from './aes-gcm-codec';
import { CodecConfigError } from './errors';
import { parseKeyList, readKeyFile, readOrCreateKeyFile, type KeyRing } from './key-ring';

/** The default key file, relative to the working directory. */
export const DEFAULT_KEY_FILE = 'data/codec-keys.json';

/** Every environment variable the codec reads, with what it means (worker/env.ts lists them too). */
export const CODEC_ENV_DOCS = {
  AGENT_CODEC:
    'on (default): encrypt every payload (AES-256-GCM, codec/); off: store payloads in plain text (history, queries and the Web UI then show tool args and results).',
  AGENT_CODEC_KEYS:
    'Payload encryption keys: kid1:base64key,kid2:base64key (32-byte keys, newest last = active). Takes precedence over the key file.',
  AGENT_CODEC_ACTIVE_KEY: 'Key id new payloads are encrypted with (default: the last of AGENT_CODEC_KEYS).',
  AGENT_CODEC_KEY_FILE: `JSON key file {"activeKeyId", "keys": {kid: base64}} (default ${DEFAULT_KEY_FILE}, created 0600 by npm run dev:server / npm run demo).`,
} as const;

/** What {@link loadPayloadCodec} found. */
export interface LoadedCodec {
  /** The codec, or null when AGENT_CODEC=off. */
  readonly codec: AesGcmCodec | null;
  /** Where the keys came from, for a start-up log line (never the keys). */
  readonly source: string;
  /** The key file this call created, if it created one. */
  readonly createdKeyFile?: string;
}

/** Options of {@link loadPayloadCodec}. */
export interface LoadCodecOptions {
  /** Create the default key file when no key is configured (local development only). */
  readonly createKeyFile?: boolean;
  /** Directory the default key file is relative to (default `process.cwd()`). */
  readonly cwd?: string;
}

const set = (v: string | undefined): v is string => v !== undefined && v.trim() !== '';

/**
 * Applies the policy of the module comment.
 *
 * @throws CodecConfigError naming the variable or file at fault, or saying how to configure keys
 */
export function loadPayloadCodec(
  env: NodeJS.ProcessEnv = process.env,
  o: LoadCodecOptions = {},
): LoadedCodec {
  const mode = (env.AGENT_CODEC ?? '').trim().toLowerCase();
  if (mode === 'off') return { codec: null, source: 'AGENT_CODEC=off (payloads in plain text)' };
  if (mode !== '' && mode !== 'on')
    throw new CodecConfigError(`AGENT_CODEC must be on (the default) or off, not "${env.AGENT_CODEC}"`);
  const ring = (r: KeyRing, source: string, createdKeyFile?: string): LoadedCodec => ({
    codec: new AesGcmCodec(r),
    source: `${source}, active key ${r.activeKeyId}`,
    ...(createdKeyFile ? { createdKeyFile } : {}),
  });
  if (set(env.AGENT_CODEC_KEYS))
    return ring(parseKeyList(env.AGENT_CODEC_KEYS, env.AGENT_CODEC_ACTIVE_KEY), 'AGENT_CODEC_KEYS');
  if (set(env.AGENT_CODEC_ACTIVE_KEY))
    throw new CodecConfigError(
      'AGENT_CODEC_ACTIVE_KEY is set but AGENT_CODEC_KEYS is not (a key file names its own activeKeyId)',
    );
  if (set(env.AGENT_CODEC_KEY_FILE)) {
    const file = resolve(o.cwd ?? process.cwd(), env.AGENT_CODEC_KEY_FILE);
    return ring(readKeyFile(file), `key file ${file}`);
  }
  const file = resolve(o.cwd ?? process.cwd(), DEFAULT_KEY_FILE);
  if (o.createKeyFile) {
    const { ring: r, created } = readOrCreateKeyFile(file);
    return ring(r, `key file ${file}${created ? ' (created)' : ''}`, created ? file : undefined);
  }
  try {
    return ring(readKeyFile(file), `key file ${file}`);
  } catch (err) {
    if ((err as { cause?: NodeJS.ErrnoException }).cause?.code !== 'ENOENT') throw err;
  }
  throw new CodecConfigError(
    'no payload encryption key configured: set AGENT_CODEC_KEYS (kid:base64key, e.g. `echo "k1:$(openssl rand -base64 32)"`) ' +
      `or AGENT_CODEC_KEY_FILE, or run \`npm run dev:server\` once (it creates ${DEFAULT_KEY_FILE}); ` +
      'AGENT_CODEC=off stores payloads in plain text instead (docs/security.md)',
  );
}

/**
 * Whether a connection goes to a local development server: a loopback address without TLS
 * or an API key. Such a setup may create the default key file on first start.
 */
export function isLocalDevServer(o: { address: string; tls?: unknown; apiKey?: unknown }): boolean {
  if (o.tls || o.apiKey) return false;
  const host = o.address
    .replace(/:\d+$/, '')
    .replace(/^\[(.*)\]$/, '$1')
    .toLowerCase();
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** The data converter of a loaded codec (`{}` when it is off), for clients and workers alike. */
export function dataConverterOf(loaded: Pick<LoadedCodec, 'codec'>): DataConverter {
  return loaded.codec ? { payloadCodecs: [loaded.codec] } : {};
}
