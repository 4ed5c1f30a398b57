/**
 * The ledger protocol, written once for every SQL backend (docs/spec.md §8, docs/ledger.md).
 *
 * {@link SqlLedger} owns claim, dispatch, commit, fail, renew, resolve, list, reap and
 * migrate. A backend supplies only its dialect through `protected abstract` members: how to
 * open a unit of work (and what it locks), how to run one statement, the SQL for database
 * time and for a fresh fencing token, and how to decode the driver's times and JSON. This is
 * the shape of powertools' `BasePersistenceLayer`: the logic lives in the base class, so the
 * backends cannot drift apart. The pure rules it applies are shared too: `decideClaim`
 * (what a claim does) and `planResolution` (what an operator may settle).
 *
 * Each unit of work is a generator that yields SQL steps and receives their answers
 * (sql-unit.ts says why); the units live beside this file by concept: the row and its
 * fencing rule (ledger-row.ts), the claim (claim-units.ts), the writes after it
 * (settle-units.ts) and the reaper's (reap-units.ts). {@link SqlLedger} opens a unit of
 * work on the dialect's connection and drives the unit's steps on it.
 *
 * All SQL here uses `?` placeholders; a dialect translates them if its driver wants others.
 */
import { assertClaimInput, assertLeaseMs } from './claim-decision';
import { claimLocked, insertClaim } from './claim-units';
import type { LedgerDatabase } from '../database';
import { LIVE_STATES, listUnit, readRow } from './ledger-row';
import { assertNotNewer, type Migration } from '../migrations';
import {
  finishedBefore,
  reapableRunsQuery,
  reapRecordsUnit,
  reapRunDataUnit,
  runDataIdleBefore,
} from './reap-units';
import { parseResolveInput } from './resolve-input';
import {
  claimCommitWithUnit,
  commitWithUnit,
  failTransientUnit,
  fencedUnit,
  fencedWithUnit,
  resolveUnit,
  succeeded,
} from './settle-units';
import {
  driveUnit,
  exec,
  isPromiseLike,
  query,
  type MaybePromise,
  type SqlAccess,
  type SqlDurability,
  type SqlFragment,
  type SqlStep,
  type Unit,
  type UnitDialect,
} from './sql-unit';
import { toJsonText, toStoredError } from './stored-error';
import {
  LedgerState,
  type ClaimInput,
  type ClaimOutcome,
  type FailOptions,
  type Ledger,
  type LedgerBackend,
  type LedgerRecord,
  type LedgerTx,
  type ListOptions,
  type ReapableRunsOptions,
  type ReapOptions,
  type ResolveInput,
} from './types';

export type { LedgerDatabase } from '../database';
export type { LedgerRow } from './ledger-row';
export {
  isPromiseLike,
  type MaybePromise,
  type SqlAccess,
  type SqlDurability,
  type SqlFragment,
} from './sql-unit';

/** A concurrent release can delete the row between a failed insert and the lock; retry this often. */
const CLAIM_ATTEMPTS = 5;

/**
 * A {@link Ledger} over SQL. Subclasses implement the dialect; everything a caller can
 * observe — states, tokens, outcomes, errors and their messages — is decided here.
 *
 * @typeParam C the connection a unit of work runs on (a `node:sqlite` database, a `pg` client)
 */
export abstract class SqlLedger<C> implements Ledger {
  /** @inheritDoc */
  abstract readonly backend: LedgerBackend;

  private unitDialect: UnitDialect | undefined;

  // ---- The dialect ------------------------------------------------------------------

  /** SQL for database "now": leases are never computed from a worker's clock. */
  protected abstract readonly now: string;
  /** Appended to the row read of a `transaction` to lock the row (empty when the unit already locks it). */
  protected abstract readonly forUpdate: string;
  /**
   * True when a `transaction` also stops others from inserting an absent key (SQLite's
   * database write lock). False (PostgreSQL's row locks): a claim then tries its insert
   * first, as one statement, because nobody can lock a row that does not exist yet.
   */
  protected abstract readonly locksAbsentKeys: boolean;
  /** The versioned schema migrations of this dialect. */
  protected abstract readonly migrations: readonly Migration[];
  /** `CREATE TABLE IF NOT EXISTS ledger_migrations …` in this dialect. */
  protected abstract readonly migrationsTable: string;
  /** Where this ledger lives, for error messages (a file path, a schema). */
  protected abstract readonly location: string;

