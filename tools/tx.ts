/** The async SQL surface tool code runs on; the same shape as the ledger's `LedgerTx`. */
export interface Tx {
  /** Runs a statement; returns the number of rows changed. */
  run(sql: string, params?: readonly unknown[]): Promise<{ changes: number }>;
  /** Runs a query; returns all rows. */
  all<T = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<T[]>;
  /** Runs a query; returns the first row or undefined. */
  get<T = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<T | undefined>;
}
