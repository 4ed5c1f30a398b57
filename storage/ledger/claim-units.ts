/**
 * The units of work of a claim (docs/spec.md §8): the one-statement insert of a fresh claim
 * and the locked read-decide-write that `decideClaim` steers (take over, mark unknown,
 * replay, report).
 */
import { decideClaim } from './claim-decision';
import { lockRow, readRow } from './ledger-row';
import { exec, nextToken, query, type Unit, type UnitDialect } from './sql-unit';
import { LedgerState, type ClaimInput, type ClaimOutcome, type LedgerRecord } from './types';

/** The claim's read-decide-write; null means "raced a release, go round again". */
export function* claimLocked(d: UnitDialect, input: ClaimInput): Unit<ClaimOutcome | null> {
  const record = yield* lockRow(d, input.key);
  const action = decideClaim(record ?? undefined, input);
  switch (action.do) {
    case 'insert': {
      const token = yield* insertClaim(d, input);
      return token === null ? null : { kind: 'claimed', token, takenOverFrom: null };
    }
    case 'takeover': {
      const fresh = yield* nextToken();
      const rows = yield* query<{ token: number | string }>(
        `UPDATE ledger_records SET token = ${fresh.sql}, run_id = ?, owner = ?, lease_expires_at = ${d.now} + ${d.ms('?')},
         attempts = attempts + 1, updated_at = ${d.now} WHERE key = ? RETURNING token`,
        [...fresh.params, input.runId, input.owner, Math.ceil(input.leaseMs), input.key],
      );
      return { kind: 'claimed', token: Number(rows[0]?.token), takenOverFrom: action.from };
    }
    case 'mark_unknown': {
      yield* exec(
        `UPDATE ledger_records SET state = '${LedgerState.UNKNOWN}', lease_expires_at = NULL,
         finished_at = ${d.now}, updated_at = ${d.now} WHERE key = ?`,
        [input.key],
      );
      return { kind: 'unknown', record: (yield* readRow(d, input.key)) as LedgerRecord };
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
export function* insertClaim(d: UnitDialect, input: ClaimInput): Unit<number | null> {
  const fresh = yield* nextToken();
  const rows = yield* query<{ token: number | string }>(
    `INSERT INTO ledger_records (key, tool, args_hash, run_id, owner, state, token, lease_expires_at, attempts, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, '${LedgerState.CLAIMED}', ${fresh.sql}, ${d.now} + ${d.ms('?')}, 1, ${d.now}, ${d.now})
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
