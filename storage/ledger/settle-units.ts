/**
 * The units of work that move a claimed record on: the fenced writes (dispatch, commit,
 * fail, renew, mark unknown), `commitWith`'s business write in the ledger's own transaction,
 * a transient failure's release, and an operator's resolution of an UNKNOWN record.
 */
import { insertClaim } from './claim-units';
import { guardedUpdate, inList, isLive, LIVE_STATES, lockRow, readRow, staleError } from './ledger-row';
import { planResolution } from './resolve-input';
import { toJsonText } from './stored-error';
import {
  businessWork,
  exec,
  type MaybePromise,
  type SqlFragment,
  type Unit,
  type UnitDialect,
} from './sql-unit';
import {
  LedgerState,
  type ClaimInput,
  type FailOptions,
  type LedgerRecord,
  type LedgerTx,
  type ResolveInput,
} from './types';

/** The assignments that store a result as SUCCEEDED. */
export function succeeded(d: UnitDialect, result: unknown): SqlFragment {
  return {
    sql: `state = '${LedgerState.SUCCEEDED}', result = ?, error = NULL, lease_expires_at = NULL, finished_at = ${d.now}`,
    params: [toJsonText(result)],
  };
}

/** A {@link guardedUpdate} as its own unit; a rejected token throws `StaleTokenError`. */
export function* fencedUnit(
  d: UnitDialect,
  op: string,
  key: string,
  token: number,
  set: SqlFragment,
  states: readonly LedgerState[],
): Unit<void> {
  if ((yield* guardedUpdate(d, key, token, set, states)) === 0) {
    throw staleError(op, key, token, yield* readRow(d, key));
  }
}

/** {@link fencedUnit}, then `also`'s writes in the same unit (a commit that carries bookkeeping). */
export function* fencedWithUnit(
  d: UnitDialect,
  op: string,
  key: string,
  token: number,
  set: SqlFragment,
  also: (tx: LedgerTx) => MaybePromise<void>,
): Unit<void> {
  yield* fencedUnit(d, op, key, token, set, LIVE_STATES);
  yield* businessWork(also);
}

/**
 * A fresh key's claim, the business write and SUCCEEDED in one unit; null (nothing written)
 * when the key has a record: the caller takes the claim → commitWith path instead.
 */
export function* claimCommitWithUnit<T>(
  d: UnitDialect,
  input: ClaimInput,
  work: (tx: LedgerTx, token: number) => MaybePromise<T>,
): Unit<{ token: number; value: T } | null> {
  if ((yield* lockRow(d, input.key)) !== null) return null;
  const token = yield* insertClaim(d, input);
  if (token === null) return null;
  const value = yield* businessWork((tx) => work(tx, token));
  yield* guardedUpdate(d, input.key, token, succeeded(d, value), LIVE_STATES);
  return { token, value };
}

export function* commitWithUnit<T>(
  d: UnitDialect,
  key: string,
  token: number,
  work: (tx: LedgerTx) => MaybePromise<T>,
): Unit<T> {
  // The token is checked, and the row locked, before the business write runs.
  const record = yield* lockRow(d, key);
  if (!record || record.token !== token || !isLive(record.state))
    throw staleError('commit', key, token, record);
  const value = yield* businessWork(work);
  yield* guardedUpdate(d, key, token, succeeded(d, value), LIVE_STATES);
  return value;
}

export function* failTransientUnit(
  d: UnitDialect,
  key: string,
  token: number,
  stored: string,
  options: FailOptions,
): Unit<void> {
  // Nothing was sent: forget the claim so the next attempt runs as if it were the first.
  const releasable = options.notPerformed ? LIVE_STATES : [LedgerState.CLAIMED];
  const released = yield* exec(
    `DELETE FROM ledger_records WHERE key = ? AND token = ? AND state IN ${inList(releasable)}`,
    [key, token],
  );
  if (released > 0) return;
  // Possibly sent: keep the intent, only give the lease up.
  const set = { sql: `error = ?, lease_expires_at = ${d.now}`, params: [stored] };
  if ((yield* guardedUpdate(d, key, token, set, [LedgerState.DISPATCHED])) === 0) {
    throw staleError('fail', key, token, yield* readRow(d, key));
  }
}

export function* resolveUnit(d: UnitDialect, key: string, r: ResolveInput): Unit<LedgerRecord> {
  const { state, prior, result, error } = planResolution(key, yield* lockRow(d, key), r);
  const now = d.now;
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
  return (yield* readRow(d, key)) as LedgerRecord;
}
