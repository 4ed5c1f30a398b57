/**
 * @module payloads
 *
 * Large values out of workflow history: the {@link PayloadStore} in the ledger's
 * database, references in their place, and the size limits of common/payload-limits.ts.
 */
export {
  offloadLarge,
  payloadRefBytesFromEnv,
  PayloadStore,
  REF_SUMMARY_BYTES,
  resolvePayloadRefs,
  type PutOptions,
  type ResolveOptions,
} from './payload-store';
export {
  PayloadCorruptError,
  PayloadInputError,
  PayloadNotFoundError,
  PayloadStoreError,
  PayloadStoreUnavailableError,
} from './errors';
export {
  DEFAULT_PAYLOAD_REF_BYTES,
  guardOutputSize,
  isPayloadRef,
  isPayloadTooLarge,
  jsonBytes,
  MAX_PAYLOAD_BYTES,
  PAYLOAD_TOO_LARGE,
  type PayloadRef,
} from '../../common/payload-limits';
