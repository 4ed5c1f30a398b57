/**
 * SQLite backend: the embedded default for one host. WAL journal, `BEGIN IMMEDIATE` for
 * every read-decide-write (so two processes cannot both see "no row"), a busy timeout so
 * concurrent processes queue instead of failing, and all lease arithmetic in SQL time.
 */
import Database from 'better-sqlite3';
import { AsyncMutex } from './async-mutex';
import { assertClaimInput, assertLeaseMs, decideClaim } from './claim-decision';
import { StaleTokenError } from './errors';
import { assertNotNewer, SQLITE_MIGRATIONS } from './migrations';
import { toJsonText, toStoredError } from './stored-error';
import {
  LedgerState,
  type ClaimInput,
  type ClaimOutcome,
  type FailOptions,
  type Ledger,
  type LedgerRecord,
  type LedgerTx,
  type ListOptions,
  type ResolveInput,
} from './types';
import { parseResolveInput, planResolution } from './resolve-input';

/** Database "now" in integer milliseconds; constant within one statement. */
const NOW = `CAST(unixepoch('subsec') * 1000 AS INTEGER)`;
const SELECT_ROW = `SELECT *, (lease_expires_at - ${NOW}) AS lease_remaining_ms FROM ledger_records`;
const LIVE = `('${LedgerState.CLAIMED}','${LedgerState.DISPATCHED}')`;

interface SqliteRow {
  key: string;
  tool: string;
  args_hash: string;
  run_id: string;
  owner: string;
  state: LedgerState;
  token: number;
  lease_expires_at: number | null;
  lease_remaining_ms: number | null;
  result: string | null;
  error: string | null;
  attempts: number;
  created_at: number;
  updated_at: number;
  dispatched_at: number | null;
  finished_at: number | null;
  resolved_as: 'succeeded' | 'failed' | null;
  resolved_by: string | null;
  resolution_reason: string | null;
  resolved_at: number | null;
  resolved_prior_state: LedgerState | null;
}

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

function toRecord(r: SqliteRow): LedgerRecord {
  return {
    key: r.key,
    tool: r.tool,
    argsHash: r.args_hash,
    runId: r.run_id,
    owner: r.owner,
    state: r.state,
    token: r.token,
    leaseExpiresAt: iso(r.lease_expires_at),
    leaseRemainingMs: r.lease_remaining_ms,
    result: r.result === null ? null : JSON.parse(r.result),
    error: r.error === null ? null : JSON.parse(r.error),
    attempts: r.attempts,
    createdAt: iso(r.created_at) as string,
    updatedAt: iso(r.updated_at) as string,
    dispatchedAt: iso(r.dispatched_at),
    finishedAt: iso(r.finished_at),
    resolution:
      r.resolved_as === null
        ? null
        : {
            as: r.resolved_as,
            actor: r.resolved_by ?? '',
            reason: r.resolution_reason ?? '',
            at: iso(r.resolved_at) as string,
            priorState: r.resolved_prior_state ?? LedgerState.UNKNOWN,
          },
  };
}

/** Options of {@link SqliteLedger}. */
export interface SqliteLedgerOptions {
  /** How long to wait for another process's write lock before failing (default 10 000 ms). */
  busyTimeoutMs?: number;
}

/** The SQLite {@link Ledger}. Open with `openLedger('sqlite:PATH')` or construct directly. */
export class SqliteLedger implements Ledger {
  /** @inheritDoc */
  readonly backend = 'sqlite' as const;
  private readonly db: Database.Database;
  private readonly lock = new AsyncMutex();

  /**
   * Opens (creating if needed) the database file. Does not migrate; call {@link migrate}.
   * @param path file path, or `:memory:`
   */
  constructor(
    readonly path: string,
    options: SqliteLedgerOptions = {},
  ) {
    this.db = new Database(path, { timeout: options.busyTimeoutMs ?? 10_000 });
    this.db.pragma('journal_mode = WAL');
    // A ledger entry that a power loss can undo would allow a duplicate side effect.
    this.db.pragma('synchronous = FULL');
    this.db.pragma('foreign_keys = ON');
  }

