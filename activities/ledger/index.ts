/**
 * The completed-operation ledger (SPEC §8): one {@link Ledger} interface, a SQLite and a
 * PostgreSQL backend chosen by `LEDGER_URL`, and {@link executeOnce} for tool activities.
 * Design notes: docs/ledger.md.
 */
export * from './errors';
export * from './types';
export { executeOnce, executeOnceAtomic, SideEffectErrorClass } from './execute-once';
export type { ExecuteOnceOptions, ExecuteOutcome, ReconcileAnswer, SideEffectContext } from './execute-once';
export { openLedger, ledgerUrlFromEnv, redactUrl, DEFAULT_LEDGER_URL } from './open-ledger';
export type { OpenLedgerOptions } from './open-ledger';
export { SqliteLedger } from './sqlite-ledger';
export type { SqliteLedgerOptions } from './sqlite-ledger';
export { PostgresLedger, toPgPlaceholders } from './postgres-ledger';
export type { PostgresLedgerOptions } from './postgres-ledger';
export { toStoredError } from './stored-error';
