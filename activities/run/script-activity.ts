/**
 * A long script by reference: a scripted run's `script.calls` may be a
 * {@link PayloadRef} into the payload store (storage/payloads) instead of the calls
 * themselves — stored by the client when the run input would not fit a payload, or by the
 * workflow at its first continue-as-new (`storeScript`, a local activity: the calls never
 * enter history), so what crosses continue-as-new stays small. The plan activity reads the
 * one call a turn needs through {@link ScriptCalls.withCall}; the calls are loaded once per
 * worker and kept behind a cursor (guard/script-calls.ts), so a turn costs O(1), not a read
 * and parse of the whole script.
 */
import { ApplicationFailure } from '@temporalio/common';
import { isPayloadRef, type PayloadRef } from '../../common/payload-limits';
import { ScriptCursor } from '../../guard/script-calls';
import type { PayloadStore } from '../../storage/payloads';
import type { PlanInput } from '../types';

/** Input of `storeScript`: the run and its script's calls. */
export interface StoreScriptInput {
  readonly runId: string;
  readonly calls: readonly unknown[];
}

/**
 * A script's reference without its preview: it rides in every turn's plan input (in history
 * when the next turn is prefetched), and nobody reads a preview of a script.
 */
export function leanScriptRef(ref: PayloadRef): PayloadRef {
  return { ...ref, preview: '' };
}

/** How many loaded scripts a worker keeps (most recently used). */
const KEPT_SCRIPTS = 8;

/** The script-by-reference side of the worker's activities. */
export class ScriptCalls {
  private readonly loaded = new Map<string, ScriptCursor<unknown>>();

  constructor(private readonly payloads: PayloadStore | null) {}

  /** Stores a run's calls; `ref: null` when this worker has no payload store (the input stays inline). */
  async storeScript(input: StoreScriptInput): Promise<{ ref: PayloadRef | null }> {
    if (!this.payloads) return { ref: null };
    return { ref: leanScriptRef(await this.payloads.put(input.runId, input.calls)) };
  }

  /**
   * `input` with a referenced script's calls replaced by the one call at `scriptAt` (none past
   * the end), as the workflow sends an inline script's; any other input as it is.
   */
  async withCall(input: PlanInput): Promise<PlanInput> {
    if (input.planner.kind !== 'scripted') return input;
    const script = input.planner.script as { calls?: unknown } | undefined;
    if (typeof script !== 'object' || script === null || !isPayloadRef(script.calls)) return input;
    const cursor = await this.cursor(input.runId, script.calls);
    const call = cursor.at(input.scriptAt ?? -1);
    return {
      ...input,
      planner: { ...input.planner, script: { ...script, calls: call === undefined ? [] : [call] } },
    };
  }

  private async cursor(runId: string, ref: PayloadRef): Promise<ScriptCursor<unknown>> {
    const key = `${runId} ${ref.id}`;
    let cursor = this.loaded.get(key);
    if (cursor) {
      this.loaded.delete(key);
    } else {
      if (!this.payloads) {
        throw ApplicationFailure.nonRetryable(
          `the run's script is in the payload store (${ref.id}) and this worker has none (a SQL ledger)`,
          'TypeError',
        );
      }
      const calls = await this.payloads.get(runId, ref);
      if (!Array.isArray(calls))
        throw ApplicationFailure.nonRetryable('a stored script is not a list of calls', 'TypeError');
      cursor = new ScriptCursor<unknown>(calls);
    }
    this.loaded.set(key, cursor);
    while (this.loaded.size > KEPT_SCRIPTS) this.loaded.delete(this.loaded.keys().next().value!);
    return cursor;
  }
}
