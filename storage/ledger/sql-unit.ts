/**
 * Units of work of the SQL ledger (storage/ledger/sql-ledger.ts): what a unit asks of the
 * database, the steps it yields, and {@link driveUnit}, which performs them.
 *
 * Each unit of work is a generator that yields SQL steps and receives their answers. The
 * reason is SQLite's driver (`node:sqlite`): it is synchronous, and a SQLite transaction that awaited between
 * two statements would let another connection of the same process (a second ledger, the demo
 * world) start `BEGIN IMMEDIATE` and block the one thread in its busy handler until it times
 * out. Driven by {@link driveUnit}, a unit runs synchronously as long as the dialect answers
 * synchronously (SQLite) and asynchronously when it answers with promises (PostgreSQL).
 */
import type { LedgerTx } from './types';

/**
 * What a unit of work needs from the database, so each dialect can take the cheapest lock
 * that keeps the protocol correct:
 * - `read`: reads only;
 * - `write`: one token-guarded write (its `WHERE token = ?` is the guard), then at most a
 *   read that explains a rejection;
 * - `transaction`: read, decide, write; a row read with the dialect's {@link UnitDialect.forUpdate}
 *   cannot be changed by anyone else until the unit ends, and the unit commits or rolls back as one.
 */
export type SqlAccess = 'read' | 'write' | 'transaction';

/**
 * How durable a unit's commit must be on its own:
 * - `full`: on disk when the unit returns (SQLite `synchronous=FULL`: the WAL is fsynced);
 * - `before-dispatch`: a claim. It authorises no side effect by itself — the dispatch (or
 *   the commit that carries the business write) is durable before any side effect runs, and
 *   the WAL is written in order, so that flush puts the claim on disk too. A power loss can
 *   only take a claim together with everything after it, before any side effect ran under
 *   it: never a claim or a dispatch whose side effect happened. SQLite then skips the claim's
 *   own fsync (`synchronous=NORMAL` for that unit); a process crash loses nothing either way
 *   (the WAL is in the OS's hands). PostgreSQL commits it as any unit (a database server can
 *   restart alone, so there a lost claim would make the worker's dispatch fail).
 * - `unflushed`: bookkeeping that guarantees nothing by itself — a read's tool counter and
 *   progress fact. Committed, so a process crash loses nothing; not flushed on its
 *   own (SQLite `synchronous=NORMAL` for the unit): the next flushed commit carries it, and a
 *   power loss before that may take it. What that can cost is a read counted once less and a
 *   progress version that reads lower after the machine restarts — at worst a `no_progress`
 *   stop, which keeps its checkpoint and resumes — never a claim, a dispatch or a committed
 *   write. PostgreSQL commits it as any unit.
 */
export type SqlDurability = 'full' | 'before-dispatch' | 'unflushed';

/** A piece of SQL text with the values of its `?` placeholders, in order. */
export interface SqlFragment {
  sql: string;
  params: readonly unknown[];
}

/** A value now (SQLite) or later (PostgreSQL). */
export type MaybePromise<T> = T | Promise<T>;

/** True when `value` is a promise (or another thenable) rather than a value. */
export function isPromiseLike<T>(value: MaybePromise<T>): value is Promise<T> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}

/**
 * The dialect's SQL text and decoding as the units of work use them; the SQL ledger builds
 * it from its `protected abstract` members.
 */
export interface UnitDialect {
  /** SQL for database "now": leases are never computed from a worker's clock. */
  readonly now: string;
  /** Appended to the row read of a `transaction` to lock the row (empty when the unit already locks it). */
  readonly forUpdate: string;
  /** SQL for a duration of `param` milliseconds that can be added to or subtracted from {@link now}. */
  ms(param: string): string;
  /** SQL for the milliseconds from now until the time in `column` (negative when past). */
  msUntil(column: string): string;
  /** Decodes a time column to ISO 8601 (null stays null). */
  isoTime(value: unknown): string | null;
  /** Decodes a JSON column (null stays null). */
  parseJson(value: unknown): unknown;
}

/** One step a unit of work asks the dialect to perform; the answer is sent back into the unit. */
export type SqlStep =
  /** Answer: rows changed. */
  | { kind: 'exec'; sql: string; params: readonly unknown[] }
  /** Answer: the rows (a query, or a write with `RETURNING`). */
  | { kind: 'query'; sql: string; params: readonly unknown[] }
  /** Answer: a {@link SqlFragment} for a fresh fencing token. */
  | { kind: 'token' }
  /** Answer: what the caller's business write returned (commitWith only). */
  | { kind: 'work'; work: (tx: LedgerTx) => MaybePromise<unknown> };

/** A unit of work: yields steps, receives their answers, returns `T`. */
export type Unit<T> = Generator<SqlStep, T, unknown>;

/** Runs a statement; answers how many rows it changed. */
export function* exec(sql: string, params: readonly unknown[] = []): Unit<number> {
  return (yield { kind: 'exec', sql, params }) as number;
}

/** Runs a statement that returns rows (a query, or a write with `RETURNING`). */
export function* query<T>(sql: string, params: readonly unknown[] = []): Unit<T[]> {
  return (yield { kind: 'query', sql, params }) as T[];
}

/** A fresh fencing token, as SQL, allocated inside the unit. */
export function* nextToken(): Unit<SqlFragment> {
  return (yield { kind: 'token' }) as SqlFragment;
}

/** Runs the caller's business write on the unit's own connection (commitWith only). */
export function* businessWork<T>(work: (tx: LedgerTx) => MaybePromise<T>): Unit<T> {
  return (yield { kind: 'work', work }) as T;
}

/**
 * Performs the unit's steps with `perform`, sending each answer back in. Stays synchronous
 * while `perform` answers synchronously; continues after the first promise otherwise.
 */
export function driveUnit<T>(
  unit: Unit<T>,
  perform: (step: SqlStep) => MaybePromise<unknown>,
  answer?: unknown,
): MaybePromise<T> {
  for (;;) {
    const next = unit.next(answer);
    if (next.done) return next.value;
    const result = perform(next.value);
    if (isPromiseLike(result)) return result.then((value) => driveUnit(unit, perform, value));
    answer = result;
  }
}
