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
 * Each unit of work is a generator that yields SQL steps and receives their answers. The
 * reason is better-sqlite3: it is synchronous, and a SQLite transaction that awaited between
 * two statements would let another connection of the same process (a second ledger, the demo
 * world) start `BEGIN IMMEDIATE` and block the one thread in its busy handler until it times
 * out. Driven by {@link SqlLedger.drive}, a unit runs synchronously as long as the dialect
 * answers synchronously (SQLite) and asynchronously when it answers with promises (PostgreSQL).
 *
 * All SQL here uses `?` placeholders; a dialect translates them if its driver wants others.
 */
import { assertClaimInput, assertLeaseMs, decideClaim } from './claim-decision';
import { StaleTokenError } from './errors';
import { assertNotNewer, type Migration } from './migrations';
import { parseResolveInput, planResolution } from './resolve-input';
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

/**
 * What a unit of work needs from the database, so each dialect can take the cheapest lock
 * that keeps the protocol correct:
 * - `read`: reads only;
 * - `write`: one token-guarded write (its `WHERE token = ?` is the guard), then at most a
 *   read that explains a rejection;
 * - `transaction`: read, decide, write; a row read with the dialect's {@link SqlLedger.forUpdate}
 *   cannot be changed by anyone else until the unit ends, and the unit commits or rolls back as one.
 */
export type SqlAccess = 'read' | 'write' | 'transaction';

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

/** A `ledger_records` row as the driver returns it; times, JSON and big integers are dialect-typed. */
export interface LedgerRow {
  key: string;
  tool: string;
  args_hash: string;
  run_id: string;
  owner: string;
  state: LedgerState;
  /** SQLite: a number; PostgreSQL: `bigint`, which `pg` returns as a string. */
  token: number | string;
  lease_expires_at: unknown;
  /** Computed by the database in the same statement (see {@link SqlLedger.msUntil}). */
  lease_remaining_ms: number | string | null;
  result: unknown;
  error: unknown;
  attempts: number;
  created_at: unknown;
  updated_at: unknown;
  dispatched_at: unknown;
  finished_at: unknown;
  resolved_as: 'succeeded' | 'failed' | null;
  resolved_by: string | null;
  resolution_reason: string | null;
  resolved_at: unknown;
  resolved_prior_state: LedgerState | null;
}

/**
 * The ledger's database as a store that lives beside the ledger uses it (activities/approvals):
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
  /** Runs `fn` as one unit of work of kind `access` (see {@link SqlAccess}); `?` placeholders. */
  unit<T>(access: SqlAccess, fn: (tx: LedgerTx) => Promise<T>): Promise<T>;
}

/** One step a unit of work asks the dialect to perform; the answer is sent back into the unit. */
type SqlStep =
  /** Answer: rows changed. */
  | { kind: 'exec'; sql: string; params: readonly unknown[] }
  /** Answer: the rows (a query, or a write with `RETURNING`). */
  | { kind: 'query'; sql: string; params: readonly unknown[] }
  /** Answer: a {@link SqlFragment} for a fresh fencing token. */
  | { kind: 'token' }
  /** Answer: what the caller's business write returned (commitWith only). */
  | { kind: 'work'; work: (tx: LedgerTx) => MaybePromise<unknown> };

/** A unit of work: yields steps, receives their answers, returns `T`. */
type Unit<T> = Generator<SqlStep, T, unknown>;

function* exec(sql: string, params: readonly unknown[] = []): Unit<number> {
  return (yield { kind: 'exec', sql, params }) as number;
}

function* query<T>(sql: string, params: readonly unknown[] = []): Unit<T[]> {
  return (yield { kind: 'query', sql, params }) as T[];
}

function* nextToken(): Unit<SqlFragment> {
  return (yield { kind: 'token' }) as SqlFragment;
}

function* businessWork<T>(work: (tx: LedgerTx) => MaybePromise<T>): Unit<T> {
  return (yield { kind: 'work', work }) as T;
}

/** A concurrent release can delete the row between a failed insert and the lock; retry this often. */
const CLAIM_ATTEMPTS = 5;
const LIVE_STATES = [LedgerState.CLAIMED, LedgerState.DISPATCHED] as const;
const SETTLED_STATES = [LedgerState.SUCCEEDED, LedgerState.FAILED_FINAL] as const;

