/**
 * Which payload codec a process uses: the ONE policy every worker, agentctl, the codec
 * server, the demo, the dev server and the test harness apply, so they all encrypt and
 * decrypt alike (docs/deploy.md "Payload encryption key").
 *
 * Encrypted by default. In order:
 *  1. `AGENT_CODEC=off`: no codec, payloads stay plain text (an explicit opt-out);
 *     `AGENT_CODEC_COMPRESS=off` keeps the encryption and leaves out its compression;
 *  2. `AGENT_CODEC_KEYS` (`kid:base64,…`, newest last, or `AGENT_CODEC_ACTIVE_KEY`);
 *  3. `AGENT_CODEC_KEY_FILE`: that JSON key file, which must exist (a relative path is
 *     resolved against the working directory, shown absolute, and warned about); it is
 *     never created;
 *  4. legacy: `data/codec-keys.json` in the working directory, when it exists (what versions
 *     before the absolute default created): used, with a warning saying how to make it explicit;
 *  5. the default key file {@link defaultKeyFile}, absolute and outside any project:
 *     `$XDG_CONFIG_HOME/agent-loop-guard/codec-keys.json`, else
 *     `~/.config/agent-loop-guard/codec-keys.json`. Every process of one user finds the same
 *     file, whatever directory it was started in;
 *  6. when that file does not exist, only a process allowed to create it does
 *     (`createKeyFile`: `npm run dev:server`, `npm run demo`, and `npm run worker` or a client
 *     connection on a local dev server, i.e. loopback without TLS or an API key): mode 0600,
 *     one fresh key, the absolute path in `createdKeyFile` for the caller's log;
 *  7. anywhere else the process refuses with an error naming the path it looked at and the
 *     variables to set. Nothing ever makes up a second key silently: a reader (the codec
 *     server, agentctl against a remote server, a production worker) with a key of its own
 *     would decrypt nothing or write what nobody else can read.
 */
import { existsSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import type { DataConverter } from '@temporalio/common';
import { AesGcmCodec } from './aes-gcm-codec';
import { agentConfigDir } from '../connection/config-dir';
import { CodecConfigError } from './errors';
import { isMissingFile, parseKeyList, readKeyFile, readOrCreateKeyFile, type KeyRing } from './key-ring';

/** The key file of versions before the absolute default, relative to the working directory. */
export const LEGACY_KEY_FILE = 'data/codec-keys.json';

/** The default key file's path below the user's configuration directory. */
export const DEFAULT_KEY_FILE_NAME = join('agent-loop-guard', 'codec-keys.json');

/** Where the key docs live (messages point there). */
const DOCS = 'docs/deploy.md "Payload encryption key"';

/** Every environment variable the codec reads, with what it means (worker/env.ts lists them too). */
export const CODEC_ENV_DOCS = {
  AGENT_CODEC:
    'on (default): encrypt every payload (AES-256-GCM, codec/); off: store payloads in plain text (history, queries and the Web UI then show tool args and results).',
  AGENT_CODEC_KEYS:
    'Payload encryption keys: kid1:base64key,kid2:base64key (32-byte keys, newest last = active). Takes precedence over the key file.',
  AGENT_CODEC_ACTIVE_KEY: 'Key id new payloads are encrypted with (default: the last of AGENT_CODEC_KEYS).',
  AGENT_CODEC_COMPRESS:
    'on (default): deflate each payload inside its encryption when that makes it smaller (history bytes); off: encrypt only. Either reads both.',
  AGENT_CODEC_KEY_FILE:
    'JSON key file {"activeKeyId", "keys": {kid: base64}}; must exist, never created. Default: $XDG_CONFIG_HOME/agent-loop-guard/codec-keys.json, else ~/.config/agent-loop-guard/codec-keys.json (created 0600 by npm run dev:server / npm run demo / a worker or agentctl on a local dev server).',
} as const;

/** What {@link loadPayloadCodec} found. */
export interface LoadedCodec {
  /** The codec, or null when AGENT_CODEC=off. */
  readonly codec: AesGcmCodec | null;
  /** Where the keys came from, for a start-up log line (absolute paths, never the keys). */
  readonly source: string;
  /** The absolute path of the key file in use, when the keys come from a file. */
  readonly keyFile?: string;
  /** The key file this call created (absolute), if it created one. */
  readonly createdKeyFile?: string;
}

/** Options of {@link loadPayloadCodec}. */
export interface LoadCodecOptions {
  /**
   * May this process create the default key file when no key is configured and it does not
   * exist? Only for local development (module comment, step 6). Default false: read only.
   */
  readonly createKeyFile?: boolean;
  /** Directory a relative AGENT_CODEC_KEY_FILE and the legacy file are relative to (default `process.cwd()`). */
  readonly cwd?: string;
  /** Where warnings go (default stderr). Each distinct warning is given once per process. */
  readonly warn?: (message: string) => void;
}

const set = (v: string | undefined): v is string => v !== undefined && v.trim() !== '';

const warned = new Set<string>();
function warnOnce(o: LoadCodecOptions, message: string): void {
  if (warned.has(message)) return;
  warned.add(message);
  (o.warn ?? ((m: string) => process.stderr.write(`agent-loop-guard: ${m}\n`)))(message);
}

/**
 * The default key file: `$XDG_CONFIG_HOME/agent-loop-guard/codec-keys.json` when
 * XDG_CONFIG_HOME is an absolute path (a relative one is ignored, as the XDG spec says), else
 * `<home>/.config/agent-loop-guard/codec-keys.json` (home: HOME, else the OS's home directory).
 * Always absolute, so it does not depend on the working directory.
 *
 * @throws CodecConfigError when no home directory can be found (set AGENT_CODEC_KEY_FILE)
 */
export function defaultKeyFile(env: NodeJS.ProcessEnv = process.env): string {
  const dir = agentConfigDir(env);
  if (dir === null)
    throw new CodecConfigError(
      'no home directory for the default payload key file (~/.config/agent-loop-guard/codec-keys.json): ' +
        'set AGENT_CODEC_KEY_FILE to an absolute path, or AGENT_CODEC_KEYS',
    );
  return join(dir, 'codec-keys.json');
}

/** Where a process's key file is (when its keys come from a file), and why there. */
export interface KeyFileLocation {
  /** Absolute path. */
  readonly path: string;
  /** `env`: AGENT_CODEC_KEY_FILE; `legacy`: ./data/codec-keys.json; `default`: {@link defaultKeyFile}. */
  readonly origin: 'env' | 'legacy' | 'default';
}

/**
 * The key file the policy uses when AGENT_CODEC_KEYS is not set (steps 3-5 of the module
 * comment), without reading it. `agentctl`/docs use it to say where the key is expected.
 */
export function resolveKeyFile(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): KeyFileLocation {
  if (set(env.AGENT_CODEC_KEY_FILE))
    return { path: resolve(cwd, env.AGENT_CODEC_KEY_FILE.trim()), origin: 'env' };
  const legacy = resolve(cwd, LEGACY_KEY_FILE);
  if (existsSync(legacy)) return { path: legacy, origin: 'legacy' };
  return { path: defaultKeyFile(env), origin: 'default' };
}

/**
 * Applies the policy of the module comment.
 *
 * @throws CodecConfigError naming the variable or the absolute path at fault, or saying how to configure keys
 */
export function loadPayloadCodec(
  env: NodeJS.ProcessEnv = process.env,
  o: LoadCodecOptions = {},
): LoadedCodec {
  const mode = (env.AGENT_CODEC ?? '').trim().toLowerCase();
  if (mode === 'off') return { codec: null, source: 'AGENT_CODEC=off (payloads in plain text)' };
  if (mode !== '' && mode !== 'on')
    throw new CodecConfigError(`AGENT_CODEC must be on (the default) or off, not "${env.AGENT_CODEC}"`);
  const squeeze = (env.AGENT_CODEC_COMPRESS ?? '').trim().toLowerCase();
  if (squeeze !== '' && squeeze !== 'on' && squeeze !== 'off')
    throw new CodecConfigError(
      `AGENT_CODEC_COMPRESS must be on (the default) or off, not "${env.AGENT_CODEC_COMPRESS}"`,
    );
  const codecOf = (r: KeyRing): AesGcmCodec => new AesGcmCodec(r, { compress: squeeze !== 'off' });
  if (set(env.AGENT_CODEC_KEYS)) {
    const r = parseKeyList(env.AGENT_CODEC_KEYS, env.AGENT_CODEC_ACTIVE_KEY);
    return { codec: codecOf(r), source: `AGENT_CODEC_KEYS, active key ${r.activeKeyId}` };
  }
  if (set(env.AGENT_CODEC_ACTIVE_KEY))
    throw new CodecConfigError(
      'AGENT_CODEC_ACTIVE_KEY is set but AGENT_CODEC_KEYS is not (a key file names its own activeKeyId)',
    );
  const cwd = o.cwd ?? process.cwd();
  const loc = resolveKeyFile(env, cwd);
  const fromFile = (r: KeyRing, created = false): LoadedCodec => ({
    codec: codecOf(r),
    source: `key file ${loc.path}${created ? ' (created)' : ''}${loc.origin === 'legacy' ? ' (legacy, relative to the working directory)' : ''}, active key ${r.activeKeyId}`,
    keyFile: loc.path,
    ...(created ? { createdKeyFile: loc.path } : {}),
  });

  if (loc.origin === 'env') {
    const given = env.AGENT_CODEC_KEY_FILE!.trim();
    if (!isAbsolute(given))
      warnOnce(
        o,
        `AGENT_CODEC_KEY_FILE=${given} is relative: using ${loc.path}; a process started in another directory would look elsewhere, give the absolute path`,
      );
    return fromFile(
      readKeyFile(
        loc.path,
        `AGENT_CODEC_KEY_FILE=${given} names it, and a named key file is never created: point it at the workers' key file, or unset it to use the default ${defaultKeyFileOrNote(env)}`,
      ),
    );
  }

  if (loc.origin === 'legacy') {
    const def = defaultKeyFileOrNote(env);
    warnOnce(
      o,
      `using the legacy payload key file ${loc.path}, found relative to the working directory; processes started in another directory use ${def}${existsSync(def) ? ' (which exists too, and is not used here)' : ''}. ` +
        `Make it explicit: AGENT_CODEC_KEY_FILE=${loc.path} for every worker, agentctl and codec server, or move it to ${def}`,
    );
    return fromFile(readKeyFile(loc.path));
  }

  if (o.createKeyFile) {
    let made: { ring: KeyRing; created: boolean };
    try {
      made = readOrCreateKeyFile(loc.path);
    } catch (err) {
      if (err instanceof CodecConfigError) throw err;
      throw new CodecConfigError(
        `cannot create the default payload key file ${loc.path}: ${(err as Error).message}; set AGENT_CODEC_KEY_FILE (an absolute path) or AGENT_CODEC_KEYS`,
        { cause: err },
      );
    }
    return fromFile(made.ring, made.created);
  }
  try {
    return fromFile(readKeyFile(loc.path));
  } catch (err) {
    if (!isMissingFile(err)) throw err;
  }
  throw new CodecConfigError(
    `no payload encryption key: AGENT_CODEC_KEYS and AGENT_CODEC_KEY_FILE are not set and the default key file ${loc.path} does not exist. ` +
      "Give this process the workers' keys: the same AGENT_CODEC_KEYS, or AGENT_CODEC_KEY_FILE=<absolute path of their key file>. " +
      'On a local dev server that file is created by `npm run dev:server` / `npm run demo`, or by `npm run worker`, agentctl or the client API connecting to it; ' +
      'elsewhere generate a key ring once and give it to every process: AGENT_CODEC_KEYS="k1:$(openssl rand -base64 32)". ' +
      `AGENT_CODEC=off stores payloads in plain text instead (${DOCS})`,
  );
}

/** The default key file, or a note saying why there is none (for messages only). */
function defaultKeyFileOrNote(env: NodeJS.ProcessEnv): string {
  try {
    return defaultKeyFile(env);
  } catch {
    return '~/.config/agent-loop-guard/codec-keys.json (no home directory here)';
  }
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
