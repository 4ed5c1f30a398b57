/**
 * What the planner is told about its previous proposal (docs/spec.md §7). A guard stop is
 * never an observation: it ends the run, it is not text for the model to argue with. A steered
 * refusal is (workflows/steer-note.ts): the guard's note, before the run stops.
 */
import type { Observation } from '../common/planner';
import type { ToolResult } from '../guard';

/** The observation of one executed (or cached) call's result. */
export function toObservation(
  callId: string | undefined,
  tool: string,
  r: ToolResult,
  cachedResult: boolean,
): Observation {
  const base = {
    tool,
    kind: r.kind,
    ...(callId ? { callId } : {}),
    ...(cachedResult ? { cached: true } : {}),
  };
  switch (r.kind) {
    case 'SUCCESS':
      return { ...base, data: r.data };
    case 'PRECONDITION':
      return { ...base, code: r.code, unmet: r.unmet };
    case 'RETRYABLE':
    case 'PENDING':
      return { ...base, code: r.code, retryAfterMs: r.retryAfterMs };
    default:
      return { ...base, code: r.code };
  }
}