/** `('A','B')`: a constant state list for `state IN …` (our own constants, never input). */
const inList = (states: readonly LedgerState[]) => `(${states.map((s) => `'${s}'`).join(',')})`;
const isLive = (state: LedgerState) => (LIVE_STATES as readonly LedgerState[]).includes(state);

/**
 * A {@link Ledger} over SQL. Subclasses implement the dialect; everything a caller can
 * observe — states, tokens, outcomes, errors and their messages — is decided here.
 *
 * @typeParam C the connection a unit of work runs on (a better-sqlite3 database, a `pg` client)
 */
export abstract class SqlLedger<C> implements Ledger {
  /** @inheritDoc */
  abstract readonly backend: LedgerBackend;

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
   * synchronously when every statement did.
   */
  protected abstract connect<T>(access: SqlAccess, fn: (c: C) => MaybePromise<T>): Promise<T>;
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
      unit: (access, fn) => this.connect(access, (c) => fn(this.tx(c))),
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
        const token = await this.run('write', () => this.insertClaim(input));
        if (token !== null) return { kind: 'claimed', token, takenOverFrom: null };
      }
      const outcome = await this.run('transaction', () => this.claimLocked(input));
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
  commit(key: string, token: number, result: unknown): Promise<void> {
    return this.fenced('commit', key, token, this.succeeded(result));
  }

  /** @inheritDoc */
  commitWith<T>(key: string, token: number, work: (tx: LedgerTx) => MaybePromise<T>): Promise<T> {
    return this.run('transaction', () => this.commitWithUnit(key, token, work));
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
    return this.run('transaction', () => this.failTransientUnit(key, token, stored, options));
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
    return this.run('read', () => this.readRow(key));
  }

  /** @inheritDoc */
  list(options: ListOptions = {}): Promise<LedgerRecord[]> {
    return this.run('read', () => this.listUnit(options));
  }

  /** @inheritDoc */
  async resolve(key: string, input: ResolveInput): Promise<LedgerRecord> {
    const r = parseResolveInput(input);
    return this.run('transaction', () => this.resolveUnit(key, r));
  }

  /** @inheritDoc */
  async reap(ttlMs: number, options: ReapOptions = {}): Promise<number> {
    const older = this.finishedBefore(ttlMs);
    const runIds = options.runIds;
    if (runIds !== undefined && runIds.length === 0) return 0;
    const runs = runIds === undefined ? '' : ` AND run_id IN (${runIds.map(() => '?').join(', ')})`;
    return this.run('write', () =>
      exec(`DELETE FROM ledger_records WHERE ${older.sql}${runs}`, [...older.params, ...(runIds ?? [])]),
    );
  }

  /** @inheritDoc */
  async reapableRuns(ttlMs: number, options: ReapableRunsOptions = {}): Promise<string[]> {
    const older = this.finishedBefore(ttlMs);
    const idle = this.runDataIdleBefore(ttlMs);
    const limit = Math.max(1, Math.floor(options.limit ?? 100));
    const after = options.after === undefined ? '' : ' WHERE run_id > ?';
    // Runs with old settled records, and runs whose conversation, planner turns and payloads
    // are all old (a read-only run has no ledger records, only those).
    const rows = await this.run('read', () =>
      query<{ run_id: string }>(
        `SELECT run_id FROM (SELECT DISTINCT run_id FROM ledger_records WHERE ${older.sql} UNION ${idle.sql}) AS r${after}
         ORDER BY run_id LIMIT ?`,
        [...older.params, ...idle.params, ...(options.after === undefined ? [] : [options.after]), limit],
      ),
    );
    return rows.map((r) => r.run_id);
  }

  /** @inheritDoc */
  async reapRunData(ttlMs: number, runIds: readonly string[]): Promise<number> {
    if (runIds.length === 0) return 0;
    const idle = this.runDataIdleBefore(ttlMs, runIds);
    return this.run('transaction', () => this.reapRunDataUnit(idle));
  }

  /**
   * `SELECT run_id` of the runs whose rows in the issue-9 tables (the conversation store, the
   * planner turns, the payload store) are all older than `ttlMs` by `created_at` (its newest
   * row), in database time; only among `runIds` when given. The conversation of a run is
   * keyed by its workflow id, like its ledger records and payloads.
   */
  private runDataIdleBefore(ttlMs: number, runIds?: readonly string[]): SqlFragment {
    if (!Number.isFinite(ttlMs) || ttlMs < 0) throw new TypeError(`reap TTL must be >= 0 ms, got ${ttlMs}`);
    const among = runIds === undefined ? '' : ` WHERE run_id IN (${runIds.map(() => '?').join(', ')})`;
    return {
      sql: `SELECT run_id FROM (
          SELECT conversation_id AS run_id, created_at FROM agent_conversation
          UNION ALL SELECT conversation_id AS run_id, created_at FROM agent_planner_turns
          UNION ALL SELECT run_id, created_at FROM agent_payloads
        ) AS d${among} GROUP BY run_id HAVING MAX(created_at) <= ${this.now} - ${this.ms('?')}`,
      params: [...(runIds ?? []), Math.floor(ttlMs)],
    };
  }

  /** The records {@link reap} may delete: settled (never live or UNKNOWN) and finished `ttlMs` ago in database time. */
  private finishedBefore(ttlMs: number): SqlFragment {
    if (!Number.isFinite(ttlMs) || ttlMs < 0) throw new TypeError(`reap TTL must be >= 0 ms, got ${ttlMs}`);
    return {
      sql: `state IN ${inList(SETTLED_STATES)} AND finished_at IS NOT NULL AND finished_at <= ${this.now} - ${this.ms('?')}`,
      params: [Math.floor(ttlMs)],
    };
  }

  // ---- Units of work ----------------------------------------------------------------

  /** Deletes the conversation, planner turns and payloads of the runs `idle` selects; answers the rows deleted. */
  private *reapRunDataUnit(idle: SqlFragment): Unit<number> {
    const runs = (yield* query<{ run_id: string }>(idle.sql, idle.params)).map((r) => r.run_id);
    if (runs.length === 0) return 0;
    const marks = runs.map(() => '?').join(', ');
    let removed = 0;
    removed += yield* exec(`DELETE FROM agent_conversation WHERE conversation_id IN (${marks})`, runs);
    removed += yield* exec(`DELETE FROM agent_planner_turns WHERE conversation_id IN (${marks})`, runs);
    removed += yield* exec(`DELETE FROM agent_payloads WHERE run_id IN (${marks})`, runs);
    removed += yield* exec(`DELETE FROM agent_progress_facts WHERE run_id IN (${marks})`, runs);
    removed += yield* exec(`DELETE FROM agent_tool_calls WHERE run_id IN (${marks})`, runs);
    return removed;
  }

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

  /** The claim's read-decide-write; null means "raced a release, go round again". */
  private *claimLocked(input: ClaimInput): Unit<ClaimOutcome | null> {
    const record = yield* this.lockRow(input.key);
    const action = decideClaim(record ?? undefined, input);
    switch (action.do) {
      case 'insert': {
        const token = yield* this.insertClaim(input);
        return token === null ? null : { kind: 'claimed', token, takenOverFrom: null };
      }
      case 'takeover': {
        const fresh = yield* nextToken();
        const rows = yield* query<{ token: number | string }>(
          `UPDATE ledger_records SET token = ${fresh.sql}, run_id = ?, owner = ?, lease_expires_at = ${this.now} + ${this.ms('?')},
           attempts = attempts + 1, updated_at = ${this.now} WHERE key = ? RETURNING token`,
          [...fresh.params, input.runId, input.owner, Math.ceil(input.leaseMs), input.key],
        );
        return { kind: 'claimed', token: Number(rows[0]?.token), takenOverFrom: action.from };
      }
      case 'mark_unknown': {
        yield* exec(
          `UPDATE ledger_records SET state = '${LedgerState.UNKNOWN}', lease_expires_at = NULL,
           finished_at = ${this.now}, updated_at = ${this.now} WHERE key = ?`,
          [input.key],
        );
        return { kind: 'unknown', record: (yield* this.readRow(input.key)) as LedgerRecord };
      }
      case 'in_progress':
        return { kind: 'in_progress', retryAfterMs: action.retryAfterMs };
      case 'replay_succeeded':
        return { kind: 'succeeded', result: (record as LedgerRecord).result };
      case 'replay_failed':
        return {
          kind: 'failed_final',
          error: (record as LedgerRecord).error ?? { name: 'Error', message: '' },
        };
      case 'report_unknown':
        return { kind: 'unknown', record: record as LedgerRecord };
    }
  }

  /** Inserts a fresh CLAIMED record; null when the key exists already (nothing changed). */
  private *insertClaim(input: ClaimInput): Unit<number | null> {
    const fresh = yield* nextToken();
    const rows = yield* query<{ token: number | string }>(
      `INSERT INTO ledger_records (key, tool, args_hash, run_id, owner, state, token, lease_expires_at, attempts, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, '${LedgerState.CLAIMED}', ${fresh.sql}, ${this.now} + ${this.ms('?')}, 1, ${this.now}, ${this.now})
       ON CONFLICT (key) DO NOTHING RETURNING token`,
      [
        input.key,
        input.tool,
        input.argsHash,
        input.runId,
        input.owner,
        ...fresh.params,
        Math.ceil(input.leaseMs),
      ],
    );
    const first = rows[0];
    return first ? Number(first.token) : null;
  }

  private *commitWithUnit<T>(key: string, token: number, work: (tx: LedgerTx) => MaybePromise<T>): Unit<T> {
    // The token is checked, and the row locked, before the business write runs.
    const record = yield* this.lockRow(key);
    if (!record || record.token !== token || !isLive(record.state))
      throw staleError('commit', key, token, record);
    const value = yield* businessWork(work);
    yield* this.guardedUpdate(key, token, this.succeeded(value), LIVE_STATES);
    return value;
  }

  private *failTransientUnit(key: string, token: number, stored: string, options: FailOptions): Unit<void> {
    // Nothing was sent: forget the claim so the next attempt runs as if it were the first.
    const releasable = options.notPerformed ? LIVE_STATES : [LedgerState.CLAIMED];
    const released = yield* exec(
      `DELETE FROM ledger_records WHERE key = ? AND token = ? AND state IN ${inList(releasable)}`,
      [key, token],
    );
    if (released > 0) return;
    // Possibly sent: keep the intent, only give the lease up.
    const set = { sql: `error = ?, lease_expires_at = ${this.now}`, params: [stored] };
    if ((yield* this.guardedUpdate(key, token, set, [LedgerState.DISPATCHED])) === 0) {
      throw staleError('fail', key, token, yield* this.readRow(key));
    }
  }

  private *listUnit(options: ListOptions): Unit<LedgerRecord[]> {
    const limit = Math.max(1, Math.floor(options.limit ?? 100));
    const where = options.state ? ' WHERE state = ?' : '';
    const rows = yield* query<LedgerRow>(
      `${this.selectRow()}${where} ORDER BY updated_at DESC, key LIMIT ?`,
      [...(options.state ? [options.state] : []), limit],
    );
    return rows.map((r) => this.decode(r));
  }

  private *resolveUnit(key: string, r: ResolveInput): Unit<LedgerRecord> {
    const { state, prior, result, error } = planResolution(key, yield* this.lockRow(key), r);
    const now = this.now;
    yield* exec(
      `UPDATE ledger_records SET state = ?, result = ?, error = ?, lease_expires_at = NULL,
       finished_at = ${now}, updated_at = ${now}, resolved_as = ?, resolved_by = ?, resolution_reason = ?,
       resolved_at = ${now}, resolved_prior_state = ? WHERE key = ?`,
      [state, result, error, r.as, r.actor, r.reason, prior, key],
    );
    yield* exec(
      `INSERT INTO ledger_resolutions (key, resolved_as, actor, reason, prior_state, result, at)
       VALUES (?, ?, ?, ?, ?, ?, ${now})`,
      [key, r.as, r.actor, r.reason, prior, result],
    );
    return (yield* this.readRow(key)) as LedgerRecord;
  }

  // ---- Shared steps -----------------------------------------------------------------

  /** The assignments that store a result as SUCCEEDED. */
  private succeeded(result: unknown): SqlFragment {
    return {
      sql: `state = '${LedgerState.SUCCEEDED}', result = ?, error = NULL, lease_expires_at = NULL, finished_at = ${this.now}`,
      params: [toJsonText(result)],
    };
  }

  /**
   * Applies `set` only if `token` still owns `key` in one of `states`: the fencing rule
   * every write after the claim follows. Answers the rows changed (0 = superseded).
   */
  private guardedUpdate(key: string, token: number, set: SqlFragment, states: readonly LedgerState[]) {
    return exec(
      `UPDATE ledger_records SET ${set.sql}, updated_at = ${this.now} WHERE key = ? AND token = ? AND state IN ${inList(states)}`,
      [...set.params, key, token],
    );
  }

  /** A {@link guardedUpdate} as its own unit; a rejected token throws {@link StaleTokenError}. */
  private fenced(
    op: string,
    key: string,
    token: number,
    set: SqlFragment,
    states: readonly LedgerState[] = LIVE_STATES,
  ): Promise<void> {
    return this.run('write', () => this.fencedUnit(op, key, token, set, states));
  }

  private *fencedUnit(
    op: string,
    key: string,
    token: number,
    set: SqlFragment,
    states: readonly LedgerState[],
  ): Unit<void> {
    if ((yield* this.guardedUpdate(key, token, set, states)) === 0) {
      throw staleError(op, key, token, yield* this.readRow(key));
    }
  }

  private selectRow(): string {
    return `SELECT *, ${this.msUntil('lease_expires_at')} AS lease_remaining_ms FROM ledger_records`;
  }

  /** Reads the record of `key`, locking it for the rest of the `transaction`. */
  private *lockRow(key: string): Unit<LedgerRecord | null> {
    const rows = yield* query<LedgerRow>(`${this.selectRow()} WHERE key = ?${this.forUpdate}`, [key]);
    return rows[0] ? this.decode(rows[0]) : null;
  }

  /** Reads the record of `key` without locking it. */
  private *readRow(key: string): Unit<LedgerRecord | null> {
    const rows = yield* query<LedgerRow>(`${this.selectRow()} WHERE key = ?`, [key]);
    return rows[0] ? this.decode(rows[0]) : null;
  }

  /** Maps a stored row to the backend-neutral {@link LedgerRecord}. */
  private decode(r: LedgerRow): LedgerRecord {
    return {
      key: r.key,
      tool: r.tool,
      argsHash: r.args_hash,
      runId: r.run_id,
      owner: r.owner,
      state: r.state,
      token: Number(r.token),
      leaseExpiresAt: this.isoTime(r.lease_expires_at),
      leaseRemainingMs: r.lease_remaining_ms === null ? null : Number(r.lease_remaining_ms),
      result: this.parseJson(r.result),
      error: this.parseJson(r.error) as LedgerRecord['error'],
      attempts: r.attempts,
      createdAt: this.isoTime(r.created_at) as string,
      updatedAt: this.isoTime(r.updated_at) as string,
      dispatchedAt: this.isoTime(r.dispatched_at),
      finishedAt: this.isoTime(r.finished_at),
      resolution:
        r.resolved_as === null
          ? null
          : {
              as: r.resolved_as,
              actor: r.resolved_by ?? '',
              reason: r.resolution_reason ?? '',
              at: this.isoTime(r.resolved_at) as string,
              priorState: r.resolved_prior_state ?? LedgerState.UNKNOWN,
            },
    };
  }

  // ---- Running units ----------------------------------------------------------------

  /** Opens a unit of work of kind `access` and drives `unit` (made fresh for it) on its connection. */
  private run<T>(access: SqlAccess, unit: () => Unit<T>): Promise<T> {
    return this.connect(access, (c) => this.drive(c, unit()));
  }

  /**
   * Performs the unit's steps on `c`, sending each answer back in. Stays synchronous while
   * the dialect answers synchronously; continues after the first promise otherwise.
   */
  private drive<T>(c: C, unit: Unit<T>, answer?: unknown): MaybePromise<T> {
    for (;;) {
      const next = unit.next(answer);
      if (next.done) return next.value;
      const step = next.value;
      const result = this.perform(c, step);
      if (isPromiseLike(result)) return result.then((value) => this.drive(c, unit, value));
      answer = result;
    }
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
    return {
      run: async (sql, params) => ({ changes: await this.exec(c, sql, params ?? []) }),
      all: async <T>(sql: string, params?: readonly unknown[]) => this.query<T>(c, sql, params ?? []),
      get: async <T>(sql: string, params?: readonly unknown[]) =>
        (await this.query<T>(c, sql, params ?? []))[0],
    };
  }
}

function staleError(op: string, key: string, token: number, record: LedgerRecord | null): StaleTokenError {
  return new StaleTokenError({
    op,
    key,
    token,
    currentToken: record?.token ?? null,
    currentState: record?.state ?? null,
  });
}
