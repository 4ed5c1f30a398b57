/**
 * One workflow bundle per jest run. Bundling workflows/ takes seconds of CPU; every test
 * file that starts a worker used to bundle its own. jest's globalSetup
 * (temporal-global-setup.ts) calls {@link writeSharedBundle} once: the bundle goes to a file
 * in the run's scratch directory and its path to AGENT_TEST_WORKFLOW_BUNDLE, which the jest
 * workers inherit; {@link sharedWorkflowBundle} reads that file (once per test file). Without
 * the variable (a file run outside jest's globalSetup) it bundles in-process, as before.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { AGENT_BUNDLE_OPTIONS } from '../../worker/bundle-options';
import { WORKFLOWS_PATH } from '../../worker/create-worker';

/** The variable that carries the path of the shared bundle to the jest workers. */
export const SHARED_BUNDLE_ENV = 'AGENT_TEST_WORKFLOW_BUNDLE';

const noop = (): void => undefined;
const quietLogger = { trace: noop, debug: noop, info: noop, warn: noop, error: console.error, log: noop };

/** Bundles workflows/ with the bundler's chatter silenced (only errors print). */
function bundle(): Promise<{ code: string }> {
  return bundleWorkflowCode({
    workflowsPath: WORKFLOWS_PATH,
    ...AGENT_BUNDLE_OPTIONS,
    logger: quietLogger,
  });
}

/** globalSetup: bundles once, writes the bundle into `dir` and exports its path; returns the path. */
export async function writeSharedBundle(dir: string): Promise<string> {
  const file = join(dir, 'workflow-bundle.js');
  writeFileSync(file, (await bundle()).code);
  process.env[SHARED_BUNDLE_ENV] = file;
  return file;
}

let loaded: Promise<{ code: string }> | null = null;
/** The run's shared bundle (read once per test file), or a fresh one when there is none. */
export function sharedWorkflowBundle(): Promise<{ code: string }> {
  const file = process.env[SHARED_BUNDLE_ENV];
  loaded ??= file && existsSync(file) ? Promise.resolve({ code: readFileSync(file, 'utf8') }) : bundle();
  return loaded;
}
