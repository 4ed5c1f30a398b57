/**
 * How an agent worker's workflow bundle is built, in one place for every builder (the
 * worker that bundles, the plugin, the scripts' and tests' prebuilt bundles):
 *  - the telemetry module: when the worker's telemetry listens, the outbox interceptor
 *    (core/telemetry-outbox.ts: a run's decisions reach the `agentTelemetry` sink in batches);
 *    when it listens to nothing, core/telemetry-off.ts (no sink call at all);
 *  - TypeScript sources compiled for ES2022, as the package's own `dist` is (tsconfig.json):
 *    the SDK's bundler compiles `.ts` files for ES2017, which turns every object spread and
 *    rest into helper calls (~10 % of a step's workflow code, only when the
 *    workflows are bundled from source — tests, benches, `tsx` workers). Compiled `.js` (the
 *    published package) is not touched.
 */
import type { BundleOptions, WorkerInterceptors } from '@temporalio/worker';

/** The path of the outbox interceptor module (see the module comment). */
export const TELEMETRY_OUTBOX_MODULE = require.resolve('../core/telemetry-outbox');
/** The path of the module that silences a bundle's telemetry (see the module comment). */
export const TELEMETRY_OFF_MODULE = require.resolve('../core/telemetry-off');

/** The telemetry module of a worker whose telemetry listens (`true`) or listens to nothing. */
export function telemetryModule(listening: boolean): string {
  return listening ? TELEMETRY_OUTBOX_MODULE : TELEMETRY_OFF_MODULE;
}

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

/**
 * `interceptors` with the telemetry module among their workflow modules (a worker that
 * bundles): the outbox when `listening` (the default), else the module that sends nothing.
 */
export function withOutbox(interceptors: WorkerInterceptors = {}, listening = true): WorkerInterceptors {
  return {
    ...interceptors,
    workflowModules: [...(interceptors.workflowModules ?? []), telemetryModule(listening)],
  };
}

/**
 * The options of a worker that bundles its own workflows (no `workflowBundle`) and whose
 * telemetry listens to nothing: the outbox module swapped for the one that sends nothing. A
 * bundle built beforehand (`bundleWorkflowCode({ plugins })`) keeps the outbox: the worker
 * that will run it may listen.
 */
export function silencedUnlessListening<
  T extends { workflowBundle?: unknown; interceptors?: WorkerInterceptors },
>(options: T, listening: boolean): T {
  const modules = options.interceptors?.workflowModules;
  if (listening || options.workflowBundle !== undefined || !modules) return options;
  return {
    ...options,
    interceptors: {
      ...options.interceptors,
      workflowModules: modules.map((m) => (m === TELEMETRY_OUTBOX_MODULE ? TELEMETRY_OFF_MODULE : m)),
    },
  };
}

/**
 * What `bundleWorkflowCode` needs besides `workflowsPath` for an agent worker's bundle: with
 * `telemetry: false`, the bundle of a worker whose telemetry listens to nothing (its runs make
 * no sink call; a `telemetry` given to that worker then hears nothing).
 */
export function agentBundleOptions(o: { telemetry?: boolean } = {}) {
  return {
    workflowInterceptorModules: [telemetryModule(o.telemetry ?? true)],
    webpackConfigHook: es2022Sources,
  } as const satisfies Partial<BundleOptions>;
}

/** {@link agentBundleOptions} of a worker whose telemetry listens (the outbox's batches). */
export const AGENT_BUNDLE_OPTIONS = agentBundleOptions();
