/**
 * SQLite dialect of the ledger: the embedded default for one host. WAL journal, every
 * write under `BEGIN IMMEDIATE` (the database write lock, so two processes cannot both see
 * "no row"), a busy timeout so concurrent processes queue instead of failing, and all lease
 * arithmetic in SQL time. The protocol itself is {@link SqlLedger}'s.
 */
import Database from 'better-sqlite3';
import { AsyncMutex } from './async-mutex';
import { assertNodeFloor } from '../../common/node-floor';
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
export class SqliteLedger extends SqlLedger<Database.Database> {
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
  private readonly db: Database.Database;
  /**
   * better-sqlite3 has one synchronous connection; a unit that awaits (commitWith's business
   * write) must not interleave with other calls on it, so every unit runs under this lock.
   */
  private readonly lock = new AsyncMutex();
  /** Prepared statements by SQL text, reused: preparing costs more than running most of them. */
  private readonly statements = new Map<string, Database.Statement>();

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
    // Below Node 22, better-sqlite3 13 crashes the process here instead of throwing.
    assertNodeFloor();
    this.db = new Database(path, { timeout: options.busyTimeoutMs ?? 10_000 });
    this.db.pragma('journal_mode = WAL');
    // A ledger entry that a power loss can undo would allow a duplicate side effect.
    this.db.pragma('synchronous = FULL');
    this.db.pragma('foreign_keys = ON');
  }

  /** @inheritDoc */
  close(): Promise<void> {
    return this.lock.run(() => {
      if (this.db.open) this.db.close();
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
    fn: (db: Database.Database) => MaybePromise<T>,
    durability: SqlDurability = 'full',
  ): Promise<T> {
    return this.lock.run(() => {
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
          if (this.db.inTransaction) this.control('ROLLBACK');
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
   * A transaction-control or pragma statement, prepared once: `db.exec` and `db.pragma` parse
   * their text on every call, and a unit of work runs two to four of them (issue 42).
   */
  private control(sql: ControlSql): void {
    let s = this.controls.get(sql);
    if (!s) this.controls.set(sql, (s = this.db.prepare(sql)));
    s.run();
  }

  private readonly controls = new Map<ControlSql, Database.Statement>();

  protected exec(db: Database.Database, sql: string, params: readonly unknown[]): number {
    return this.statement(db, sql).run(...bind(params)).changes;
  }

  protected query<T>(db: Database.Database, sql: string, params: readonly unknown[]): T[] {
    return this.statement(db, sql).all(...bind(params)) as T[];
  }

  protected nextToken(db: Database.Database): SqlFragment {
    // One counter row, incremented in the claim's own transaction.
    const r = this.statement(
      db,
      'UPDATE ledger_fencing SET last_token = last_token + 1 WHERE id = 1 RETURNING last_token',
    ).get() as { last_token: number };
    return { sql: '?', params: [r.last_token] };
  }

  /** The prepared statement of `sql`, prepared once (SQLite re-prepares it itself after a schema change). */
  private statement(db: Database.Database, sql: string): Database.Statement {
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

/** better-sqlite3 binds numbers, strings, bigints, buffers and null; a boolean becomes 0/1. */
const bind = (params: readonly unknown[]) => params.map((p) => (typeof p === 'boolean' ? Number(p) : p));
