/**
 * SQLite dialect of the ledger: the embedded default for one host. WAL journal, every
 * write under `BEGIN IMMEDIATE` (the database write lock, so two processes cannot both see
 * "no row"), a busy timeout so concurrent processes queue instead of failing, and all lease
 * arithmetic in SQL time. The protocol itself is {@link SqlLedger}'s.
 */
import { AsyncMutex } from './async-mutex';
import { openSqlite, type DatabaseSync, type SQLInputValue, type StatementSync } from '../sqlite-driver';
import { SQLITE_MIGRATIONS, SQLITE_MIGRATIONS_TABLE } from '../migrations';
import {
  isPromiseLike,
  SqlLedger,
  type MaybePromise,
  type SqlAccess,
  type SqlDurability,
  type SqlFragment,
} from './sql-ledger';

/** Options of {@link SqliteLedger}. */
export interface SqliteLedgerOptions {
  /** How long to wait for another process's write lock before failing (default 10 000 ms). */
  busyTimeoutMs?: number;
}

/** The SQLite {@link Ledger}. Open with `openLedger('sqlite:PATH')` or construct directly. */
export class SqliteLedger extends SqlLedger<DatabaseSync> {
  /** @inheritDoc */
  readonly backend = 'sqlite' as const;
  /** Integer milliseconds; `unixepoch('subsec')` is constant within one statement. */
  protected readonly now = `CAST(unixepoch('subsec') * 1000 AS INTEGER)`;
  // BEGIN IMMEDIATE already holds the database write lock: rows, and absent keys, are ours.
  protected readonly forUpdate = '';
  protected readonly locksAbsentKeys = true;
  protected readonly migrations = SQLITE_MIGRATIONS;
  protected readonly migrationsTable = SQLITE_MIGRATIONS_TABLE;
  protected readonly location: string;
  private readonly db: DatabaseSync;
  /** False once {@link close} ran (Node 22.13's `DatabaseSync` has no `isOpen`). */
  private open = true;
  /**
   * `node:sqlite` gives one synchronous connection; a unit that awaits (commitWith's business
   * write) must not interleave with other calls on it, so every unit runs under this lock.
   */
  private readonly lock = new AsyncMutex();
  /** Prepared statements by SQL text, reused: preparing costs more than running most of them. */
  private readonly statements = new Map<string, StatementSync>();

  /**
   * Opens (creating if needed) the database file. Does not migrate; call {@link migrate}.
   * @param path file path, or `:memory:`
   */
  constructor(
    readonly path: string,
    options: SqliteLedgerOptions = {},
  ) {
    super();
    this.location = path;
    // Below the Node floor this throws the message naming it and its remedy.
    this.db = openSqlite(path);
    // The pragma, not the `timeout` option: that option is Node 22.16's, the floor is 22.13.
    this.db.exec(`PRAGMA busy_timeout = ${busyTimeoutMs(options.busyTimeoutMs)}`);
    this.db.exec('PRAGMA journal_mode = WAL');
    // A ledger entry that a power loss can undo would allow a duplicate side effect.
    this.db.exec('PRAGMA synchronous = FULL');
    this.db.exec('PRAGMA foreign_keys = ON');
    // A 16 MB page cache, as better-sqlite3 compiled in before (Node's SQLite defaults to 2 MB):
    // a big ledger's list and reaper reads stay in memory.
    this.db.exec('PRAGMA cache_size = -16000');
  }

  /** @inheritDoc */
  close(): Promise<void> {
    return this.lock.run(() => {
      if (!this.open) return;
      this.open = false;
      this.db.close();
    });
  }

  protected ms(param: string): string {
    return param;
  }

  protected msUntil(column: string): string {
    return `(${column} - ${this.now})`;
  }

