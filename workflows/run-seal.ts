/**
 * What leaves a run for the worker to keep (docs/spec.md §7.10, §7.12): its checkpoint, sealed
 * by the worker for continue-as-new input and for the result (`resume --from`), and a lean run's
 * trace records that do not travel in the checkpoint, paged out to the worker's database.
 * Workflow code: deterministic, its only I/O through activities.
 */
import { ActivityFailure, isCancellation } from '@temporalio/workflow';
import type { Checkpoint } from '../common/contracts';
import { PAYLOAD_TOO_LARGE } from '../common/payload-limits';
import { GuardReason, TerminalState } from '../guard';
import { boundedRecord, checkpointTooLarge } from '../core/checkpoint-bounds';
import type { RunState } from './run-state';
import { checkpointOf } from './run-views';

/** The most JSON one `saveTrace` call carries (a continue-as-new saves in as few calls as fit). */
const TRACE_SAVE_BYTES = 512 * 1024;

/**
 * The run's checkpoint, sealed by the worker (for continue-as-new input). Null when it would not
 * fit in one payload with `around` (the rest of that input): the run then stops NEEDS_HUMAN
 * payload_too_large instead of continuing as new (it never fails).
 */
export async function sealedCheckpoint(run: RunState, around: unknown = {}): Promise<Checkpoint | null> {
  const cp = checkpointOf(run);
  const tooLarge = checkpointTooLarge(cp, around);
  if (tooLarge !== null) {
    run.runtimeStop(
      GuardReason.PAYLOAD_TOO_LARGE,
      TerminalState.NEEDS_HUMAN,
      PAYLOAD_TOO_LARGE,
      `continue-as-new refused: ${tooLarge}`,
    );
    return null;
  }
  return sealCheckpoint(run, cp);
}

/**
 * A lean run's continue-as-new: the trace records that do not travel in the checkpoint (its
 * newest `kept` do) go to the worker's database, in one `saveTrace` call (more only above
 * 512 KB). A save that fails after its retries loses nothing of the run: the records stay in
 * the earlier runs' histories, and the run goes on.
 */
export async function pageOutTrace(run: RunState, kept: number): Promise<void> {
  const leaving = run.trace.leave(kept).map((r) => ({ seq: r.seq, record: boundedRecord(r.record) }));
  let batch: typeof leaving = [];
  let bytes = 0;
  const save = async () => {
    if (batch.length === 0) return;
    const records = batch;
    batch = [];
    bytes = 0;
    try {
      await run.activities.saveTrace({ runId: run.runId, records });
    } catch (err) {
      if (!(err instanceof ActivityFailure) || isCancellation(err)) throw err;
    }
  };
  for (const r of leaving) {
    const size = JSON.stringify(r).length;
    if (bytes + size > TRACE_SAVE_BYTES) await save();
    batch.push(r);
    bytes += size;
  }
  await save();
}

/** The checkpoint sealed by the worker; unsealed when the seal activity fails (never a failed run). */
export async function sealCheckpoint(run: RunState, cp: Checkpoint): Promise<Checkpoint> {
  try {
    // Only the seal comes back: the checkpoint crosses history once less.
    const { seal: _old, ...rest } = cp;
    return { ...rest, seal: await run.activities.checkpointSeal(rest) };
  } catch (err) {
    if (!(err instanceof ActivityFailure) || isCancellation(err)) throw err;
    // Unsealed, the checkpoint can still continue this run's own chain; `resume --from` refuses it.
    return cp;
  }
}
