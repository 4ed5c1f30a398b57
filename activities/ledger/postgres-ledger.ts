/**
 * PostgreSQL backend: several workers on several hosts. The first claim is one
 * `INSERT … ON CONFLICT DO NOTHING`; everything that must read before it writes runs in a
 * transaction holding the row lock (`SELECT … FOR UPDATE`). Lease times come from
 * `clock_timestamp()` of the database server, never from a worker's clock.
 */
import { Pool, type PoolClient, type PoolConfig } from 'pg';
import { assertClaimInput, assertLeaseMs, decideClaim } from './claim-decision';
import { StaleTokenError } from './errors';
import { assertNotNewer, POSTGRES_MIGRATIONS } from './migrations';
import { parseResolveInput, planResolution } from './resolve-input';
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

const NOW = 'clock_timestamp()';
const ms = (p: string) => `(${p}::double precision * interval '1 millisecond')`;
const COLUMNS = `*, (EXTRACT(EPOCH FROM (lease_expires_at - ${NOW})) * 1000)::double precision AS lease_remaining_ms`;
const LIVE = `('${LedgerState.CLAIMED}','${LedgerState.DISPATCHED}')`;
/** Serialises migrations of every worker against one database (arbitrary constant). */
const MIGRATION_LOCK_ID = 7_349_021_113;

interface PgRow {
  key: string;
  tool: string;
  args_hash: string;
  run_id: string;
  owner: string;
  state: LedgerState;
  token: string;
  lease_expires_at: Date | null;
  lease_remaining_ms: number | null;
  result: unknown;
  error: LedgerRecord['error'];
  attempts: number;
  created_at: Date;
  updated_at: Date;
  dispatched_at: Date | null;
  finished_at: Date | null;
  resolved_as: 'succeeded' | 'failed' | null;
  resolved_by: string | null;
  resolution_reason: string | null;
  resolved_at: Date | null;
  resolved_prior_state: LedgerState | null;
}

const iso = (d: Date | null): string | null => (d === null ? null : d.toISOString());

