/**
 * A run's counts of its calls by how each was answered: what the `status` query, the
 * checkpoint and the RunResult carry alike (common/contracts.ts).
 */
export interface RunCallCounts {
  /** Calls answered `execute` whose tool ran (or was sent to run). */
  readonly executed: number;
  /** Calls answered `return_cached_success`: the stored result, nothing ran. */
  readonly cached: number;
  /**
   * Calls answered `execute` whose write the tool's `reconcile` probe settled (an earlier
   * attempt dispatched it and was lost; the tool did not run now): not in `executed`. Absent
   * when none.
   */
  readonly reconciled?: number;
}
