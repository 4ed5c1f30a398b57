/**
 * A Temporal `PayloadCodec` that encrypts every payload with AES-256-GCM under the key
 * ring's active key, so tool args, tool results, conversations, checkpoints, queries,
 * updates and the run's summary reach the Temporal server (and its history, visibility
 * store and Web UI) only as ciphertext.
 *
 * It runs outside the workflow sandbox, in the data converter of workers and clients: the
 * workflow sees plain payloads, the server sees encrypted ones.
 *
 * Wire format of an encrypted payload (the layout of Temporal's encryption sample, so its
 * tooling recognises it):
 *  - metadata `encoding` = `binary/encrypted`, `encryption-key-id` = the key id,
 *    `encryption-cipher` = `AES-256-GCM`;
 *  - data = nonce (12 random bytes) ‖ ciphertext ‖ GCM tag (16 bytes), the plaintext being
 *    the whole original payload (metadata and data) as protobuf bytes, and the key id bound
 *    in as additional authenticated data, so moving a payload to another key id fails too.
 *  - the plaintext is either those protobuf bytes as they are, or the byte 0x01
 *    followed by them deflated (raw deflate, 2 KiB window, codec/deflate-dictionary.ts as preset
 *    dictionary) when that is smaller. A Payload's protobuf never starts with 0x01 (field
 *    number 0 does not exist), so the two forms cannot be confused, and a payload written
 *    before compression decodes as before. Compression happens inside the encryption: the
 *    server sees only ciphertext, shorter. `AGENT_CODEC_COMPRESS=off` writes the first form
 *    only (docs/security.md "Payload encryption" says when to choose that).
 *
 * Decoding passes every payload that is not `binary/encrypted` through unchanged: histories
 * recorded before encryption was on, and payloads written with AGENT_CODEC=off, stay readable.
 * (Search attributes never pass through a codec: the SDK leaves them plain so the server can
 * index them; `AgentState` filtering therefore keeps working.)
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { PayloadDecryptionError, UnknownKeyError, CodecError } from './errors';
import type { KeyRing } from './key-ring';
import { DEFLATE_DICTIONARY_V1 } from './deflate-dictionary';

/** `encoding` of an encrypted payload. */
export const ENCRYPTED_ENCODING = 'binary/encrypted';
/** Metadata key naming the key a payload was encrypted with. */
export const KEY_ID_METADATA = 'encryption-key-id';
/** Metadata key naming the cipher. */
export const CIPHER_METADATA = 'encryption-cipher';
export const CIPHER = 'AES-256-GCM';

/** The plaintext's first byte when it is deflated with dictionary v1 (see the module comment). */
const DEFLATED_V1 = 0x01;
/**
 * Below this a payload is not worth a deflate call: it could save ~20 bytes (its JSON header)
 * for ~13 µs of CPU. Tool calls, their results and planner turns are above it.
 */
const MIN_COMPRESS_BYTES = 128;
/** An inflated payload above this is refused (Temporal's own payload limit is far below). */
const MAX_INFLATED_BYTES = 256 * 1024 * 1024;
/**
 * Form 0x01's deflate: a 2 KiB window (the dictionary fits; a payload's repeats are near) and a
 * small hash, so each call allocates ~10 KB instead of ~300 KB: 42 µs for a step's two deflates
 * and two inflates instead of 60–68, the same sizes. Inflating needs the same window.
 */
const DEFLATE_V1 = { dictionary: DEFLATE_DICTIONARY_V1, windowBits: 11, memLevel: 2 } as const;
const INFLATE_V1 = {
  dictionary: DEFLATE_DICTIONARY_V1,
  windowBits: 11,
  maxOutputLength: MAX_INFLATED_BYTES,
} as const;

/**
 * How many payloads an {@link AesGcmCodec} remembers having encrypted (see its `recent`):
 * a worker decodes its own step payloads within moments (the tool's input when the activity
 * task arrives, its result in the next activation); a few hundred cover every step in flight.
 */
const RECENT_PAYLOADS = 256;

/** How an {@link AesGcmCodec} writes payloads (it reads every form whatever these say). */
export interface AesGcmCodecOptions {
  /** Deflate the plaintext when that makes it smaller (default true). */
  readonly compress?: boolean;
}

/** The metadata bytes every encrypted payload carries, encoded once. */
const ENCRYPTED_ENCODING_BYTES = new TextEncoder().encode(ENCRYPTED_ENCODING);
const CIPHER_BYTES = new TextEncoder().encode(CIPHER);

const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const utf8 = new TextEncoder();
const fromUtf8 = new TextDecoder();

/** Whether `p` is a payload this codec encrypted. */
export function isEncrypted(p: Payload): boolean {
  const enc = p.metadata?.encoding;
  return enc !== undefined && enc !== null && fromUtf8.decode(enc) === ENCRYPTED_ENCODING;
}

/** The key id an encrypted payload names (undefined for a plain one). */
export function keyIdOf(p: Payload): string | undefined {
  if (!isEncrypted(p)) return undefined;
  const id = p.metadata?.[KEY_ID_METADATA];
  return id ? fromUtf8.decode(id) : undefined;
}

/** AES-256-GCM payload encryption over a {@link KeyRing}; see the module comment. */
export class AesGcmCodec implements PayloadCodec {
  /** Whether new payloads are deflated when that makes them smaller. */
  readonly compress: boolean;

