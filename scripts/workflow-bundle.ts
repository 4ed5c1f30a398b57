/**
 * The workflow bundle the benches and scripts build once per process, with the bundler's
 * chatter silenced (only its errors are printed).
 */
import { bundleWorkflowCode } from '@temporalio/worker';
import { agentBundleOptions } from '../worker/bundle-options';
import { WORKFLOWS_PATH } from '../worker/create-worker';

/**
 * Bundles workflows/ for an in-process worker, printing only errors. `telemetry: false`: the
 * bundle of a worker whose telemetry listens to nothing (its runs make no sink call).
 */
export function quietWorkflowBundle(o: { telemetry?: boolean } = {}): Promise<{ code: string }> {
  const noop = (): void => undefined;
  return bundleWorkflowCode({
    workflowsPath: WORKFLOWS_PATH,
    ...agentBundleOptions(o),
    logger: { trace: noop, debug: noop, info: noop, warn: noop, error: console.error, log: noop },
  });
}
