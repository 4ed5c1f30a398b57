/**
 * @module ledger
 *
 * The completed-operation ledger (docs/spec.md §8): one {@link Ledger} interface, the
 * protocol written once in {@link SqlLedger}, a SQLite and a PostgreSQL dialect chosen by
 * `LEDGER_URL`, and {@link executeOnce} for tool activities. Design notes: docs/ledger.md.
 */
export {
  LedgerConflictError,
  LedgerConnectionError,
  LedgerError,
  LedgerStateError,
  StaleTokenError,
} from './errors';
export { DEFAULT_REAP_TTL_MS, ExpiredDispatchPolicy, LEDGER_STATES, LedgerState } from './types';
export type {
  ClaimInput,
  ClaimOutcome,
  FailOptions,
  Ledger,
  LedgerBackend,
  LedgerRecord,
  LedgerResolution,
  LedgerTx,
  ListOptions,
  ReapableRunsOptions,
  ReapOptions,
  ResolveInput,
  StoredError,
} from './types';
export { executeOnce, executeOnceAtomic, SideEffectErrorClass } from './execute-once';
export type {
  AtomicWorkContext,
  CommitRetry,
  ExecuteOnceOptions,
  ExecuteOutcome,
  ReconcileAnswer,
  SideEffectContext,
} from './execute-once';
export { isTransientDatabaseError } from './transient-error';
export { settleAdvice } from './resolve-input';
export { openLedger, ledgerUrlFromEnv, redactUrl, DEFAULT_LEDGER_URL } from './open-ledger';
export type { OpenLedgerOptions } from './open-ledger';
export { SqlLedger } from './sql-ledger';
export type { LedgerDatabase, LedgerRow, MaybePromise, SqlAccess, SqlFragment } from './sql-ledger';
export { SqliteLedger } from './sqlite-ledger';
export type { SqliteLedgerOptions } from './sqlite-ledger';
export { PostgresLedger, toPgPlaceholders } from './postgres-ledger';
export type { PostgresLedgerOptions } from './postgres-ledger';
export { toStoredError } from './stored-error';
export { isSha256ArgsHash, sameArgsHash, sha256ArgsHash, SHA256_ARGS_HASH_PREFIX } from './args-hash';