  /** @inheritDoc */
  migrate(): Promise<void> {
    return this.lock.run(() => {
      this.db.exec(
        'CREATE TABLE IF NOT EXISTS ledger_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)',
      );
      this.immediate(() => {
        const applied = (
          this.db.prepare('SELECT version FROM ledger_migrations').all() as { version: number }[]
        ).map((r) => r.version);
        assertNotNewer(applied, SQLITE_MIGRATIONS, this.path);
        for (const m of SQLITE_MIGRATIONS) {
          if (applied.includes(m.version)) continue;
          for (const s of m.statements) this.db.exec(s);
          this.db
            .prepare(`INSERT INTO ledger_migrations (version, name, applied_at) VALUES (?, ?, ${NOW})`)
            .run(m.version, m.name);
        }
      });
    });
  }

  /** @inheritDoc */
  async claim(input: ClaimInput): Promise<ClaimOutcome> {
    assertClaimInput(input);
    return this.lock.run(() =>
      this.immediate((): ClaimOutcome => {
        const row = this.row(input.key);
        const action = decideClaim(row && toRecord(row), input);
        switch (action.do) {
          case 'insert': {
            const token = this.nextToken();
            this.db
              .prepare(
                `INSERT INTO ledger_records (key, tool, args_hash, run_id, owner, state, token, lease_expires_at, attempts, created_at, updated_at)
                 VALUES (?, ?, ?, ?, ?, '${LedgerState.CLAIMED}', ?, ${NOW} + ?, 1, ${NOW}, ${NOW})`,
              )
              .run(
                input.key,
                input.tool,
                input.argsHash,
                input.runId,
                input.owner,
                token,
                Math.ceil(input.leaseMs),
              );
            return { kind: 'claimed', token, takenOverFrom: null };
          }
          case 'takeover': {
            const token = this.nextToken();
            this.db
              .prepare(
                `UPDATE ledger_records SET token = ?, run_id = ?, owner = ?, lease_expires_at = ${NOW} + ?,
                 attempts = attempts + 1, updated_at = ${NOW} WHERE key = ?`,
              )
              .run(token, input.runId, input.owner, Math.ceil(input.leaseMs), input.key);
            return { kind: 'claimed', token, takenOverFrom: action.from };
          }
          case 'mark_unknown': {
            this.db
              .prepare(
                `UPDATE ledger_records SET state = '${LedgerState.UNKNOWN}', lease_expires_at = NULL,
                 finished_at = ${NOW}, updated_at = ${NOW} WHERE key = ?`,
              )
              .run(input.key);
            return { kind: 'unknown', record: toRecord(this.row(input.key) as SqliteRow) };
          }
          case 'in_progress':
            return { kind: 'in_progress', retryAfterMs: action.retryAfterMs };
          case 'replay_succeeded':
            return { kind: 'succeeded', result: toRecord(row as SqliteRow).result };
          case 'replay_failed':
            return {
              kind: 'failed_final',
              error: toRecord(row as SqliteRow).error ?? { name: 'Error', message: '' },
            };
          case 'report_unknown':
            return { kind: 'unknown', record: toRecord(row as SqliteRow) };
        }
      }),
    );
  }

  /** @inheritDoc */
  dispatch(key: string, token: number): Promise<void> {
    return this.fenced(
      'dispatch',
      key,
      token,
      () =>
        this.db
          .prepare(
            `UPDATE ledger_records SET state = '${LedgerState.DISPATCHED}', dispatched_at = COALESCE(dispatched_at, ${NOW}),
           updated_at = ${NOW} WHERE key = ? AND token = ? AND state IN ${LIVE}`,
          )
          .run(key, token).changes,
    );
  }

  /** @inheritDoc */
  commit(key: string, token: number, result: unknown): Promise<void> {
    return this.fenced('commit', key, token, () => this.commitRow(key, token, result));
  }

