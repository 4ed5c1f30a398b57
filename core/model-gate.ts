/**
 * The run's own budgets before a model call, on the engines whose framework makes the call
 * (the AI SDK and OpenAI Agents paths): a run with nothing left of its token or cost budget
 * sends no further model request; it stops with the budget's reason, as an agentRun's
 * ceiling gate refuses a request that does not fit (planners/call-ceiling.ts). The usage of a
 * response is charged as it arrives and stops the run once past a budget; this gate also
 * catches a run that sits exactly at its budget, and one whose budget a resume did not raise.
 *
 * An agentRun reserves each request's worst case (its bytes plus its `maxTokens` of output),
 * since it builds the request itself; a framework may send a call without an output bound, so
 * here only a budget already used up refuses the call. Workflow code.
 */
import { GuardReason, TerminalState } from '../guard';
import type { GuardedRun } from './run';

/**
 * Whether the framework may send its next model request: false when the run is stopped, or
 * when its token or cost budget has nothing left (then the run stops here, with that budget's
 * reason, before the request is sent).
 */
export function mayCallModel(run: GuardedRun): boolean {
  if (run.stopped) return false;
  const { config, usage } = run.guard;
  const reason =
    usage.tokens >= config.maxTokens
      ? GuardReason.TOKEN_BUDGET
      : usage.costUsd >= config.maxCostUsd
        ? GuardReason.COST_BUDGET
        : null;
  if (reason === null) return true;
  const used =
    reason === GuardReason.TOKEN_BUDGET
      ? `${usage.tokens} of its ${config.maxTokens} tokens`
      : `$${usage.costUsd} of its $${config.maxCostUsd}`;
  run.runtimeStop(
    reason,
    TerminalState.STOPPED_LOOP_GUARD,
    undefined,
    `the run has used ${used}: a model request was not sent`,
  );
  return false;
}
