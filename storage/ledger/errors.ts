/**
 * Errors thrown by the completed-operation ledger. Each sets `name` so logs and
 * Temporal failure details say which rule refused, and each carries the key it is about.
 */
import { AgentLoopGuardError } from '../../common/errors';

/** Base class of every ledger error; `key` is the operation key involved, when there is one. */
export class LedgerError extends AgentLoopGuardError {
  /** Stable machine-readable code; each subclass has its own. */
  readonly code: string = 'ledger_error';
  /** The operation key the error is about (absent for connection and configuration errors). */
  readonly key: string | undefined;

  /**
   * @param message human-readable explanation, including what to do about it
   * @param key the operation key involved, if any
   * @param options standard `ErrorOptions` (`cause`)
   */
  constructor(message: string, key?: string, options?: ErrorOptions) {
    super(message, options);
    this.key = key;
  }
}

/**
 * The same operation key was claimed with different canonical arguments (or another tool).
 * Non-retryable: retrying cannot make the arguments agree. The stored record is unchanged.
 */
export class LedgerConflictError extends LedgerError {
  /** The guard's stop reason for the same refusal. */
  override readonly code: string = 'idempotency_conflict';
  /** Hash of the canonical arguments stored with the key. */
  readonly storedArgsHash: string;
  /** Hash of the canonical arguments of the refused call. */
  readonly requestedArgsHash: string;
  /** Tool stored with the key. */
  readonly storedTool: string;
  /** Tool of the refused call. */
  readonly requestedTool: string;
  /** The run (workflow id) holding the key; null when the stored row did not say. */
  readonly storedRunId: string | null;

  /**
   * @param details stored and requested tool and args hash for `key`
   * @param options standard `ErrorOptions`
   */
  constructor(
    details: {
      key: string;
      storedTool: string;
      requestedTool: string;
      storedArgsHash: string;
      requestedArgsHash: string;
      storedRunId?: string | null;
    },
    options?: ErrorOptions,
  ) {
    const what =
      details.storedTool !== details.requestedTool
        ? `tool ${details.requestedTool} (stored: ${details.storedTool})`
        : `args hash ${details.requestedArgsHash} (stored: ${details.storedArgsHash})`;
    super(
      `Operation key "${details.key}" is already used by another operation: this call has ${what}. ` +
        'The same key must always mean the same operation; derive the key from the arguments that make it unique.',
      details.key,
      options,
    );
    this.storedArgsHash = details.storedArgsHash;
    this.requestedArgsHash = details.requestedArgsHash;
    this.storedTool = details.storedTool;
    this.requestedTool = details.requestedTool;
    this.storedRunId = details.storedRunId ?? null;
  }
}

/**
 * A write carried a fencing token that no longer owns the record: another executor took
 * the claim over, or the record was settled. The write was rejected and nothing changed.
 */
export class StaleTokenError extends LedgerError {
  override readonly code: string = 'ledger_stale_token';
  /** The token the caller presented. */
  readonly token: number;
  /** The token the record holds now (null when the record no longer exists). */
  readonly currentToken: number | null;
  /** The record's state now (null when the record no longer exists). */
  readonly currentState: string | null;

  /**
   * @param details the key, presented token and the record's current token/state
   * @param options standard `ErrorOptions`
   */
  constructor(
    details: {
      key: string;
      token: number;
      currentToken: number | null;
      currentState: string | null;
      op: string;
    },
    options?: ErrorOptions,
  ) {
    super(
      `Rejected ${details.op} for key "${details.key}" with fencing token ${details.token}: ` +
        (details.currentState === null
          ? 'the record no longer exists.'
          : `the record is ${details.currentState} with token ${details.currentToken}. ` +
            'Another executor owns or settled this operation; do not retry with this token.'),
      details.key,
      options,
    );
    this.token = details.token;
    this.currentToken = details.currentToken;
    this.currentState = details.currentState;
  }
}

/** An operation is not allowed in the record's current state (e.g. resolving a SUCCEEDED record). */
export class LedgerStateError extends LedgerError {
  override readonly code: string = 'ledger_invalid_state';
  /** The record's state when the operation was refused (null when it does not exist). */
  readonly state: string | null;

  /**
   * @param message what was refused and why
   * @param key the operation key
   * @param state the record's current state, or null when absent
   * @param options standard `ErrorOptions`
   */
  constructor(message: string, key: string, state: string | null, options?: ErrorOptions) {
    super(message, key, options);
    this.state = state;
  }
}

/** The ledger database cannot be opened or reached, or the URL is not understood. */
export class LedgerConnectionError extends LedgerError {
  override readonly code: string = 'ledger_unavailable';
  /** The ledger URL with any password replaced by `***`. */
  readonly url: string;

  /**
   * @param message what failed and how to fix it (must already name the redacted URL)
   * @param url the redacted URL
   * @param options standard `ErrorOptions` (`cause` = the driver error)
   */
  constructor(message: string, url: string, options?: ErrorOptions) {
    super(message, undefined, options);
    this.url = url;
  }
}
