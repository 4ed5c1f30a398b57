/**
 * The one exit of an `agentRun` (docs/spec.md §7): the run closes in its terminal state, publishes
 * it, waits for every message handler to finish, and ends with its result, bounded to one payload
 * and with its checkpoint sealed (for `resume --from`). A COMPLETED run returns it; any other
 * terminal state ends the workflow as failed with the result inside a typed, non-retryable failure
 * (common/run-ended.ts), so the Temporal UI's list does not show a stopped run as a success.
 * Workflow code.
 */
import { allHandlersFinished, CancellationScope, condition } from '@temporalio/workflow';
import type { RunResult } from '../common/contracts';
import { endWith } from '../common/run-ended';
import type { TerminalState } from '../guard';
import { fitResult } from '../core/checkpoint-bounds';
import { sealCheckpoint } from './run-seal';
import type { RunState } from './run-state';
import { resultOf } from './run-views';

/**
 * Ends the run in `state` (the stop's, when none is given): returns its result when COMPLETED,
 * throws it as the run's failure otherwise.
 */
export async function finishRun(
  run: RunState,
  state?: TerminalState,
  summary: string | null = null,
): Promise<RunResult> {
  return endWith(await finalResult(run, state, summary));
}

async function finalResult(
  run: RunState,
  state: TerminalState | undefined,
  summary: string | null,
): Promise<RunResult> {
  const final = run.close(state);
  run.publish(true, summary);
  // Non-cancellable: a cancelled run still lets an in-flight resume answer.
  await CancellationScope.nonCancellable(() => condition(allHandlersFinished));
  // Bounded to one payload: a result above Temporal's limit would fail the workflow task forever.
  const { result } = fitResult(resultOf(run, final, summary));
  if (!result.checkpoint) return result;
  // The checkpoint leaves in the result (for `resume --from`): sealed, so it comes back unforged.
  return {
    ...result,
    checkpoint: await CancellationScope.nonCancellable(() => sealCheckpoint(run, result.checkpoint!)),
  };
}