  /** SQL for a duration of `param` milliseconds that can be added to or subtracted from {@link now}. */
  protected abstract ms(param: string): string;
  /** SQL for the milliseconds from now until the time in `column` (negative when past). */
  protected abstract msUntil(column: string): string;
  /**
   * Opens a unit of work of the given kind (see {@link SqlAccess}), runs `fn` on its
   * connection and commits, or rolls back when `fn` throws or rejects. `fn` answers
   * synchronously when every statement did. `durability` (see {@link SqlDurability}) may let
   * a dialect skip the unit's own flush to disk; default `full`.
   */
  protected abstract connect<T>(
    access: SqlAccess,
    fn: (c: C) => MaybePromise<T>,
    durability?: SqlDurability,
  ): Promise<T>;
  /** Runs a statement; returns how many rows it changed. */
  protected abstract exec(c: C, sql: string, params: readonly unknown[]): MaybePromise<number>;
  /** Runs a statement that returns rows (a query, or a write with `RETURNING`). */
  protected abstract query<T>(c: C, sql: string, params: readonly unknown[]): MaybePromise<T[]>;
  /**
   * The value of a fresh fencing token, as SQL, allocated inside the unit on `c`. Tokens
   * come from one counter for the whole ledger, so a newer claim always has a larger token.
   */
  protected abstract nextToken(c: C): MaybePromise<SqlFragment>;
  /** Decodes a time column to ISO 8601 (null stays null). */
  protected abstract isoTime(value: unknown): string | null;
  /** Decodes a JSON column (null stays null). */
  protected abstract parseJson(value: unknown): unknown;
  /** Statements run first in the migration transaction (e.g. to serialise migrators); none by default. */
  protected migrationPrelude(): SqlFragment[] {
    return [];
  }

  /** @inheritDoc */
  abstract close(): Promise<void>;

  /** This ledger's database for a store beside it (see {@link LedgerDatabase}). */
  database(): LedgerDatabase {
    return {
      backend: this.backend,
      now: this.now,
      ms: (param) => this.ms(param),
      msUntil: (column) => this.msUntil(column),
      isoTime: (value) => this.isoTime(value),
      unit: (access, fn, durability) => this.connect(access, (c) => fn(this.tx(c)), durability),
    };
  }

  // ---- The protocol -----------------------------------------------------------------

  /** @inheritDoc */
  migrate(): Promise<void> {
    return this.run('transaction', () => this.migrateUnit());
  }

