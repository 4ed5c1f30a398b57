/**
 * Errors of the payload codec (codec/): a key ring that cannot be loaded, a payload that
 * cannot be decrypted. Under the package's error root: each has a stable `code` and its class
 * name as `name`, so a worker's log and a codec server's answer say which of them it was, and
 * none ever carries key material.
 */
import { AgentLoopGuardError } from '../common/errors';

/** Base class of every codec error. */
export class CodecError extends AgentLoopGuardError {
  readonly code: string = 'codec_error';
}

/**
 * The key configuration is missing or malformed (AGENT_CODEC, AGENT_CODEC_KEYS,
 * AGENT_CODEC_ACTIVE_KEY, AGENT_CODEC_KEY_FILE). The message names the variable or file.
 */
export class CodecConfigError extends CodecError {
  override readonly code: string = 'codec_config_invalid';
}

/**
 * A payload was encrypted with a key id this key ring does not hold: the key was removed
 * from the ring too early, or the process was given another ring than the writer's.
 */
export class UnknownKeyError extends CodecError {
  override readonly code: string = 'codec_unknown_key';
  /** The key id the payload names (`encryption-key-id`). */
  readonly keyId: string;

  constructor(keyId: string, known: readonly string[], options?: ErrorOptions) {
    super(
      `payload was encrypted with key id "${keyId}", which is not in the key ring (known: ${known.join(', ') || 'none'}); ` +
        'add that key back to AGENT_CODEC_KEYS / the key file (keep old keys until no history needs them)',
      options,
    );
    this.keyId = keyId;
  }
}

/**
 * AES-GCM refused the payload: its ciphertext, nonce, authentication tag or key id was
 * changed after encryption, or it is cut short. Nothing of it is returned.
 */
export class PayloadDecryptionError extends CodecError {
  override readonly code: string = 'payload_decryption_failed';
  /** The key id the payload names. */
  readonly keyId: string;

  constructor(keyId: string, options?: ErrorOptions) {
    super(
      `encrypted payload (key id "${keyId}") failed authentication: it was tampered with, truncated, or the key under that id is not the one it was encrypted with`,
      options,
    );
    this.keyId = keyId;
  }
}