  /** @inheritDoc */
  commitWith<T>(key: string, token: number, work: (tx: LedgerTx) => Promise<T> | T): Promise<T> {
    return this.lock.run(async () => {
      this.db.exec('BEGIN IMMEDIATE');
      try {
        const row = this.row(key);
        if (
          !row ||
          row.token !== token ||
          !(row.state === LedgerState.CLAIMED || row.state === LedgerState.DISPATCHED)
        ) {
          throw this.staleError('commit', key, token, row);
        }
        const value = await work(this.tx());
        this.commitRow(key, token, value);
        this.db.exec('COMMIT');
        return value;
      } catch (err) {
        if (this.db.inTransaction) this.db.exec('ROLLBACK');
        throw err;
      }
    });
  }

  /** @inheritDoc */
  async fail(key: string, token: number, error: unknown, options: FailOptions): Promise<void> {
    const stored = toJsonText(toStoredError(error));
    return this.fenced('fail', key, token, () => {
      if (options.final) {
        return this.db
          .prepare(
            `UPDATE ledger_records SET state = '${LedgerState.FAILED_FINAL}', error = ?, lease_expires_at = NULL,
             finished_at = ${NOW}, updated_at = ${NOW} WHERE key = ? AND token = ? AND state IN ${LIVE}`,
          )
          .run(stored, key, token).changes;
      }
      // Nothing was sent: forget the claim so the next attempt runs as if it were the first.
      const releasable = options.notPerformed ? LIVE : `('${LedgerState.CLAIMED}')`;
      const released = this.db
        .prepare(`DELETE FROM ledger_records WHERE key = ? AND token = ? AND state IN ${releasable}`)
        .run(key, token).changes;
      if (released > 0) return released;
      // Possibly sent: keep the intent, only give the lease up.
      return this.db
        .prepare(
          `UPDATE ledger_records SET error = ?, lease_expires_at = ${NOW}, updated_at = ${NOW}
           WHERE key = ? AND token = ? AND state = '${LedgerState.DISPATCHED}'`,
        )
        .run(stored, key, token).changes;
    });
  }

  /** @inheritDoc */
  markUnknown(key: string, token: number, note: string): Promise<void> {
    const stored = toJsonText({ name: 'OutcomeUnknown', message: note });
    return this.fenced(
      'markUnknown',
      key,
      token,
      () =>
        this.db
          .prepare(
            `UPDATE ledger_records SET state = '${LedgerState.UNKNOWN}', error = ?, lease_expires_at = NULL,
           finished_at = ${NOW}, updated_at = ${NOW} WHERE key = ? AND token = ? AND state = '${LedgerState.DISPATCHED}'`,
          )
          .run(stored, key, token).changes,
    );
  }

  /** @inheritDoc */
  async renew(key: string, token: number, leaseMs: number): Promise<void> {
    assertLeaseMs(leaseMs);
    return this.fenced(
      'renew',
      key,
      token,
      () =>
        this.db
          .prepare(
            `UPDATE ledger_records SET lease_expires_at = ${NOW} + ?, updated_at = ${NOW}
           WHERE key = ? AND token = ? AND state IN ${LIVE}`,
          )
          .run(Math.ceil(leaseMs), key, token).changes,
    );
  }

  /** @inheritDoc */
  get(key: string): Promise<LedgerRecord | null> {
    return this.lock.run(() => {
      const row = this.row(key);
      return row ? toRecord(row) : null;
    });
  }

  /** @inheritDoc */
  list(options: ListOptions = {}): Promise<LedgerRecord[]> {
    const limit = Math.max(1, Math.floor(options.limit ?? 100));
    return this.lock.run(() => {
      const rows = (
        options.state
          ? this.db
              .prepare(`${SELECT_ROW} WHERE state = ? ORDER BY updated_at DESC, key LIMIT ?`)
              .all(options.state, limit)
          : this.db.prepare(`${SELECT_ROW} ORDER BY updated_at DESC, key LIMIT ?`).all(limit)
      ) as SqliteRow[];
      return rows.map(toRecord);
    });
  }

