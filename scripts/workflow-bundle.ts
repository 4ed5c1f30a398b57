/**
 * The workflow bundle the benches and scripts build once per process, with the bundler's
 * chatter silenced (only its errors are printed).
 */
import { bundleWorkflowCode } from '@temporalio/worker';
import { AGENT_BUNDLE_OPTIONS } from '../worker/bundle-options';
import { WORKFLOWS_PATH } from '../worker/create-worker';

/** Bundles workflows/ for an in-process worker, printing only errors. */
export function quietWorkflowBundle(): Promise<{ code: string }> {
  const noop = (): void => undefined;
  return bundleWorkflowCode({
    workflowsPath: WORKFLOWS_PATH,
    ...AGENT_BUNDLE_OPTIONS,
    logger: { trace: noop, debug: noop, info: noop, warn: noop, error: console.error, log: noop },
  });
}