  /** @inheritDoc */
  async claim(input: ClaimInput): Promise<ClaimOutcome> {
    assertClaimInput(input);
    for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
      if (!this.locksAbsentKeys) {
        // The common case (a key nobody has claimed) costs one statement.
        const token = await this.run('write', () => insertClaim(this.dialect, input));
        if (token !== null) return { kind: 'claimed', token, takenOverFrom: null };
      }
      // A claim authorises no side effect by itself: the durable dispatch (or commit) comes
      // before any, and its flush carries the claim to disk with it (SqlDurability).
      const outcome = await this.run(
        'transaction',
        () => claimLocked(this.dialect, input),
        'before-dispatch',
      );
      if (outcome) return outcome;
    }
    throw new Error(`ledger claim for "${input.key}" kept racing with releases; retry the activity`);
  }

  /** @inheritDoc */
  dispatch(key: string, token: number): Promise<void> {
    return this.fenced('dispatch', key, token, {
      sql: `state = '${LedgerState.DISPATCHED}', dispatched_at = COALESCE(dispatched_at, ${this.now})`,
      params: [],
    });
  }

  /** @inheritDoc */
  commit(
    key: string,
    token: number,
    result: unknown,
    also?: (tx: LedgerTx) => MaybePromise<void>,
  ): Promise<void> {
    if (!also) return this.fenced('commit', key, token, succeeded(this.dialect, result));
    return this.run('transaction', () =>
      fencedWithUnit(this.dialect, 'commit', key, token, succeeded(this.dialect, result), also),
    );
  }

  /** @inheritDoc */
  claimCommitWith<T>(
    input: ClaimInput,
    work: (tx: LedgerTx, token: number) => MaybePromise<T>,
  ): Promise<{ token: number; value: T } | null> {
    assertClaimInput(input);
    return this.run('transaction', () => claimCommitWithUnit(this.dialect, input, work));
  }

  /** @inheritDoc */
  commitWith<T>(key: string, token: number, work: (tx: LedgerTx) => MaybePromise<T>): Promise<T> {
    return this.run('transaction', () => commitWithUnit(this.dialect, key, token, work));
  }

  /** @inheritDoc */
  fail(key: string, token: number, error: unknown, options: FailOptions): Promise<void> {
    const stored = toJsonText(toStoredError(error));
    if (options.final) {
      return this.fenced('fail', key, token, {
        sql: `state = '${LedgerState.FAILED_FINAL}', error = ?, lease_expires_at = NULL, finished_at = ${this.now}`,
        params: [stored],
      });
    }
    return this.run('transaction', () => failTransientUnit(this.dialect, key, token, stored, options));
  }

  /** @inheritDoc */
  markUnknown(key: string, token: number, note: string): Promise<void> {
    return this.fenced(
      'markUnknown',
      key,
      token,
      {
        sql: `state = '${LedgerState.UNKNOWN}', error = ?, lease_expires_at = NULL, finished_at = ${this.now}`,
        params: [toJsonText({ name: 'OutcomeUnknown', message: note })],
      },
      [LedgerState.DISPATCHED],
    );
  }

  /** @inheritDoc */
  async renew(key: string, token: number, leaseMs: number): Promise<void> {
    assertLeaseMs(leaseMs);
    return this.fenced('renew', key, token, {
      sql: `lease_expires_at = ${this.now} + ${this.ms('?')}`,
      params: [Math.ceil(leaseMs)],
    });
  }

  /** @inheritDoc */
  get(key: string): Promise<LedgerRecord | null> {
    return this.run('read', () => readRow(this.dialect, key));
  }

  /** @inheritDoc */
  list(options: ListOptions = {}): Promise<LedgerRecord[]> {
    return this.run('read', () => listUnit(this.dialect, options));
  }

  /** @inheritDoc */
  async resolve(key: string, input: ResolveInput): Promise<LedgerRecord> {
    const r = parseResolveInput(input);
    return this.run('transaction', () => resolveUnit(this.dialect, key, r));
  }

  /** @inheritDoc */
  async reap(ttlMs: number, options: ReapOptions = {}): Promise<number> {
    const older = finishedBefore(this.dialect, ttlMs);
    const runIds = options.runIds;
    if (runIds !== undefined && runIds.length === 0) return 0;
    return this.run('write', () => reapRecordsUnit(older, runIds));
  }

  /** @inheritDoc */
  async reapableRuns(ttlMs: number, options: ReapableRunsOptions = {}): Promise<string[]> {
    const runs = reapableRunsQuery(this.dialect, ttlMs, options);
    const rows = await this.run('read', () => query<{ run_id: string }>(runs.sql, runs.params));
    return rows.map((r) => r.run_id);
  }

  /** @inheritDoc */
  async reapRunData(ttlMs: number, runIds: readonly string[]): Promise<number> {
    if (runIds.length === 0) return 0;
    const idle = runDataIdleBefore(this.dialect, ttlMs, runIds);
    return this.run('transaction', () => reapRunDataUnit(this.dialect, idle));
  }

  // ---- Units of work ----------------------------------------------------------------

  private *migrateUnit(): Unit<void> {
    for (const s of this.migrationPrelude()) yield* exec(s.sql, s.params);
    yield* exec(this.migrationsTable);
    const applied = (yield* query<{ version: number }>('SELECT version FROM ledger_migrations')).map(
      (r) => r.version,
    );
    assertNotNewer(applied, this.migrations, this.location);
    for (const m of this.migrations) {
      if (applied.includes(m.version)) continue;
      for (const s of m.statements) yield* exec(s);
      yield* exec(`INSERT INTO ledger_migrations (version, name, applied_at) VALUES (?, ?, ${this.now})`, [
        m.version,
        m.name,
      ]);
    }
  }

  /** A fenced write as its own unit; a rejected token throws `StaleTokenError`. */
  private fenced(
    op: string,
    key: string,
    token: number,
    set: SqlFragment,
    states: readonly LedgerState[] = LIVE_STATES,
  ): Promise<void> {
    return this.run('write', () => fencedUnit(this.dialect, op, key, token, set, states));
  }

  // ---- Running units ----------------------------------------------------------------

  /** The dialect as the units of work use it (built on first use: subclass fields are set by then). */
  private get dialect(): UnitDialect {
    return (this.unitDialect ??= {
      now: this.now,
      forUpdate: this.forUpdate,
      ms: (param) => this.ms(param),
      msUntil: (column) => this.msUntil(column),
      isoTime: (value) => this.isoTime(value),
      parseJson: (value) => this.parseJson(value),
    });
  }

  /** Opens a unit of work of kind `access` and drives `unit` (made fresh for it) on its connection. */
  private run<T>(access: SqlAccess, unit: () => Unit<T>, durability: SqlDurability = 'full'): Promise<T> {
    return this.connect(access, (c) => driveUnit(unit(), (step) => this.perform(c, step)), durability);
  }

  private perform(c: C, step: SqlStep): MaybePromise<unknown> {
    switch (step.kind) {
      case 'exec':
        return this.exec(c, step.sql, step.params);
      case 'query':
        return this.query(c, step.sql, step.params);
      case 'token':
        return this.nextToken(c);
      case 'work':
        return step.work(this.tx(c));
    }
  }

  /** The portable {@link LedgerTx} handed to `commitWith`'s work, on the unit's own connection. */
  private tx(c: C): LedgerTx {
    // One promise per statement, not an async function's two: a step runs four of them.
    return {
      run: (sql, params) => answered(this.exec(c, sql, params ?? []), (changes) => ({ changes })),
      all: <T>(sql: string, params?: readonly unknown[]) =>
        answered(this.query<T>(c, sql, params ?? []), (rows) => rows),
      get: <T>(sql: string, params?: readonly unknown[]) =>
        answered(this.query<T>(c, sql, params ?? []), (rows) => rows[0]),
    };
  }
}

/** `f` of a dialect's answer, as a promise whether the dialect answered now (SQLite) or later. */
function answered<T, R>(value: MaybePromise<T>, f: (v: T) => R): Promise<R> {
  if (isPromiseLike(value)) return value.then(f);
  try {
    return Promise.resolve(f(value));
  } catch (err) {
    return Promise.reject(err);
  }
}
