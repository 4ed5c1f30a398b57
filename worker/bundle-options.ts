/**
 * How an agent worker's workflow bundle is built, in one place for every builder (the
 * worker that bundles, the plugin, the scripts' and tests' prebuilt bundles):
 *  - the telemetry outbox interceptor (core/telemetry-outbox.ts): a run's decisions reach the
 *    `agentTelemetry` sink as one call per activation;
 *  - TypeScript sources compiled for ES2022, as the package's own `dist` is (tsconfig.json):
 *    the SDK's bundler compiles `.ts` files for ES2017, which turns every object spread and
 *    rest into helper calls (~10 % of a step's workflow code, only when the
 *    workflows are bundled from source — tests, benches, `tsx` workers). Compiled `.js` (the
 *    published package) is not touched.
 */
import type { BundleOptions, WorkerInterceptors } from '@temporalio/worker';

/** The path of the outbox interceptor module (see the module comment). */
export const TELEMETRY_OUTBOX_MODULE = require.resolve('../core/telemetry-outbox');

type WebpackConfig = Parameters<NonNullable<BundleOptions['webpackConfigHook']>>[0];

/**
 * The bundler's `.ts` rule (swc-loader) compiles for ES2022 instead of ES2017; any other rule,
 * and a configuration whose shape this does not know, is left as it is.
 */
export function es2022Sources(config: WebpackConfig): WebpackConfig {
  for (const rule of config.module?.rules ?? []) {
    if (!rule || typeof rule !== 'object' || !('use' in rule)) continue;
    const use = rule.use as { loader?: unknown; options?: { jsc?: { target?: string } } } | undefined;
    if (!use || typeof use.loader !== 'string' || !use.loader.includes('swc-loader')) continue;
    const jsc = use.options?.jsc;
    if (jsc && jsc.target === 'es2017') jsc.target = 'es2022';
  }
  return config;
}

/** `interceptors` with the outbox module among their workflow modules (a worker that bundles). */
export function withOutbox(interceptors: WorkerInterceptors = {}): WorkerInterceptors {
  return {
    ...interceptors,
    workflowModules: [...(interceptors.workflowModules ?? []), TELEMETRY_OUTBOX_MODULE],
  };
}

/** What `bundleWorkflowCode` needs besides `workflowsPath` for an agent worker's bundle. */
export const AGENT_BUNDLE_OPTIONS = {
  workflowInterceptorModules: [TELEMETRY_OUTBOX_MODULE],
  webpackConfigHook: es2022Sources,
} as const satisfies Partial<BundleOptions>;
