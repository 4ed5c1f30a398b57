/**
 * The codec's key ring: named AES-256 keys and the one new payloads are encrypted with.
 *
 * Rotation: add a new key and make it active; payloads written from then on name the new key
 * id, and payloads written before still decrypt with the old key as long as it stays in the
 * ring. A key may leave the ring only when no history (open or still retained) needs it.
 *
 * Two sources, in this order of precedence (codec/load-codec.ts decides which applies and
 * where the key file is):
 *  - AGENT_CODEC_KEYS: `kid1:base64key,kid2:base64key`, newest LAST (it is the active key
 *    unless AGENT_CODEC_ACTIVE_KEY names another);
 *  - a JSON key file `{ "activeKeyId": "kid2", "keys": { "kid1": "base64", "kid2": "base64" } }`
 *    (AGENT_CODEC_KEY_FILE, or the absolute default of codec/load-codec.ts), created with mode
 *    0600 by {@link readOrCreateKeyFile}.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { CodecConfigError } from './errors';

/** AES-256: 32-byte keys. */
export const KEY_BYTES = 32;

/** Key ids appear in payload metadata and in config strings: keep them short and unambiguous. */
const KEY_ID = /^[A-Za-z0-9._-]{1,64}$/;

/** An immutable set of named keys plus the active key id. */
export class KeyRing {
  /** The id new payloads are encrypted with. */
  readonly activeKeyId: string;
  private readonly keys: ReadonlyMap<string, Buffer>;

  /**
   * @param keys key id → 32-byte key
   * @param activeKeyId must be one of `keys`
   * @throws CodecConfigError naming the bad key id or length
   */
  constructor(keys: ReadonlyMap<string, Buffer>, activeKeyId: string) {
    if (keys.size === 0) throw new CodecConfigError('the key ring is empty: give at least one key');
    for (const [id, key] of keys) {
      if (!KEY_ID.test(id))
        throw new CodecConfigError(`key id "${id}" is invalid: use 1-64 of A-Z a-z 0-9 . _ -`);
      if (key.length !== KEY_BYTES)
        throw new CodecConfigError(
          `key "${id}" is ${key.length} bytes; AES-256 needs ${KEY_BYTES} (generate one with: openssl rand -base64 32)`,
        );
    }
    if (!keys.has(activeKeyId))
      throw new CodecConfigError(
        `active key id "${activeKeyId}" is not in the key ring (have: ${[...keys.keys()].join(', ')})`,
      );
    this.keys = new Map(keys);
    this.activeKeyId = activeKeyId;
  }

  /** The active key (the one new payloads use). */
  get activeKey(): Buffer {
    return this.keys.get(this.activeKeyId)!;
  }

  /** The key under `id`, or undefined. */
  key(id: string): Buffer | undefined {
    return this.keys.get(id);
  }

  /** Every key id, in the order given. */
  get keyIds(): readonly string[] {
    return [...this.keys.keys()];
  }

  /** A ring with `id` added (or replaced) and made active: the rotation step. */
  withActiveKey(id: string, key: Buffer): KeyRing {
    const keys = new Map(this.keys);
    keys.set(id, key);
    return new KeyRing(keys, id);
  }
}

function decodeKey(id: string, b64: string, where: string): Buffer {
  const s = b64.trim();
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(s)) throw new CodecConfigError(`${where}: key "${id}" is not base64`);
  return Buffer.from(s, 'base64');
}

/**
 * Parses AGENT_CODEC_KEYS (`kid1:base64,kid2:base64`, newest last).
 *
 * @param value the variable's value
 * @param activeKeyId AGENT_CODEC_ACTIVE_KEY, or undefined for the last key listed
 */
export function parseKeyList(value: string, activeKeyId?: string): KeyRing {
  const keys = new Map<string, Buffer>();
  const entries = value
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '');
  for (const entry of entries) {
    const i = entry.indexOf(':');
    if (i <= 0)
      throw new CodecConfigError(
        'AGENT_CODEC_KEYS: each entry must be <keyId>:<base64 key>, entries separated by commas',
      );
    const id = entry.slice(0, i).trim();
    if (keys.has(id)) throw new CodecConfigError(`AGENT_CODEC_KEYS: key id "${id}" is listed twice`);
    keys.set(id, decodeKey(id, entry.slice(i + 1), 'AGENT_CODEC_KEYS'));
  }
  if (keys.size === 0) throw new CodecConfigError('AGENT_CODEC_KEYS is set but lists no key');
  const active = activeKeyId?.trim() || [...keys.keys()].at(-1)!;
  try {
    return new KeyRing(keys, active);
  } catch (err) {
    const source = activeKeyId?.trim() ? 'AGENT_CODEC_ACTIVE_KEY' : 'AGENT_CODEC_KEYS';
    throw new CodecConfigError(`${source}: ${(err as Error).message}`, { cause: err });
  }
}

