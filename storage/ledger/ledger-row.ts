/**
 * The `ledger_records` row as SQL sees it: its shape, reading it (locked or not), decoding it
 * to a {@link LedgerRecord}, and the fencing rule every write after the claim follows
 * ({@link guardedUpdate}). Shared by the units of work of the SQL ledger.
 */
import { StaleTokenError } from './errors';
import { exec, query, type SqlFragment, type Unit, type UnitDialect } from './sql-unit';
import { LedgerState, type LedgerRecord, type ListOptions } from './types';

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
  /** Computed by the database in the same statement (see {@link UnitDialect.msUntil}). */
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

/** The states in which a claim's token still owns its record. */
export const LIVE_STATES = [LedgerState.CLAIMED, LedgerState.DISPATCHED] as const;
/** The states the reaper may delete. */
export const SETTLED_STATES = [LedgerState.SUCCEEDED, LedgerState.FAILED_FINAL] as const;

/** `('A','B')`: a constant state list for `state IN …` (our own constants, never input). */
export const inList = (states: readonly LedgerState[]) => `(${states.map((s) => `'${s}'`).join(',')})`;
export const isLive = (state: LedgerState) => (LIVE_STATES as readonly LedgerState[]).includes(state);

function selectRow(d: UnitDialect): string {
  return `SELECT *, ${d.msUntil('lease_expires_at')} AS lease_remaining_ms FROM ledger_records`;
}

/** Reads the record of `key`, locking it for the rest of the `transaction`. */
export function* lockRow(d: UnitDialect, key: string): Unit<LedgerRecord | null> {
  const rows = yield* query<LedgerRow>(`${selectRow(d)} WHERE key = ?${d.forUpdate}`, [key]);
  return rows[0] ? decodeRow(d, rows[0]) : null;
}

/** Reads the record of `key` without locking it. */
export function* readRow(d: UnitDialect, key: string): Unit<LedgerRecord | null> {
  const rows = yield* query<LedgerRow>(`${selectRow(d)} WHERE key = ?`, [key]);
  return rows[0] ? decodeRow(d, rows[0]) : null;
}

/** The newest records first (by `updated_at`, then key), optionally of one state and one run. */
export function* listUnit(d: UnitDialect, options: ListOptions): Unit<LedgerRecord[]> {
  const limit = Math.max(1, Math.floor(options.limit ?? 100));
  const filters: Array<readonly [string, string]> = [
    ...(options.state ? [['state = ?', options.state] as const] : []),
    ...(options.runId ? [['run_id = ?', options.runId] as const] : []),
  ];
  const where = filters.length > 0 ? ` WHERE ${filters.map(([sql]) => sql).join(' AND ')}` : '';
  const rows = yield* query<LedgerRow>(`${selectRow(d)}${where} ORDER BY updated_at DESC, key LIMIT ?`, [
    ...filters.map(([, value]) => value),
    limit,
  ]);
  return rows.map((r) => decodeRow(d, r));
}

/** Maps a stored row to the backend-neutral {@link LedgerRecord}. */
function decodeRow(d: UnitDialect, r: LedgerRow): LedgerRecord {
  return {
    key: r.key,
    tool: r.tool,
    argsHash: r.args_hash,
    runId: r.run_id,
    owner: r.owner,
    state: r.state,
    token: Number(r.token),
    leaseExpiresAt: d.isoTime(r.lease_expires_at),
    leaseRemainingMs: r.lease_remaining_ms === null ? null : Number(r.lease_remaining_ms),
    result: d.parseJson(r.result),
    error: d.parseJson(r.error) as LedgerRecord['error'],
    attempts: r.attempts,
    createdAt: d.isoTime(r.created_at) as string,
    updatedAt: d.isoTime(r.updated_at) as string,
    dispatchedAt: d.isoTime(r.dispatched_at),
    finishedAt: d.isoTime(r.finished_at),
    resolution:
      r.resolved_as === null
        ? null
        : {
            as: r.resolved_as,
            actor: r.resolved_by ?? '',
            reason: r.resolution_reason ?? '',
            at: d.isoTime(r.resolved_at) as string,
            priorState: r.resolved_prior_state ?? LedgerState.UNKNOWN,
          },
  };
}

/**
 * Applies `set` only if `token` still owns `key` in one of `states`: the fencing rule
 * every write after the claim follows. Answers the rows changed (0 = superseded).
 */
export function guardedUpdate(
  d: UnitDialect,
  key: string,
  token: number,
  set: SqlFragment,
  states: readonly LedgerState[],
): Unit<number> {
  return exec(
    `UPDATE ledger_records SET ${set.sql}, updated_at = ${d.now} WHERE key = ? AND token = ? AND state IN ${inList(states)}`,
    [...set.params, key, token],
  );
}

/** The error for a write whose token no longer owns `key` (`record`: the row as it is now). */
export function staleError(
  op: string,
  key: string,
  token: number,
  record: LedgerRecord | null,
): StaleTokenError {
  return new StaleTokenError({
    op,
    key,
    token,
    currentToken: record?.token ?? null,
    currentState: record?.state ?? null,
  });
}
