/**
 * How a run's end and its trace are read, written once for the durable run, the offline
 * replay and agentctl, so the three can never disagree about `stopped_at` or a trace page.
 */
import { TerminalState } from './constants';
import { GuardReason } from './reasons';
import type { TraceRecord } from './schemas';

/**
 * The replay output's `stopped_at`: the index of the call that ended the run, or null when
 * the calls ran out (`PARTIAL planner_exhausted`) or nothing was proposed.
 */
export function stoppedAt(
  state: TerminalState,
  reason: string | null,
  lastDecisionIndex: number | null | undefined,
): number | null {
  if (state === TerminalState.PARTIAL && reason === GuardReason.PLANNER_EXHAUSTED) return null;
  return lastDecisionIndex ?? null;
}

/** Trace page query arguments. */
export interface TracePageArgs {
  offset?: number;
  limit?: number;
  decision?: string;
  reason?: string;
}

/** A page of trace records. */
export interface TracePage {
  /** Records written over the run's whole life (older ones may no longer be kept). */
  total: number;
  /** Records still kept. */
  kept: number;
  records: TraceRecord[];
}

/** Largest page a trace query returns. */
export const MAX_TRACE_PAGE = 1000;
/** Page size when none is asked for. */
export const DEFAULT_TRACE_PAGE = 100;

/** One page of `kept` filtered by decision and reason; `total` counts every record ever written. */
export function pageTrace(kept: readonly TraceRecord[], total: number, args: TracePageArgs = {}): TracePage {
  const filtered =
    args.decision || args.reason
      ? kept.filter(
          (r) =>
            (!args.decision || r.decision === args.decision) && (!args.reason || r.reason === args.reason),
        )
      : kept;
  const offset = Math.max(0, args.offset ?? 0);
  const limit = Math.min(MAX_TRACE_PAGE, Math.max(1, args.limit ?? DEFAULT_TRACE_PAGE));
  return { total, kept: kept.length, records: filtered.slice(offset, offset + limit) };
}