function toRecord(r: PgRow): LedgerRecord {
  return {
    key: r.key,
    tool: r.tool,
    argsHash: r.args_hash,
    runId: r.run_id,
    owner: r.owner,
    state: r.state,
    token: Number(r.token),
    leaseExpiresAt: iso(r.lease_expires_at),
    leaseRemainingMs: r.lease_remaining_ms === null ? null : Number(r.lease_remaining_ms),
    result: r.result ?? null,
    error: r.error ?? null,
    attempts: r.attempts,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
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

/** Translates portable `?` placeholders to `$1…` (skipping quoted literals). */
export function toPgPlaceholders(sql: string): string {
  let n = 0;
  let out = '';
  let quote: string | null = null;
  for (const ch of sql) {
    if (quote) {
      if (ch === quote) quote = null;
      out += ch;
    } else if (ch === "'" || ch === '"') {
      quote = ch;
      out += ch;
    } else if (ch === '?') {
      out += `$${++n}`;
    } else {
      out += ch;
    }
  }
  return out;
}

/** Options of {@link PostgresLedger}. */
export interface PostgresLedgerOptions {
  /** Schema to use (sets `search_path`); created by {@link PostgresLedger.migrate} if missing. */
  schema?: string;
  /** Pool size (default 10). */
  maxConnections?: number;
  /** Extra `pg` pool settings. */
  pool?: PoolConfig;
}

/** The PostgreSQL {@link Ledger}. Open with `openLedger('postgres://…')` or construct directly. */
export class PostgresLedger implements Ledger {
  /** @inheritDoc */
  readonly backend = 'postgres' as const;
  private readonly pool: Pool;
  private readonly schema: string | undefined;

  /**
   * Creates the pool; connects lazily. Does not migrate; call {@link migrate}.
   * @param connectionString a `postgres://` URL
   */
  constructor(connectionString: string, options: PostgresLedgerOptions = {}) {
    if (options.schema !== undefined && !/^[A-Za-z_][A-Za-z0-9_]*$/.test(options.schema)) {
      throw new TypeError(`invalid ledger schema name "${options.schema}" (letters, digits, underscore)`);
    }
    this.schema = options.schema;
    this.pool = new Pool({
      connectionString,
      max: options.maxConnections ?? 10,
      ...(options.schema ? { options: `-c search_path=${options.schema}` } : {}),
      ...options.pool,
    });
    // An idle client losing its connection must not crash the worker; the next query reconnects.
    this.pool.on('error', () => undefined);
  }

  /** @inheritDoc */
  async migrate(): Promise<void> {
    await this.inTx(async (c) => {
      await c.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_ID]);
      if (this.schema) await c.query(`CREATE SCHEMA IF NOT EXISTS ${this.schema}`);
      await c.query(
        'CREATE TABLE IF NOT EXISTS ledger_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL)',
      );
      const applied = (await c.query<{ version: number }>('SELECT version FROM ledger_migrations')).rows.map(
        (r) => r.version,
      );
      assertNotNewer(applied, POSTGRES_MIGRATIONS, this.schema ?? 'the database');
      for (const m of POSTGRES_MIGRATIONS) {
        if (applied.includes(m.version)) continue;
        for (const s of m.statements) await c.query(s);
        await c.query(`INSERT INTO ledger_migrations (version, name, applied_at) VALUES ($1, $2, ${NOW})`, [
          m.version,
          m.name,
        ]);
      }
    });
  }

  /** @inheritDoc */
  async claim(input: ClaimInput): Promise<ClaimOutcome> {
    assertClaimInput(input);
    const leaseMs = Math.ceil(input.leaseMs);
    // A concurrent release (transient failure before dispatch) can delete the row between
    // our insert and our lock; then the insert is simply tried again.
    for (let attempt = 0; attempt < 5; attempt++) {
      const inserted = await this.pool.query<{ token: string }>(
        `INSERT INTO ledger_records (key, tool, args_hash, run_id, owner, state, token, lease_expires_at, attempts, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, '${LedgerState.CLAIMED}', nextval('ledger_fencing_seq'), ${NOW} + ${ms('$6')}, 1, ${NOW}, ${NOW})
         ON CONFLICT (key) DO NOTHING RETURNING token`,
        [input.key, input.tool, input.argsHash, input.runId, input.owner, leaseMs],
      );
      const first = inserted.rows[0];
      if (first) return { kind: 'claimed', token: Number(first.token), takenOverFrom: null };

      const outcome = await this.inTx(async (c): Promise<ClaimOutcome | null> => {
        const row = await this.row(c, input.key, true);
        if (!row) return null;
        const action = decideClaim(toRecord(row), input);
        switch (action.do) {
          case 'insert':
            return null;
          case 'takeover': {
            const r = await c.query<{ token: string }>(
              `UPDATE ledger_records SET token = nextval('ledger_fencing_seq'), run_id = $2, owner = $3,
               lease_expires_at = ${NOW} + ${ms('$4')}, attempts = attempts + 1, updated_at = ${NOW}
               WHERE key = $1 RETURNING token`,
              [input.key, input.runId, input.owner, leaseMs],
            );
            return { kind: 'claimed', token: Number(r.rows[0]?.token), takenOverFrom: action.from };
          }
          case 'mark_unknown': {
            await c.query(
              `UPDATE ledger_records SET state = '${LedgerState.UNKNOWN}', lease_expires_at = NULL,
               finished_at = ${NOW}, updated_at = ${NOW} WHERE key = $1`,
              [input.key],
            );
            return { kind: 'unknown', record: toRecord((await this.row(c, input.key, false)) as PgRow) };
          }
          case 'in_progress':
            return { kind: 'in_progress', retryAfterMs: action.retryAfterMs };
          case 'replay_succeeded':
            return { kind: 'succeeded', result: row.result ?? null };
          case 'replay_failed':
            return { kind: 'failed_final', error: row.error ?? { name: 'Error', message: '' } };
          case 'report_unknown':
            return { kind: 'unknown', record: toRecord(row) };
        }
      });
      if (outcome) return outcome;
    }
    throw new Error(`ledger claim for "${input.key}" kept racing with releases; retry the activity`);
  }

  /** @inheritDoc */
  dispatch(key: string, token: number): Promise<void> {
    return this.fenced(
      'dispatch',
      key,
      token,
      `UPDATE ledger_records SET state = '${LedgerState.DISPATCHED}', dispatched_at = COALESCE(dispatched_at, ${NOW}),
       updated_at = ${NOW} WHERE key = $1 AND token = $2 AND state IN ${LIVE}`,
      [],
    );
  }

  /** @inheritDoc */
  commit(key: string, token: number, result: unknown): Promise<void> {
    return this.fenced('commit', key, token, COMMIT_SQL, [toJsonText(result)]);
  }

  /** @inheritDoc */
  async commitWith<T>(key: string, token: number, work: (tx: LedgerTx) => Promise<T> | T): Promise<T> {
    return this.inTx(async (c) => {
      const row = await this.row(c, key, true);
      if (
        !row ||
        Number(row.token) !== token ||
        !(row.state === LedgerState.CLAIMED || row.state === LedgerState.DISPATCHED)
      ) {
        throw staleError('commit', key, token, row);
      }
      const value = await work(txFor(c));
      await c.query(COMMIT_SQL, [key, token, toJsonText(value)]);
      return value;
    });
  }

  /** @inheritDoc */
  async fail(key: string, token: number, error: unknown, options: FailOptions): Promise<void> {
    const stored = toJsonText(toStoredError(error));
    if (options.final) {
      return this.fenced(
        'fail',
        key,
        token,
        `UPDATE ledger_records SET state = '${LedgerState.FAILED_FINAL}', error = $3, lease_expires_at = NULL,
         finished_at = ${NOW}, updated_at = ${NOW} WHERE key = $1 AND token = $2 AND state IN ${LIVE}`,
        [stored],
      );
    }
    await this.inTx(async (c) => {
      // Nothing was sent: forget the claim so the next attempt runs as if it were the first.
      const releasable = options.notPerformed ? LIVE : `('${LedgerState.CLAIMED}')`;
      const released = await c.query(
        `DELETE FROM ledger_records WHERE key = $1 AND token = $2 AND state IN ${releasable}`,
        [key, token],
      );
      if (released.rowCount) return;
      // Possibly sent: keep the intent, only give the lease up.
      const kept = await c.query(
        `UPDATE ledger_records SET error = $3, lease_expires_at = ${NOW}, updated_at = ${NOW}
         WHERE key = $1 AND token = $2 AND state = '${LedgerState.DISPATCHED}'`,
        [key, token, stored],
      );
      if (!kept.rowCount) throw staleError('fail', key, token, await this.row(c, key, false));
    });
  }

  /** @inheritDoc */
  markUnknown(key: string, token: number, note: string): Promise<void> {
    return this.fenced(
      'markUnknown',
      key,
      token,
      `UPDATE ledger_records SET state = '${LedgerState.UNKNOWN}', error = $3, lease_expires_at = NULL,
       finished_at = ${NOW}, updated_at = ${NOW} WHERE key = $1 AND token = $2 AND state = '${LedgerState.DISPATCHED}'`,
      [toJsonText({ name: 'OutcomeUnknown', message: note })],
    );
  }

  /** @inheritDoc */
  async renew(key: string, token: number, leaseMs: number): Promise<void> {
    assertLeaseMs(leaseMs);
    return this.fenced(
      'renew',
      key,
      token,
      `UPDATE ledger_records SET lease_expires_at = ${NOW} + ${ms('$3')}, updated_at = ${NOW}
       WHERE key = $1 AND token = $2 AND state IN ${LIVE}`,
      [Math.ceil(leaseMs)],
    );
  }

  /** @inheritDoc */
  async get(key: string): Promise<LedgerRecord | null> {
    const r = await this.pool.query<PgRow>(`SELECT ${COLUMNS} FROM ledger_records WHERE key = $1`, [key]);
    return r.rows[0] ? toRecord(r.rows[0]) : null;
  }

  /** @inheritDoc */
  async list(options: ListOptions = {}): Promise<LedgerRecord[]> {
    const limit = Math.max(1, Math.floor(options.limit ?? 100));
    const r = options.state
      ? await this.pool.query<PgRow>(
          `SELECT ${COLUMNS} FROM ledger_records WHERE state = $1 ORDER BY updated_at DESC, key LIMIT $2`,
          [options.state, limit],
        )
      : await this.pool.query<PgRow>(
          `SELECT ${COLUMNS} FROM ledger_records ORDER BY updated_at DESC, key LIMIT $1`,
          [limit],
        );
    return r.rows.map(toRecord);
  }

  /** @inheritDoc */
  async resolve(key: string, input: ResolveInput): Promise<LedgerRecord> {
    const r = parseResolveInput(input);
    return this.inTx(async (c) => {
      const row = await this.row(c, key, true);
      const { state, prior, result, error } = planResolution(key, row, r);
      await c.query(
        `UPDATE ledger_records SET state = $2, result = $3, error = $4, lease_expires_at = NULL,
         finished_at = ${NOW}, updated_at = ${NOW}, resolved_as = $5, resolved_by = $6, resolution_reason = $7,
         resolved_at = ${NOW}, resolved_prior_state = $8 WHERE key = $1`,
        [key, state, result, error, r.as, r.actor, r.reason, prior],
      );
      await c.query(
        `INSERT INTO ledger_resolutions (key, resolved_as, actor, reason, prior_state, result, at)
         VALUES ($1, $2, $3, $4, $5, $6, ${NOW})`,
        [key, r.as, r.actor, r.reason, prior, result],
      );
      return toRecord((await this.row(c, key, false)) as PgRow);
    });
  }

  /** @inheritDoc */
  async reap(ttlMs: number): Promise<number> {
    if (!Number.isFinite(ttlMs) || ttlMs < 0) throw new TypeError(`reap TTL must be >= 0 ms, got ${ttlMs}`);
    const r = await this.pool.query(
      `DELETE FROM ledger_records WHERE state IN ('${LedgerState.SUCCEEDED}','${LedgerState.FAILED_FINAL}')
       AND finished_at IS NOT NULL AND finished_at <= ${NOW} - ${ms('$1')}`,
      [Math.floor(ttlMs)],
    );
    return r.rowCount ?? 0;
  }

  /** Checks that the database answers; used by `openLedger` to fail fast with a clear message. */
  async ping(): Promise<void> {
    await this.pool.query('SELECT 1');
  }

  /** @inheritDoc */
  async close(): Promise<void> {
    await this.pool.end();
  }

  private async row(c: PoolClient, key: string, lock: boolean): Promise<PgRow | undefined> {
    const r = await c.query<PgRow>(
      `SELECT ${COLUMNS} FROM ledger_records WHERE key = $1${lock ? ' FOR UPDATE' : ''}`,
      [key],
    );
    return r.rows[0];
  }

  private async inTx<T>(fn: (c: PoolClient) => Promise<T>): Promise<T> {
    const c = await this.pool.connect();
    try {
      await c.query('BEGIN');
      const value = await fn(c);
      await c.query('COMMIT');
      return value;
    } catch (err) {
      await c.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      c.release();
    }
  }

  /** Runs a token-guarded update (`$1` key, `$2` token, then `extra`); zero rows → stale. */
  private async fenced(op: string, key: string, token: number, sql: string, extra: unknown[]): Promise<void> {
    const r = await this.pool.query(sql, [key, token, ...extra]);
    if (r.rowCount) return;
    const now = await this.pool.query<PgRow>(`SELECT ${COLUMNS} FROM ledger_records WHERE key = $1`, [key]);
    throw staleError(op, key, token, now.rows[0]);
  }
}

const COMMIT_SQL = `UPDATE ledger_records SET state = '${LedgerState.SUCCEEDED}', result = $3, error = NULL,
  lease_expires_at = NULL, finished_at = ${NOW}, updated_at = ${NOW}
  WHERE key = $1 AND token = $2 AND state IN ${LIVE}`;

function staleError(op: string, key: string, token: number, row: PgRow | undefined): StaleTokenError {
  return new StaleTokenError({
    op,
    key,
    token,
    currentToken: row ? Number(row.token) : null,
    currentState: row?.state ?? null,
  });
}

function txFor(c: PoolClient): LedgerTx {
  return {
    run: async (sql, params) => ({
      changes: (await c.query(toPgPlaceholders(sql), [...(params ?? [])])).rowCount ?? 0,
    }),
    all: async <T>(sql: string, params?: readonly unknown[]) =>
      (await c.query(toPgPlaceholders(sql), [...(params ?? [])])).rows as T[],
    get: async <T>(sql: string, params?: readonly unknown[]) =>
      (await c.query(toPgPlaceholders(sql), [...(params ?? [])])).rows[0] as T | undefined,
  };
}