  protected connect<T>(
    access: SqlAccess,
    fn: (db: DatabaseSync) => MaybePromise<T>,
    durability: SqlDurability = 'full',
  ): Promise<T> {
    return this.lock.run(() => {
      if (!this.open) throw new Error(`the SQLite ledger at ${this.location} is closed`);
      if (access === 'read') return fn(this.db);
      // A claim's commit skips its own fsync: the dispatch's flushes it; a read's bookkeeping
      // needs none (SqlDurability).
      const deferred = durability !== 'full';
      if (deferred) this.control('PRAGMA synchronous = NORMAL');
      const restore = (): void => {
        if (deferred) this.control('PRAGMA synchronous = FULL');
      };
      // Writes take the write lock up front: a deferred transaction that read first could
      // not upgrade after another process wrote (SQLITE_BUSY), and would decide on stale rows.
      try {
        this.control('BEGIN IMMEDIATE');
      } catch (err) {
        restore();
        throw err;
      }
      const commit = (value: T): T => {
        try {
          this.control('COMMIT');
        } finally {
          restore();
        }
        return value;
      };
      const rollback = (err: unknown): never => {
        try {
          this.rollback();
        } finally {
          restore();
        }
        throw err;
      };
      try {
        // Synchronous unless the unit awaits a business write (commitWith): then, and only
        // then, the transaction stays open across the await.
        const value = fn(this.db);
        return isPromiseLike(value) ? value.then(commit).catch(rollback) : commit(value);
      } catch (err) {
        return rollback(err);
      }
    });
  }

  /**
   * A transaction-control or pragma statement, prepared once: `db.exec` parses its text on
   * every call, and a unit of work runs two to four of them.
   */
  private control(sql: ControlSql): void {
    let s = this.controls.get(sql);
    if (!s) this.controls.set(sql, (s = this.db.prepare(sql)));
    s.run();
  }

  private readonly controls = new Map<ControlSql, StatementSync>();

  /**
   * Rolls the open transaction back. SQLite may have rolled it back itself already (after
   * some errors, e.g. SQLITE_FULL); Node 22.13 has no `isTransaction` to ask, so that answer
   * is the sign, and the error that ended the unit is the one that counts.
   */
  private rollback(): void {
    try {
      this.control('ROLLBACK');
    } catch (err) {
      if (!/no transaction is active/.test((err as Error).message)) throw err;
    }
  }

  protected exec(db: DatabaseSync, sql: string, params: readonly unknown[]): number {
    return this.statement(db, sql).run(...bind(params)).changes as number;
  }

  protected query<T>(db: DatabaseSync, sql: string, params: readonly unknown[]): T[] {
    return this.statement(db, sql).all(...bind(params)) as unknown as T[];
  }

  protected nextToken(db: DatabaseSync): SqlFragment {
    // One counter row, incremented in the claim's own transaction.
    const r = this.statement(
      db,
      'UPDATE ledger_fencing SET last_token = last_token + 1 WHERE id = 1 RETURNING last_token',
    ).get() as unknown as { last_token: number };
    return { sql: '?', params: [r.last_token] };
  }

  /** The prepared statement of `sql`, prepared once (SQLite re-prepares it itself after a schema change). */
  private statement(db: DatabaseSync, sql: string): StatementSync {
    let s = this.statements.get(sql);
    if (!s) {
      // A few texts vary (IN lists of the reaper's runs): keep the cache bounded.
      if (this.statements.size >= STATEMENT_CACHE_MAX) this.statements.clear();
      s = db.prepare(sql);
      this.statements.set(sql, s);
    }
    return s;
  }

  protected isoTime(value: unknown): string | null {
    return value === null ? null : new Date(value as number).toISOString();
  }

  protected parseJson(value: unknown): unknown {
    return value === null ? null : JSON.parse(value as string);
  }
}

/** The statements {@link SqliteLedger.control} runs. */
type ControlSql =
  'BEGIN IMMEDIATE' | 'COMMIT' | 'ROLLBACK' | 'PRAGMA synchronous = NORMAL' | 'PRAGMA synchronous = FULL';

/** How many distinct statements {@link SqliteLedger} keeps prepared. */
const STATEMENT_CACHE_MAX = 500;

/**
 * `node:sqlite` binds numbers, strings, bigints, byte arrays and null; a boolean becomes 0/1.
 * A number binds as a REAL (as better-sqlite3's did): every number column of the schema is
 * declared INTEGER, whose affinity stores a whole number as an integer (test/ledger/sqlite-types.test.ts).
 */
const bind = (params: readonly unknown[]): SQLInputValue[] =>
  params.map((p) => (typeof p === 'boolean' ? Number(p) : p) as SQLInputValue);

/** The busy timeout in whole milliseconds (default 10 000): it is written into a PRAGMA. */
function busyTimeoutMs(ms: number | undefined): number {
  if (ms === undefined) return 10_000;
  if (!Number.isFinite(ms) || ms < 0)
    throw new TypeError(
      `SqliteLedger: busyTimeoutMs must be a non-negative number of milliseconds, got ${ms}`,
    );
  return Math.ceil(ms);
}
