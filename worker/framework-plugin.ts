/**
 * What a framework's guard plugin adds to {@link AgentLoopGuardPlugin} and nothing else: the
 * check that the installed SDK is one its adapter is tested with, and a module pinned to one
 * build in the workflow bundle. The plugin itself (writes, guard activities, codec, sink,
 * search attributes) is worker/plugin.ts's, once for every framework. Node code.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { BundleOptions } from '@temporalio/worker';

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
 * @throws what `refuse` builds, with a message naming the package, its version and the fix
 */
export function checkTestedVersions(
  adapter: string,
  tested: Readonly<Record<string, string>>,
  version: (name: string) => string | null,
  refuse: (message: string) => Error,
): void {
  for (const [name, prefix] of Object.entries(tested)) {
    const v = version(name);
    if (v === null) throw refuse(`${name} is not installed: install ${name}@${prefix}x`);
    if (!v.startsWith(prefix))
      throw refuse(
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
