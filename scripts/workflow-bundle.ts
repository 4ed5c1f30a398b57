/**
 * The workflow bundle the benches and scripts build once per process, with the bundler's
 * chatter silenced (only its errors are printed).
 */
import { bundleWorkflowCode } from '@temporalio/worker';
import { WORKFLOWS_PATH } from '../worker/create-worker';

/** Bundles workflows/ for an in-process worker, printing only errors. */
export function quietWorkflowBundle(): Promise<{ code: string }> {
  const noop = (): void => undefined;
  return bundleWorkflowCode({
    workflowsPath: WORKFLOWS_PATH,
    logger: { trace: noop, debug: noop, info: noop, warn: noop, error: console.error, log: noop },
  });
}
