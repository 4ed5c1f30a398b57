/**
 * The package's optional parts: the heavy libraries a minimal worker does not need (an LLM
 * SDK, the PostgreSQL driver, the MCP client, the OpenTelemetry SDK and exporters). Each is
 * an optional `peerDependency` in package.json (and a devDependency for the repository's own
 * tests), loaded with {@link loadOptional} where it is used and only then. When it is not
 * installed, the error names the package and the command that installs it. README "Install"
 * says which package enables which feature.
 *
 * Nothing imports this from workflow code: loading a package is for activities, the worker
 * and the client.
 */
import { AgentLoopGuardError } from './errors';

/** The optional peers with the version range each must satisfy (= package.json `peerDependencies`). */
export const OPTIONAL_PEERS = Object.freeze({
  '@ai-sdk/anthropic': '^4.0.105',
  '@ai-sdk/openai': '^4.0.118',
  '@ai-sdk/openai-compatible': '^3.0.92',
  '@anthropic-ai/sdk': '^1.14.0',
  // The user's own `@temporalio/openai-agents` agent guarded by `agent-loop-guard/openai-agents`
  // (docs/openai-agents.md): the versions the adapter is tested with (the integration is pre-release).
  '@openai/agents-core': '~0.11.6',
  '@openai/agents-openai': '~0.11.6',
  '@modelcontextprotocol/sdk': '^1.32.2',
  // The user's own `@temporalio/strands-agents` agent guarded by `agent-loop-guard/strands-agents`
  // (docs/strands-agents.md): the versions the adapter is tested with.
  '@strands-agents/sdk': '1.19.0',
  '@opentelemetry/core': '^1.30.1',
  '@opentelemetry/exporter-metrics-otlp-http': '^0.57.2',
  '@opentelemetry/exporter-trace-otlp-http': '^0.57.2',
  '@opentelemetry/resources': '^1.30.1',
  '@opentelemetry/sdk-metrics': '^1.30.1',
  '@opentelemetry/sdk-trace-base': '^1.30.1',
  // The user's own `@temporalio/ai-sdk` agent guarded by `agent-loop-guard/ai-sdk` (docs/ai-sdk.md).
  '@temporalio/ai-sdk': '^1.23.0',
  '@temporalio/interceptors-opentelemetry': '^1.24.0',
  '@temporalio/openai-agents': '1.23.0',
  '@temporalio/strands-agents': '1.23.0',
  // Temporal's test environment, for `agent-loop-guard/testing` (docs/testing.md): an app's devDependency.
  '@temporalio/testing': '^1.24.0',
  ai: '^7.0.173',
  openai: '^6.49.0',
  pg: '^8.23.1',
});

/** The name of an optional peer. */
export type OptionalPeer = keyof typeof OPTIONAL_PEERS;

/** A module of an optional peer: the package itself or one of its subpaths. */
export type OptionalModule = OptionalPeer | `${OptionalPeer}/${string}`;

/** The optional peers that make up one feature, installed together (e.g. the OpenTelemetry set). */
export type OptionalPeerSet = readonly OptionalPeer[];

/** The `error.code` of {@link OptionalDependencyError}. */
export const OPTIONAL_DEPENDENCY_MISSING = 'optional_dependency_missing';

/**
 * A feature was used whose optional package is not installed. The message names the
 * feature, the package and the `npm install` command; nothing was done.
 */
export class OptionalDependencyError extends AgentLoopGuardError {
  /** Stable, for code that tells this error from others. */
  readonly code = OPTIONAL_DEPENDENCY_MISSING;

  /**
   * @param packageName the package that is missing, e.g. `pg`
   * @param feature what needed it, e.g. `the PostgreSQL ledger`
   * @param install the command that installs it (and its companions)
   * @param options standard `ErrorOptions` (`cause`: the resolver's error)
   */
  constructor(
    readonly packageName: OptionalPeer,
    readonly feature: string,
    readonly install: string,
    options?: ErrorOptions,
  ) {
    super(
      `${feature} needs the optional package "${packageName}", which is not installed: ${install}`,
      options,
    );
  }
}

/** The package a module specifier names (`@scope/name/sub` → `@scope/name`). */
function packageOf(specifier: OptionalModule): OptionalPeer {
  const parts = specifier.split('/');
  return (specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]) as OptionalPeer;
}

/** The `npm install` command for `names`, each with its supported range. */
export function installCommand(names: OptionalPeerSet): string {
  return `npm install ${names.map((n) => `"${n}@${OPTIONAL_PEERS[n]}"`).join(' ')}`;
}

/** True when `err` says that `specifier` itself cannot be found (not a module it requires). */
function notFound(err: unknown, specifier: string): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  return (
    e?.code === 'MODULE_NOT_FOUND' && typeof e.message === 'string' && e.message.includes(`'${specifier}'`)
  );
}

function attempt<T>(specifier: OptionalModule, forWhat: string, together: OptionalPeerSet, f: () => T): T {
  try {
    return f();
  } catch (err) {
    if (!notFound(err, specifier)) throw err;
    const name = packageOf(specifier);
    const names = together.includes(name) ? together : [name, ...together];
    throw new OptionalDependencyError(name, forWhat, installCommand(names), { cause: err });
  }
}

/**
 * Loads an optional peer (or one of its subpaths) at the point of use.
 *
 * @example
 *   import type * as Pg from 'pg'; // types only: erased from the compiled code
 *   const { Pool } = loadOptional<typeof Pg>('pg', 'the PostgreSQL ledger');
 * @param specifier the module, e.g. `pg` or `@modelcontextprotocol/sdk/types.js`
 * @param forWhat the feature that needs it, as the error's subject (`the PostgreSQL ledger`)
 * @param together the peers the feature needs as a whole; the install command names them all
 * @throws {OptionalDependencyError} when the package is not installed (other load errors
 *   propagate as they are)
 */
export function loadOptional<T>(
  specifier: OptionalModule,
  forWhat: string,
  together: OptionalPeerSet = [],
): T {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- a lazy load is the point
  return attempt(specifier, forWhat, together, () => require(specifier) as T);
}

/**
 * The file an optional module resolves to, without loading it (a workflow interceptor
 * module the worker bundles, for one).
 *
 * @throws {OptionalDependencyError} when the package is not installed
 */
export function resolveOptional(
  specifier: OptionalModule,
  forWhat: string,
  together: OptionalPeerSet = [],
): string {
  return attempt(specifier, forWhat, together, () => require.resolve(specifier));
}
