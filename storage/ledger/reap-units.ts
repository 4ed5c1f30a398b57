/**
 * What the reaper deletes (docs/ledger.md "Retention"): settled ledger records finished
 * `ttlMs` ago, and the conversation, planner turns, payloads, progress facts, tool calls and paged-out trace
 * of runs idle that long, all in database time.
 */
import { inList, SETTLED_STATES } from './ledger-row';
import { exec, query, type SqlFragment, type Unit, type UnitDialect } from './sql-unit';
import type { ReapableRunsOptions } from './types';

/** The records the reaper may delete: settled (never live or UNKNOWN) and finished `ttlMs` ago in database time. */
export function finishedBefore(d: UnitDialect, ttlMs: number): SqlFragment {
  if (!Number.isFinite(ttlMs) || ttlMs < 0) throw new TypeError(`reap TTL must be >= 0 ms, got ${ttlMs}`);
  return {
    sql: `state IN ${inList(SETTLED_STATES)} AND finished_at IS NOT NULL AND finished_at <= ${d.now} - ${d.ms('?')}`,
    params: [Math.floor(ttlMs)],
  };
}

/**
 * `SELECT run_id` of the runs whose rows in the issue-9 tables (the conversation store, the
 * planner turns, the payload store) are all older than `ttlMs` by `created_at` (its newest
 * row), in database time; only among `runIds` when given. The conversation of a run is
 * keyed by its workflow id, like its ledger records and payloads.
 */
export function runDataIdleBefore(d: UnitDialect, ttlMs: number, runIds?: readonly string[]): SqlFragment {
  if (!Number.isFinite(ttlMs) || ttlMs < 0) throw new TypeError(`reap TTL must be >= 0 ms, got ${ttlMs}`);
  const among = runIds === undefined ? '' : ` WHERE run_id IN (${runIds.map(() => '?').join(', ')})`;
  return {
    sql: `SELECT run_id FROM (
        SELECT conversation_id AS run_id, created_at FROM agent_conversation
        UNION ALL SELECT conversation_id AS run_id, created_at FROM agent_planner_turns
        UNION ALL SELECT run_id, created_at FROM agent_payloads
        UNION ALL SELECT run_id, created_at FROM agent_trace
      ) AS d${among} GROUP BY run_id HAVING MAX(created_at) <= ${d.now} - ${d.ms('?')}`,
    params: [...(runIds ?? []), Math.floor(ttlMs)],
  };
}

/** Deletes the records `older` selects (only of `runIds` when given); answers the rows deleted. */
export function reapRecordsUnit(older: SqlFragment, runIds: readonly string[] | undefined): Unit<number> {
  const runs = runIds === undefined ? '' : ` AND run_id IN (${runIds.map(() => '?').join(', ')})`;
  return exec(`DELETE FROM ledger_records WHERE ${older.sql}${runs}`, [...older.params, ...(runIds ?? [])]);
}

/**
 * `SELECT run_id` of the runs with data to reap, in run id order: runs with old settled
 * records, and runs whose conversation, planner turns and payloads are all old (a read-only
 * run has no ledger records, only those).
 */
export function reapableRunsQuery(d: UnitDialect, ttlMs: number, options: ReapableRunsOptions): SqlFragment {
  const older = finishedBefore(d, ttlMs);
  const idle = runDataIdleBefore(d, ttlMs);
  const limit = Math.max(1, Math.floor(options.limit ?? 100));
  const after = options.after === undefined ? '' : ' WHERE run_id > ?';
  return {
    sql: `SELECT run_id FROM (SELECT DISTINCT run_id FROM ledger_records WHERE ${older.sql} UNION ${idle.sql}) AS r${after}
     ORDER BY run_id LIMIT ?`,
    params: [...older.params, ...idle.params, ...(options.after === undefined ? [] : [options.after]), limit],
  };
}

/**
 * Deletes the conversation, planner turns, payloads and paged-out trace of the runs `idle`
 * selects, leaving a line in `agent_trace_reaped` for each run that had a trace; answers the
 * rows deleted.
 */
export function* reapRunDataUnit(d: UnitDialect, idle: SqlFragment): Unit<number> {
  const runs = (yield* query<{ run_id: string }>(idle.sql, idle.params)).map((r) => r.run_id);
  if (runs.length === 0) return 0;
  const marks = runs.map(() => '?').join(', ');
  let removed = 0;
  removed += yield* exec(`DELETE FROM agent_conversation WHERE conversation_id IN (${marks})`, runs);
  removed += yield* exec(`DELETE FROM agent_planner_turns WHERE conversation_id IN (${marks})`, runs);
  removed += yield* exec(`DELETE FROM agent_payloads WHERE run_id IN (${marks})`, runs);
  removed += yield* exec(`DELETE FROM agent_progress_facts WHERE run_id IN (${marks})`, runs);
  yield* exec(`DELETE FROM agent_progress_versions WHERE run_id IN (${marks})`, runs); // derived from the facts
  removed += yield* exec(`DELETE FROM agent_tool_calls WHERE run_id IN (${marks})`, runs);
  yield* exec(
    `INSERT INTO agent_trace_reaped (run_id, records, reaped_at)
     SELECT run_id, count(*), ${d.now} FROM agent_trace WHERE run_id IN (${marks}) GROUP BY run_id
     ON CONFLICT DO NOTHING`,
    runs,
  );
  removed += yield* exec(`DELETE FROM agent_trace WHERE run_id IN (${marks})`, runs);
  return removed;
}
