/**
 * A run that did not complete closes as a FAILED Temporal workflow, not a COMPLETED one: in the
 * Temporal UI's list, `temporal workflow list` and every dashboard that counts failures, a run
 * the guard stopped, or that needs a person, or that ended PARTIAL, must not look like a success.
 * Its failure is typed ({@link RUN_NOT_COMPLETED}), non-retryable, and carries the whole
 * RunResult (StopReport, decisions, sealed checkpoint for `resume --from`) as its one detail,
 * so a reader loses nothing against a returned result: {@link runResultOf} takes it back out.
 *
 * Sandbox-safe: the workflow raises it, a parent workflow and the client read it.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { RunResult } from './contracts';

/** The failure type of a run that ended in any terminal state but COMPLETED. */
export const RUN_NOT_COMPLETED = 'AgentRunNotCompleted';

/**
 * The failure a run ends with when its terminal state is not COMPLETED. Its message is plain
 * text in history (failure messages are not encoded): only the state and the rule's reason,
 * never args, results or the model's words; those stay in the encoded detail.
 */
export function runNotCompleted(result: RunResult): ApplicationFailure {
  const why = result.reason ? ` (${result.reason})` : '';
  return ApplicationFailure.create({
    type: RUN_NOT_COMPLETED,
    message: `the agent run ended ${result.terminal_state}${why}, not COMPLETED`,
    nonRetryable: true,
    details: [result],
  });
}

/**
 * The RunResult carried by a run's ending: the failure itself, or any error whose cause chain
 * holds it (the client's WorkflowFailedError, a parent's ChildWorkflowFailure). Null when the
 * error is anything else (a crash, a termination, a timeout, an invalid input).
 */
export function runResultOf(err: unknown): RunResult | null {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    if (e instanceof ApplicationFailure && e.type === RUN_NOT_COMPLETED) {
      const result = e.details?.[0];
      return isRunResult(result) ? result : null;
    }
  }
  return null;
}

function isRunResult(v: unknown): v is RunResult {
  return typeof v === 'object' && v !== null && typeof (v as RunResult).terminal_state === 'string';
}

/** The way a run's workflow ends with `result`: returned when COMPLETED, thrown as its failure otherwise. */
export function endWith(result: RunResult): RunResult {
  if (result.terminal_state === 'COMPLETED') return result;
  throw runNotCompleted(result);
}
