/**
 * The `saveTrace` activity: keeps the trace records that leave a long run's
 * checkpoint at a continue-as-new in the worker's database (storage/trace-store.ts), once per
 * continue-as-new, never per step. Idempotent: a retried save writes nothing twice.
 */
import type { StoredTraceRecord } from '../../storage/trace-store';
import type { ActivityContext } from './context';

/** Input of `saveTrace`: the run and its records, each with its position in the whole trace. */
export interface SaveTraceInput {
  readonly runId: string;
  readonly records: readonly StoredTraceRecord[];
}

/** The `saveTrace` activity over the worker's context. */
export function createTraceActivity(ctx: ActivityContext) {
  /** Saves the records; `stored: false` when the worker's ledger has no SQL database to keep them. */
  async function saveTrace(input: SaveTraceInput): Promise<{ saved: number; stored: boolean }> {
    if (!ctx.traces) return { saved: 0, stored: false };
    return { saved: await ctx.traces.save(input.runId, input.records), stored: true };
  }
  return { saveTrace };
}
