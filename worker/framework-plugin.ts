/**
 * What a framework's guard plugin (`OpenAIAgentsGuardPlugin`, `StrandsGuardPlugin`) adds to
 * {@link AgentLoopGuardPlugin} and nothing else: its options as the plugin's `agents`, the check
 * that the installed SDK is one its adapter is tested with, and a module pinned to one build in
 * the workflow bundle. The plugin itself (writes, guard activities, codec, sink, search
 * attributes, a write wrapped twice refused) is worker/plugin.ts's, once for every engine.
 * Node code.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { DataConverter } from '@temporalio/common';
import type { BundleOptions } from '@temporalio/worker';
import { guardRefusal } from '../core/framework-types';
import type { AgentTelemetry } from './create-worker';
import type { AgentLoopGuardPluginOptions, AgentsWorkerOptions } from './plugin';
import type { SearchAttributesMode } from './search-attributes';

/** Options of a framework's guard plugin: the agents' worker side plus the plugin-wide settings. */
export interface FrameworkPluginOptions extends AgentsWorkerOptions {
  /** The payload codec of the runs (default: codec/load-codec.ts's policy from the environment, agentctl's). */
  readonly dataConverter?: DataConverter;
  /** Where the runs' decisions and ends go (the `agentTelemetry` sink; default: nowhere). */
  readonly telemetry?: AgentTelemetry;
  /** The namespace's search attributes at worker creation (default `register`, as every agent worker). */
  readonly searchAttributes?: SearchAttributesMode;
}

/** A framework plugin's options as {@link AgentLoopGuardPlugin}'s. */
export function agentsPluginOptions(o: FrameworkPluginOptions): AgentLoopGuardPluginOptions {
  const { dataConverter, telemetry, searchAttributes, ...agents } = o;
  return {
    agents,
    ...(dataConverter ? { dataConverter } : {}),
    ...(telemetry ? { telemetry } : {}),
    ...(searchAttributes ? { searchAttributes } : {}),
  };
}

/** The installed version of a package (its package.json beside its resolved entry), or null. */
export function installedVersion(name: string): string | null {
  let dir: string;
  try {
    dir = dirname(require.resolve(name));
  } catch {
    return null;
  }
  for (let i = 0; i < 6; i++, dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (!existsSync(file)) continue;
    const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
    if (pkg.name === name) return pkg.version ?? null;
  }
  return null;
}

/**
 * Refuses a package outside the versions `adapter` is tested with (`tested`: name → version
 * prefix): an adapter wraps its framework's tools, so an untested version could run a tool
 * unguarded.
 *
 * @throws ApplicationFailure `unsupported_version`, naming the package, its version and the fix
 */
export function checkTestedVersions(
  adapter: string,
  tested: Readonly<Record<string, string>>,
  version: (name: string) => string | null = installedVersion,
): void {
  for (const [name, prefix] of Object.entries(tested)) {
    const v = version(name);
    if (v === null)
      throw guardRefusal('unsupported_version', `${name} is not installed: install ${name}@${prefix}x`);
    if (!v.startsWith(prefix))
      throw guardRefusal(
        'unsupported_version',
        `${name} ${v} is not a version ${adapter} is tested with (${prefix}x): install ${name}@${prefix}x`,
      );
  }
}

/**
 * The bundle with `module` resolved to the one build Node's `require` finds: workflow code that
 * imports a dual package as ESM would otherwise get its ESM build beside the CommonJS one an
 * integration requires (two copies of every class; lazily loaded chunks the sandbox cannot load).
 */
export function withModuleAlias(base: BundleOptions, module: string): BundleOptions {
  const hook = base.webpackConfigHook;
  const resolved = require.resolve(module);
  return {
    ...base,
    webpackConfigHook: (config) => {
      const cfg = hook ? hook(config) : config;
      const alias = cfg.resolve?.alias;
      return {
        ...cfg,
        resolve: {
          ...cfg.resolve,
          alias: { ...(alias && !Array.isArray(alias) ? alias : {}), [`${module}$`]: resolved },
        },
      };
    },
  };
}
