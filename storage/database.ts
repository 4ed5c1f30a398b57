/** The ledger's database as a store beside the ledger sees it (see {@link LedgerDatabase}). */
import type { SqlAccess, SqlDurability } from './ledger/sql-unit';
import type { LedgerBackend, LedgerTx } from './ledger/types';

/**
 * The ledger's database as a store that lives beside the ledger uses it (storage/approvals):
 * the dialect's SQL for "now" and for durations, its time decoding, and units of work on the
 * ledger's own connection under its own lock, so such a store opens no second connection and
 * never interleaves with a ledger transaction. Its tables come from the ledger's migrations.
 */
export interface LedgerDatabase {
  readonly backend: LedgerBackend;
  /** SQL for database "now" (store times are never a worker's clock). */
  readonly now: string;
  /** SQL for a duration of `param` milliseconds, to add to or subtract from {@link now}. */
  ms(param: string): string;
  /** SQL for the milliseconds from now until the time in `column` (negative when past). */
  msUntil(column: string): string;
  /** Decodes a time column to ISO 8601 (null stays null). */
  isoTime(value: unknown): string | null;
  /**
   * Runs `fn` as one unit of work of kind `access` (see {@link SqlAccess}); `?` placeholders.
   * `durability` (default `full`): how durable its commit must be on its own ({@link SqlDurability}).
   */
  unit<T>(access: SqlAccess, fn: (tx: LedgerTx) => Promise<T>, durability?: SqlDurability): Promise<T>;
}
