/**
 * Payload encryption (docs/security.md "Payload encryption"): the AES-256-GCM payload codec
 * used by every worker and client, its key ring, the policy that picks the keys, and the
 * codec server for the Temporal Web UI and CLI. Node code: it runs in data converters,
 * never in the workflow sandbox (that is why it is not in common/).
 *
 * @module codec
 */
export {
  AesGcmCodec,
  CIPHER,
  ENCRYPTED_ENCODING,
  isEncrypted,
  KEY_ID_METADATA,
  keyIdOf,
} from './aes-gcm-codec';
export { DEFAULT_CODEC_PORT, DEFAULT_UI_ORIGIN, startCodecServer } from './codec-server';
export type { CodecServerHandle, CodecServerOptions } from './codec-server';
export { CodecConfigError, CodecError, PayloadDecryptionError, UnknownKeyError } from './errors';
export {
  generateKey,
  isMissingFile,
  KEY_BYTES,
  keyFileJson,
  KeyRing,
  parseKeyFile,
  parseKeyList,
  readKeyFile,
  readOrCreateKeyFile,
} from './key-ring';
export type { KeyFileJson } from './key-ring';
export {
  CODEC_ENV_DOCS,
  dataConverterOf,
  DEFAULT_KEY_FILE_NAME,
  defaultKeyFile,
  isLocalDevServer,
  LEGACY_KEY_FILE,
  loadPayloadCodec,
  resolveKeyFile,
} from './load-codec';
export type { KeyFileLocation, LoadCodecOptions, LoadedCodec } from './load-codec';
