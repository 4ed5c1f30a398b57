/** Errors of the payload store (storage/payloads). */
import { AgentLoopGuardError } from '../../common/errors';

/** Base class of every payload store error. */
export class PayloadStoreError extends AgentLoopGuardError {
  readonly code: string = 'payload_store_error';
}

/** A reference names a payload the store does not hold (never stored, reaped, another run's). */
export class PayloadNotFoundError extends PayloadStoreError {
  override readonly code: string = 'payload_not_found';

  constructor(
    readonly runId: string,
    readonly id: string,
  ) {
    super(
      `payload ${id} of run ${runId} is not in the payload store (reaped after the run's retention, or stored by another database)`,
    );
  }
}

/** A stored payload's body no longer hashes to its id. */
export class PayloadCorruptError extends PayloadStoreError {
  override readonly code: string = 'payload_corrupt';

  constructor(runId: string, id: string) {
    super(`payload ${id} of run ${runId} does not match its content hash: the stored row was changed`);
  }
}

/** The ledger the store was asked to live beside has no SQL database, or a bad argument. */
export class PayloadStoreUnavailableError extends PayloadStoreError {
  override readonly code: string = 'payload_store_unavailable';
}

/** Bad input (a run id that is no string, a reference that is no reference, a bad threshold). */
export class PayloadInputError extends PayloadStoreError {
  override readonly code: string = 'payload_invalid_input';
}
