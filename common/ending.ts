/**
 * How a run ended, in words, one wording for every reader — `agentctl status` and
 * `start --wait`, the console, the Temporal UI's details: whether the task was declared done
 * (only a finishing tool such as `complete_task` completes a run) or the model stopped talking,
 * was cut off, or a rule or the runtime stopped it. Sandbox-safe: workflow and client code use it.
 */

/** Whether the task was declared done, and how the run ended. */
export interface RunEnding {
  readonly finished_task: boolean;
  readonly ended: string;
}

/** How a run in `state` (a terminal state) with stop `reason` ended. */
export function howItEnded(state: string, reason: string | null): RunEnding {
  if (state === 'COMPLETED')
    return {
      finished_task: true,
      ended: 'the task was declared done (the finishing tool, e.g. complete_task)',
    };
  switch (reason) {
    case 'model_stopped':
      return {
        finished_task: false,
        ended: 'the model stopped talking without finishing the task (it never called the finishing tool)',
      };
    case 'model_output_truncated':
      return {
        finished_task: false,
        ended: "the model's reply was cut off at its output-token limit (nothing in it ran)",
      };
    case 'conversation_idle':
      return {
        finished_task: false,
        ended: 'the person did not answer within the idle timeout (PARTIAL conversation_idle)',
      };
    case 'conversation_closed':
      return {
        finished_task: false,
        ended: 'the person closed the conversation (PARTIAL conversation_closed)',
      };
    case 'planner_exhausted':
      return { finished_task: false, ended: 'the planner had nothing more to propose' };
    default:
      return { finished_task: false, ended: `stopped before the task was done (${reason ?? 'no reason'})` };
  }
}
