/**
 * Observations → the tool-result text the model reads (the turn engine, llm-common.ts, hands
 * it to the provider's adapter): compact JSON of the result, its data cut at a cap, and the
 * marker for a call the runtime never answered.
 */
import type { Observation } from '../common/planner';

/** Default cap on the length of one tool-result text. */
export const DEFAULT_MAX_OBSERVATION_CHARS = 20_000;

/**
 * The tool-result text the model reads: compact JSON with `kind`, then `code`,
 * `unmet`, `retryAfterMs`, `cached` and `data` when present. Data whose JSON is longer
 * than `maxChars` is replaced by a `data_preview` prefix and `data_truncated: true`.
 */
export function observationContent(obs: Observation, maxChars = DEFAULT_MAX_OBSERVATION_CHARS): string {
  const out: Record<string, unknown> = { kind: obs.kind };
  if (obs.code !== undefined) out.code = obs.code;
  if (obs.unmet !== undefined) out.unmet = obs.unmet;
  if (obs.retryAfterMs !== undefined) out.retryAfterMs = obs.retryAfterMs;
  if (obs.cached) out.cached = true;
  if (obs.guard) out.guard = obs.guard;
  if (obs.data !== undefined) {
    const data = JSON.stringify(obs.data) ?? null;
    if (data !== null && data.length > maxChars) {
      out.data_truncated = true;
      out.data_preview = data.slice(0, maxChars);
    } else {
      out.data = obs.data;
    }
  }
  return JSON.stringify(out);
}

/**
 * The tool-result text for a call the runtime never answered: the planner was asked
 * for another turn with no observation (e.g. after a resume from a guard stop). Both
 * APIs demand a result for every call, and the guard's reasons are not the model's
 * business (docs/spec.md §2: a stop is not an observation), so the model learns only this.
 */
export const NOT_EXECUTED_CONTENT = JSON.stringify({
  kind: 'NOT_EXECUTED',
  unmet: 'the runtime did not execute this call',
});
