/**
 * A run's RunResult once it closes, whatever its terminal state (client/runs.ts
 * `agentRunResult`, under the client API's `getAgentRunResult`): a run that did not complete
 * closes as a failed workflow whose typed failure carries it. Any other failure rejects as
 * `handle.result()` does. Takes a workflow handle or a harness run (`{ handle }`).
 */
import type { WorkflowHandle } from '@temporalio/client';
import { agentRunResult } from '../../client/runs';
import type { RunResult } from '../../common/contracts';

export function runResult(run: WorkflowHandle | { readonly handle: WorkflowHandle }): Promise<RunResult> {
  return agentRunResult('handle' in run ? run.handle : run);
}
