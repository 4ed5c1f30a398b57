/**
 * A long script travels by reference. A scripted run's `script.calls` is either
 * the calls or a {@link PayloadRef} into the worker's payload store: the client stores a
 * script too large for a payload (client/runs.ts), and a run whose inline calls are longer
 * than {@link SCRIPT_REF_BYTES} stores them at its first continue-as-new, through a local
 * activity (the calls never enter history; only the small reference does), so the input that
 * crosses continue-as-new stays small. The plan activity reads the one call a turn needs
 * (activities/run/script-activity.ts). Workflow code: pure, deterministic.
 */
import { isPayloadRef, jsonBytes, type PayloadRef } from '../common/payload-limits';
import type { RunInput } from '../common/contracts';

/** Inline calls above this many bytes of JSON go by reference at a continue-as-new. */
export const SCRIPT_REF_BYTES = 16 * 1024;

/** A script's `calls`, when they are a reference. */
export function scriptCallsRef(script: unknown): PayloadRef | null {
  const calls =
    typeof script === 'object' && script !== null ? (script as { calls?: unknown }).calls : undefined;
  return isPayloadRef(calls) ? calls : null;
}

/** The script with its calls left out: what the workflow reads of a script by reference. */
export function scriptHead(script: unknown): unknown {
  return scriptCallsRef(script) ? { ...(script as object), calls: [] } : script;
}

/**
 * The input of the next run of a continue-as-new: `raw`, with a long inline script's calls
 * replaced by their reference (stored by `storeScript`); as it is when the calls are short,
 * already a reference, or the worker has no payload store.
 */
export async function lighterInput(
  raw: RunInput,
  runId: string,
  storeScript: (input: { runId: string; calls: readonly unknown[] }) => Promise<{ ref: PayloadRef | null }>,
): Promise<RunInput> {
  const planner = raw.planner as { kind?: unknown; script?: unknown };
  if (planner.kind !== 'scripted' || typeof planner.script !== 'object' || planner.script === null)
    return raw;
  const script = planner.script as { calls?: unknown };
  if (!Array.isArray(script.calls) || jsonBytes(script.calls) <= SCRIPT_REF_BYTES) return raw;
  const { ref } = await storeScript({ runId, calls: script.calls });
  if (!ref) return raw;
  return { ...raw, planner: { ...raw.planner, script: { ...script, calls: ref } } } as RunInput;
}