  /** @param ring the keys; new payloads use `ring.activeKeyId` */
  constructor(
    readonly ring: KeyRing,
    options: AesGcmCodecOptions = {},
  ) {
    this.compress = options.compress ?? true;
  }

  /**
   * Payloads this codec encrypted lately, by nonce: a worker encrypts a step's tool
   * input and result and decodes the same bytes moments later (the activity task, the next
   * activation). A payload whose key id and whole ciphertext are byte for byte one of these is
   * answered with what was encrypted — exactly what decrypting and inflating it would give —
   * without the cipher and the inflate. Anything else is decrypted. Oldest out first.
   */
  private readonly recent = new Map<string, { keyId: string; data: Uint8Array; payload: Payload }>();

  /** Key ids as bytes (metadata and AAD), encoded once per id. */
  private readonly idBytes = new Map<string, Uint8Array>();

  private keyIdBytes(keyId: string): Uint8Array {
    let b = this.idBytes.get(keyId);
    if (!b) this.idBytes.set(keyId, (b = utf8.encode(keyId)));
    return b;
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((p) => this.encryptOne(p));
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((p) => (isEncrypted(p) ? this.decryptOne(p) : p));
  }

  private encryptOne(p: Payload): Payload {
    const keyId = this.ring.activeKeyId;
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.ring.activeKey, nonce, { authTagLength: TAG_BYTES });
    const id = this.keyIdBytes(keyId);
    cipher.setAAD(id);
    const plain = this.packed(temporal.api.common.v1.Payload.encode(p).finish());
    const data = Buffer.concat([nonce, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
    // A copy: the caller's bytes may be a view of a buffer it goes on to reuse.
    this.remember(nonce, {
      keyId,
      data,
      payload: { metadata: { ...p.metadata }, data: p.data ? Uint8Array.from(p.data) : p.data },
    });
    return {
      metadata: {
        encoding: ENCRYPTED_ENCODING_BYTES,
        [KEY_ID_METADATA]: id,
        [CIPHER_METADATA]: CIPHER_BYTES,
      },
      data: new Uint8Array(data),
    };
  }

  /** The plaintext: the payload's protobuf bytes, deflated behind 0x01 when that is smaller. */
  private packed(proto: Uint8Array): Uint8Array {
    if (!this.compress || proto.length < MIN_COMPRESS_BYTES) return proto;
    const z = deflateRawSync(proto, DEFLATE_V1);
    if (z.length + 1 >= proto.length) return proto;
    const out = new Uint8Array(z.length + 1);
    out[0] = DEFLATED_V1;
    out.set(z, 1);
    return out;
  }

  /** The payload's protobuf bytes from a plaintext of either form. */
  private unpacked(plain: Buffer, keyId: string): Uint8Array {
    if (plain[0] !== DEFLATED_V1) return plain;
    try {
      return inflateRawSync(plain.subarray(1), INFLATE_V1);
    } catch (err) {
      throw new CodecError(`a payload encrypted with key ${keyId} decrypted but did not inflate`, {
        cause: err,
      });
    }
  }

  private remember(nonce: Uint8Array, entry: { keyId: string; data: Uint8Array; payload: Payload }): void {
    this.recent.set(Buffer.from(nonce).toString('latin1'), entry);
    if (this.recent.size > RECENT_PAYLOADS) this.recent.delete(this.recent.keys().next().value!);
  }

  /** The payload this codec encrypted as exactly `data` under `keyId`, if it still remembers it. */
  private encryptedHere(keyId: string, data: Uint8Array): Payload | null {
    if (data.length < NONCE_BYTES) return null;
    const hit = this.recent.get(Buffer.from(data.buffer, data.byteOffset, NONCE_BYTES).toString('latin1'));
    if (!hit || hit.keyId !== keyId || Buffer.compare(hit.data, data) !== 0) return null;
    // A copy each time: what the caller does with its bytes must not reach the next decode.
    const bytes = hit.payload.data;
    return { metadata: { ...hit.payload.metadata }, data: bytes ? Uint8Array.from(bytes) : bytes };
  }

  private decryptOne(p: Payload): Payload {
    const keyId = keyIdOf(p);
    if (!keyId) throw new CodecError(`an encrypted payload has no ${KEY_ID_METADATA} metadata`);
    const mine = p.data ? this.encryptedHere(keyId, p.data) : null;
    if (mine) return mine;
    const key = this.ring.key(keyId);
    if (!key) throw new UnknownKeyError(keyId, this.ring.keyIds);
    const data = p.data ?? new Uint8Array();
    if (data.length < NONCE_BYTES + TAG_BYTES) throw new PayloadDecryptionError(keyId);
    const nonce = data.subarray(0, NONCE_BYTES);
    const tag = data.subarray(data.length - TAG_BYTES);
    const body = data.subarray(NONCE_BYTES, data.length - TAG_BYTES);
    let plain: Buffer;
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, nonce, { authTagLength: TAG_BYTES });
      decipher.setAAD(this.keyIdBytes(keyId));
      decipher.setAuthTag(tag);
      plain = Buffer.concat([decipher.update(body), decipher.final()]);
    } catch (err) {
      throw new PayloadDecryptionError(keyId, { cause: err });
    }
    const inner = temporal.api.common.v1.Payload.decode(this.unpacked(plain, keyId));
    return { metadata: inner.metadata, data: inner.data };
  }
}