  /** @inheritDoc */
  async resolve(key: string, input: ResolveInput): Promise<LedgerRecord> {
    const r = parseResolveInput(input);
    return this.lock.run(() =>
      this.immediate(() => {
        const row = this.row(key);
        const { state, prior, result, error } = planResolution(key, row, r);
        this.db
          .prepare(
            `UPDATE ledger_records SET state = ?, result = ?, error = ?, lease_expires_at = NULL,
             finished_at = ${NOW}, updated_at = ${NOW}, resolved_as = ?, resolved_by = ?, resolution_reason = ?,
             resolved_at = ${NOW}, resolved_prior_state = ? WHERE key = ?`,
          )
          .run(state, result, error, r.as, r.actor, r.reason, prior, key);
        this.db
          .prepare(
            `INSERT INTO ledger_resolutions (key, resolved_as, actor, reason, prior_state, result, at) VALUES (?, ?, ?, ?, ?, ?, ${NOW})`,
          )
          .run(key, r.as, r.actor, r.reason, prior, result);
        return toRecord(this.row(key) as SqliteRow);
      }),
    );
  }

  /** @inheritDoc */
  async reap(ttlMs: number): Promise<number> {
    if (!Number.isFinite(ttlMs) || ttlMs < 0) throw new TypeError(`reap TTL must be >= 0 ms, got ${ttlMs}`);
    return this.lock.run(
      () =>
        this.db
          .prepare(
            `DELETE FROM ledger_records WHERE state IN ('${LedgerState.SUCCEEDED}','${LedgerState.FAILED_FINAL}')
             AND finished_at IS NOT NULL AND finished_at <= ${NOW} - ?`,
          )
          .run(Math.floor(ttlMs)).changes,
    );
  }

  /** @inheritDoc */
  close(): Promise<void> {
    return this.lock.run(() => {
      if (this.db.open) this.db.close();
    });
  }

  private immediate<T>(fn: () => T): T {
    return this.db.transaction(fn).immediate();
  }

  private row(key: string): SqliteRow | undefined {
    return this.db.prepare(`${SELECT_ROW} WHERE key = ?`).get(key) as SqliteRow | undefined;
  }

  private nextToken(): number {
    const r = this.db
      .prepare('UPDATE ledger_fencing SET last_token = last_token + 1 WHERE id = 1 RETURNING last_token')
      .get() as {
      last_token: number;
    };
    return r.last_token;
  }

  private commitRow(key: string, token: number, result: unknown): number {
    return this.db
      .prepare(
        `UPDATE ledger_records SET state = '${LedgerState.SUCCEEDED}', result = ?, error = NULL, lease_expires_at = NULL,
         finished_at = ${NOW}, updated_at = ${NOW} WHERE key = ? AND token = ? AND state IN ${LIVE}`,
      )
      .run(toJsonText(result), key, token).changes;
  }

  /** Runs a token-guarded write; zero rows changed means the token no longer owns the record. */
  private fenced(op: string, key: string, token: number, write: () => number): Promise<void> {
    return this.lock.run(() =>
      this.immediate(() => {
        if (write() === 0) throw this.staleError(op, key, token, this.row(key));
      }),
    );
  }

  private staleError(op: string, key: string, token: number, row: SqliteRow | undefined): StaleTokenError {
    return new StaleTokenError({
      op,
      key,
      token,
      currentToken: row?.token ?? null,
      currentState: row?.state ?? null,
    });
  }

  private tx(): LedgerTx {
    const db = this.db;
    const bind = (params?: readonly unknown[]) =>
      (params ?? []).map((p) => (typeof p === 'boolean' ? Number(p) : p));
    return {
      run: async (sql, params) => ({ changes: db.prepare(sql).run(...bind(params)).changes }),
      all: async <T>(sql: string, params?: readonly unknown[]) => db.prepare(sql).all(...bind(params)) as T[],
      get: async <T>(sql: string, params?: readonly unknown[]) =>
        db.prepare(sql).get(...bind(params)) as T | undefined,
    };
  }
}