/** The JSON form of a key file. */
export interface KeyFileJson {
  readonly activeKeyId: string;
  readonly keys: Readonly<Record<string, string>>;
}

/** Parses a key file's text; `file` is only for messages. */
export function parseKeyFile(text: string, file: string): KeyRing {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new CodecConfigError(`key file ${file} is not JSON`, { cause: err });
  }
  const o = json as Partial<KeyFileJson> | null;
  if (
    !o ||
    typeof o !== 'object' ||
    typeof o.activeKeyId !== 'string' ||
    !o.keys ||
    typeof o.keys !== 'object'
  )
    throw new CodecConfigError(
      `key file ${file} must be {"activeKeyId": "<id>", "keys": {"<id>": "<base64 32-byte key>"}}`,
    );
  const keys = new Map<string, Buffer>();
  for (const [id, b64] of Object.entries(o.keys)) {
    if (typeof b64 !== 'string') throw new CodecConfigError(`key file ${file}: key "${id}" is not a string`);
    keys.set(id, decodeKey(id, b64, `key file ${file}`));
  }
  try {
    return new KeyRing(keys, o.activeKeyId);
  } catch (err) {
    throw new CodecConfigError(`key file ${file}: ${(err as Error).message}`, { cause: err });
  }
}

/**
 * Reads a key file; a missing or unreadable file is a CodecConfigError naming it (its `cause`
 * is the file system error, so `cause.code === 'ENOENT'` tells a missing file apart).
 *
 * @param file the path (give it absolute: messages show it as given)
 * @param hint appended to the message of a file that cannot be read (what to do about it)
 */
export function readKeyFile(file: string, hint = ''): KeyRing {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    const why = e.code === 'ENOENT' ? 'no such file' : e.code === 'EACCES' ? 'permission denied' : e.message;
    throw new CodecConfigError(`cannot read key file ${file}: ${why}${hint ? `; ${hint}` : ''}`, {
      cause: err,
    });
  }
  return parseKeyFile(text, file);
}

/** Whether an error of {@link readKeyFile} says the file does not exist (and nothing else). */
export function isMissingFile(err: unknown): boolean {
  return (err as { cause?: NodeJS.ErrnoException } | null)?.cause?.code === 'ENOENT';
}

/** A new random key and a key id naming the day it was made (`local-20250131-3f9a`). */
export function generateKey(prefix = 'local'): { id: string; key: Buffer } {
  const day = new Date().toISOString().slice(0, 10).replace(/-/g, '');
  return { id: `${prefix}-${day}-${randomBytes(2).toString('hex')}`, key: randomBytes(KEY_BYTES) };
}

/** The JSON text of a key file holding `ring`. */
export function keyFileJson(ring: KeyRing): string {
  const keys: Record<string, string> = {};
  for (const id of ring.keyIds) keys[id] = ring.key(id)!.toString('base64');
  return `${JSON.stringify({ activeKeyId: ring.activeKeyId, keys } satisfies KeyFileJson, null, 2)}\n`;
}

/**
 * Reads `file`, or creates it (mode 0600, one fresh key; missing directories 0700) when it
 * does not exist. Any other problem (unreadable, not a key file) is an error: an existing
 * file is never replaced. Safe when
 * several processes start at once: the file is written under a temporary name and linked into
 * place, so a reader never sees half a file and exactly one writer's key wins.
 *
 * @returns the ring and whether this call created the file
 */
export function readOrCreateKeyFile(file: string): { ring: KeyRing; created: boolean } {
  try {
    return { ring: readKeyFile(file), created: false };
  } catch (err) {
    if (!isMissingFile(err)) throw err;
  }
  const { id, key } = generateKey();
  const ring = new KeyRing(new Map([[id, key]]), id);
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  writeFileSync(tmp, keyFileJson(ring), { mode: 0o600, flag: 'wx' });
  chmodSync(tmp, 0o600); // the umask may have taken bits away, never added: make it exact
  try {
    linkSync(tmp, file);
    return { ring, created: true };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return { ring: readKeyFile(file), created: false }; // another process won the race
  } finally {
    rmSync(tmp, { force: true });
  }
}
