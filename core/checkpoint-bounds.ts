/**
 * Size bounds of what a run hands to Temporal as one payload, on every engine: the checkpoint
 * it carries across continue-as-new and keeps in a stop's result (core/views.ts `checkpointOf`
 * bounds its trace here for an agentRun, an AI SDK agent and an OpenAI Agents agent alike).
 * The live state in workflow memory is never changed here; only the copy that travels is bounded.
 *
 * - The checkpoint's trace: the newest records while their JSON stays within
 *   {@link CHECKPOINT_TRACE_BYTES}, each record's `args` cut to a short preview above
 *   {@link CHECKPOINT_ARGS_BYTES} (args may be up to 256 KB; 200 of them would not fit).
 * - The checkpoint's observation: a tool result's data normally arrives by reference (the
 *   payload store); data kept inline above {@link CHECKPOINT_OBSERVATION_BYTES} travels as
 *   the planner's own preview of it (`data_truncated`, `data_preview`).
 * - A closed run's result: when still above the limit, its decisions and then its
 *   checkpoint's planner memory are dropped before the checkpoint itself, so the run can
 *   always close instead of failing its workflow task forever.
 *
 * Workflow code: deterministic, sandbox-safe.
 */
import type { Observation } from '../common/planner';
import type { Checkpoint, RunResult } from '../common/contracts';
import { jsonBytes, MAX_PAYLOAD_BYTES, utf8Prefix } from '../common/payload-limits';
import type { TraceRecord } from '../guard';

/** The most JSON a checkpoint's trace carries. */
export const CHECKPOINT_TRACE_BYTES = 64 * 1024;
/** The most JSON a lean checkpoint's trace carries (docs/spec.md §7.10); older records are paged out. */
export const LEAN_CHECKPOINT_TRACE_BYTES = 16 * 1024;
/** A trace record's args above this many bytes of JSON travel as a preview. */
export const CHECKPOINT_ARGS_BYTES = 1024;
/** The preview kept of such args. */
export const CHECKPOINT_ARGS_PREVIEW_BYTES = 512;
/** An inline observation above this many bytes of JSON travels as a preview. */
export const CHECKPOINT_OBSERVATION_BYTES = 64 * 1024;
/** The preview kept of its data (the planner's own `data_preview` length, 20,000 characters). */
export const CHECKPOINT_OBSERVATION_PREVIEW_CHARS = 20_000;

/** A record as it travels in a checkpoint (or to the trace store): its args cut to a preview when long. */
export function boundedRecord(r: TraceRecord): TraceRecord {
  if (r.args === null || r.args === undefined) return r;
  const json = JSON.stringify(r.args);
  if (json === undefined || json.length <= CHECKPOINT_ARGS_BYTES / 3) return r;
  const bytes = jsonBytes(r.args);
  if (bytes <= CHECKPOINT_ARGS_BYTES) return r;
  return {
    ...r,
    args: { args_truncated: true, bytes, preview: utf8Prefix(json, CHECKPOINT_ARGS_PREVIEW_BYTES) },
  };
}

/** The newest records whose JSON fits in `maxBytes`, oldest first, long args cut to a preview. */
export function boundTrace(
  records: readonly TraceRecord[],
  maxBytes = CHECKPOINT_TRACE_BYTES,
): TraceRecord[] {
  const kept: TraceRecord[] = [];
  let total = 2; // the array's brackets
  for (let i = records.length - 1; i >= 0; i--) {
    const r = boundedRecord(records[i] as TraceRecord);
    const size = jsonBytes(r) + 1;
    if (total + size > maxBytes) break;
    total += size;
    kept.push(r);
  }
  return kept.reverse();
}

/** The observation as it travels in a checkpoint: inline data above the bound becomes the planner's preview. */
export function boundObservation(obs: Observation | null): Observation | null {
  if (obs === null || obs.data === undefined) return obs;
  const json = JSON.stringify(obs.data);
  if (json === undefined || json.length <= CHECKPOINT_OBSERVATION_BYTES / 3) return obs;
  const bytes = jsonBytes(obs.data);
  if (bytes <= CHECKPOINT_OBSERVATION_BYTES) return obs;
  return {
    ...obs,
    data: {
      data_truncated: true,
      bytes,
      data_preview: json.slice(0, CHECKPOINT_OBSERVATION_PREVIEW_CHARS),
    },
  };
}

/** Why a checkpoint cannot travel: null when it fits in one payload with `around` (the rest of the input). */
export function checkpointTooLarge(
  cp: Checkpoint,
  around: unknown = {},
  limit = MAX_PAYLOAD_BYTES,
): string | null {
  const cpBytes = jsonBytes(cp);
  const aroundBytes = jsonBytes(around);
  if (cpBytes + aroundBytes <= limit) return null;
  const parts = (['plannerMemory', 'observation', 'trace', 'decisions', 'guard'] as const)
    .map((k) => `${k} ${jsonBytes(cp[k])}`)
    .join(', ');
  return `the checkpoint is ${cpBytes} bytes of JSON (${parts}) and the rest of the input ${aroundBytes}: above the ${limit}-byte payload limit`;
}

/**
 * A closed run's result that fits in one payload: unchanged when it does; else its
 * decisions are cut to the checkpoint's own, then the checkpoint's planner memory and
 * observation are dropped, then the checkpoint itself. `dropped` names what went.
 */
export function fitResult(
  result: RunResult,
  limit = MAX_PAYLOAD_BYTES,
): { result: RunResult; dropped: string[] } {
  const dropped: string[] = [];
  let r = result;
  if (jsonBytes(r) <= limit) return { result: r, dropped };
  if (r.decisions.length > 1000) {
    r = { ...r, decisions: r.decisions.slice(-1000) };
    dropped.push('decisions before the newest 1000');
    if (jsonBytes(r) <= limit) return { result: r, dropped };
  }
  if (r.checkpoint) {
    r = { ...r, checkpoint: { ...r.checkpoint, plannerMemory: null, observation: null } };
    dropped.push("the checkpoint's planner memory and observation");
    if (jsonBytes(r) <= limit) return { result: r, dropped };
    r = { ...r, checkpoint: null };
    dropped.push('the checkpoint');
  }
  return { result: r, dropped };
}
