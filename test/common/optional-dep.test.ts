/**
 * The optional packages (common/optional-dep.ts): declared as optional peers, loaded only
 * where they are used, and a clear error naming the package and its install command when one
 * is missing. "Missing" is simulated with a module factory that throws what Node's resolver
 * throws; test/package/pack.test.ts checks the same against the compiled package and Node's
 * own resolver.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  installCommand,
  loadOptional,
  OPTIONAL_DEPENDENCY_MISSING,
  OPTIONAL_PEERS,
  OptionalDependencyError,
  type OptionalPeer,
} from '../../common/optional-dep';
import { NON_RETRYABLE_PLANNER_ERRORS, type PlannerSpec } from '../../common/planner';
import { turnInput } from '../planners/helpers';

interface PackageJson {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
  peerDependenciesMeta: Record<string, { optional?: boolean }>;
}

const pkg = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as PackageJson;

/** What Node's resolver throws for a module that is not installed. */
function notFound(specifier: string): Error {
  return Object.assign(new Error(`Cannot find module '${specifier}'\nRequire stack:\n- here`), {
    code: 'MODULE_NOT_FOUND',
  });
}

/** The modules the MCP SDK is loaded through (its bare name resolves to nothing). */
const MCP_MODULES = [
  '@modelcontextprotocol/sdk/client/index.js',
  '@modelcontextprotocol/sdk/client/stdio.js',
  '@modelcontextprotocol/sdk/client/streamableHttp.js',
  '@modelcontextprotocol/sdk/types.js',
];

/** Makes `names` unloadable for the modules `body` loads (in a fresh module registry). */
async function without<T>(names: readonly OptionalPeer[], body: () => Promise<T>): Promise<T> {
  let result: T | undefined;
  await jest.isolateModulesAsync(async () => {
    const modules = names.flatMap((n) => (n === '@modelcontextprotocol/sdk' ? MCP_MODULES : [n]));
    for (const specifier of modules) {
      jest.doMock(specifier, () => {
        throw notFound(specifier);
      });
    }
    result = await body();
  });
  return result as T;
}

describe('optional packages', () => {
  it('are the optional peers of package.json, devDependencies for the tests, never dependencies', () => {
    expect(pkg.peerDependencies).toEqual(OPTIONAL_PEERS);
    for (const [name, range] of Object.entries(OPTIONAL_PEERS)) {
      expect([name, pkg.peerDependenciesMeta[name]?.optional]).toEqual([name, true]);
      expect([name, pkg.devDependencies[name]]).toEqual([name, range]);
      expect(pkg.dependencies[name]).toBeUndefined();
    }
  });

  it('load when installed', () => {
    const pg = loadOptional<typeof import('pg')>('pg', 'the PostgreSQL ledger');
    expect(typeof pg.Pool).toBe('function');
  });

  it('throw an OptionalDependencyError naming the feature, the package and the install command', async () => {
    const err = await without(['pg'], async () => {
      const { loadOptional: load } = await import('../../common/optional-dep');
      try {
        load('pg', 'the PostgreSQL ledger');
      } catch (e) {
        return e as OptionalDependencyError;
      }
      throw new Error('loaded');
    });
    expect(err.name).toBe('OptionalDependencyError');
    expect(err.code).toBe(OPTIONAL_DEPENDENCY_MISSING);
    expect(err).toMatchObject({ packageName: 'pg', feature: 'the PostgreSQL ledger' });
    expect(err.message).toBe(
      'the PostgreSQL ledger needs the optional package "pg", which is not installed: npm install "pg@^8.23.1"',
    );
    expect((err.cause as { code: string }).code).toBe('MODULE_NOT_FOUND');
  });

  it('name the whole set in the install command when a feature needs several', () => {
    expect(installCommand(['@opentelemetry/core', '@opentelemetry/resources'])).toBe(
      'npm install "@opentelemetry/core@^1.30.1" "@opentelemetry/resources@^1.30.1"',
    );
  });

  it('let other load failures through as they are (a broken install is not a missing one)', async () => {
    await jest.isolateModulesAsync(async () => {
      jest.doMock('pg', () => {
        throw notFound('pg-pool'); // pg is there, one of its own dependencies is not
      });
      const { loadOptional: load } = await import('../../common/optional-dep');
      expect(() => load('pg', 'the PostgreSQL ledger')).toThrow("Cannot find module 'pg-pool'");
    });
  });
});

describe('features behind an optional package', () => {
  it('a postgres:// ledger without pg: a LedgerConnectionError saying what to install, no password', async () => {
    const err = await without(['pg'], async () => {
      const { openLedger } = await import('../../storage/ledger');
      return openLedger('postgres://u:hunter2@127.0.0.1:1/db').then(
        () => new Error('opened'),
        (e: Error) => e,
      );
    });
    expect(err).toMatchObject({ name: 'LedgerConnectionError' });
    expect(err.message).toContain('the PostgreSQL ledger needs the optional package "pg"');
    expect(err.message).toContain('npm install "pg@^8.23.1"');
    expect(err.message).not.toContain('hunter2');
    expect((err.cause as OptionalDependencyError).code).toBe(OPTIONAL_DEPENDENCY_MISSING);
  });

  it('the SQLite ledger needs none of them', async () => {
    await without(Object.keys(OPTIONAL_PEERS) as OptionalPeer[], async () => {
      const { openLedger } = await import('../../storage/ledger');
      const ledger = await openLedger('sqlite::memory:');
      await ledger.close();
    });
  });

  it.each([
    ['openai', 'openai', 'the OpenAI planner'],
    ['anthropic', '@anthropic-ai/sdk', 'the Anthropic planner'],
  ] as const)(
    'the %s planner without its SDK: a non-retryable turn error, and its health says so',
    async (kind, sdk, feature) => {
      const { next, health } = await without([sdk], async () => {
        const planners =
          kind === 'openai'
            ? (await import('../../planners/openai')).createOpenAIPlanner({
                env: { OPENAI_API_KEY: 'k' },
              })
            : (await import('../../planners/anthropic')).createAnthropicPlanner({
                env: { ANTHROPIC_API_KEY: 'k' },
              });
        const spec: PlannerSpec =
          kind === 'openai'
            ? { kind, model: 'gpt-x', maxTokens: 16 }
            : { kind, model: 'claude-x', maxTokens: 16 };
        return {
          next: await planners.next(turnInput(spec, null)).catch((e: Error) => e),
          health: await planners.health?.(spec),
        };
      });
      expect(next).toBeInstanceOf(Error);
      expect((next as Error).name).toBe('OptionalDependencyError');
      expect((next as Error).message).toContain(`${feature} needs the optional package "${sdk}"`);
      expect(NON_RETRYABLE_PLANNER_ERRORS).toContain((next as Error).name);
      expect(health).toContain(`OptionalDependencyError: ${feature} needs the optional package "${sdk}"`);
    },
  );

  it.each([
    ['anthropic', '@ai-sdk/anthropic'],
    ['openai-compatible', '@ai-sdk/openai-compatible'],
    ['openai', 'ai'],
  ] as const)(
    'the AI SDK planner on a %s endpoint without %s: an error naming the package and the command installing both',
    async (provider, missing) => {
      const spec: PlannerSpec = { kind: 'ai-sdk', endpoint: 'e', model: 'm', maxTokens: 16 };
      const pkg = provider === 'openai' ? '@ai-sdk/openai' : missing;
      const { next, health } = await without([missing], async () => {
        // An earlier test's doMock of every peer outlives its isolated registry: the one
        // package this case leaves installed must load for real.
        for (const present of ['ai', pkg].filter((n) => n !== missing)) jest.dontMock(present);
        const { createAiSdkPlanner } = await import('../../planners/ai-sdk');
        const planner = createAiSdkPlanner({
          env: {
            AGENT_MODEL_ENDPOINTS: JSON.stringify({ e: { provider, baseURL: 'http://127.0.0.1:9/v1' } }),
          },
        });
        return {
          next: await planner.next(turnInput(spec, null)).catch((e: Error) => e),
          health: await planner.health?.(spec),
        };
      });
      expect(next).toBeInstanceOf(Error);
      expect(next).toMatchObject({ name: 'OptionalDependencyError', packageName: missing });
      expect((next as Error).message).toContain(
        `the AI SDK planner (endpoint "e", provider ${provider}) needs the optional package "${missing}"`,
      );
      expect((next as OptionalDependencyError).install).toBe(
        `npm install "ai@${OPTIONAL_PEERS.ai}" "${pkg}@${OPTIONAL_PEERS[pkg]}"`,
      );
      expect(NON_RETRYABLE_PLANNER_ERRORS).toContain((next as Error).name);
      expect(health).toContain(`needs the optional package "${missing}"`);
    },
  );

  it('MCP servers without the MCP SDK: an error naming it; no servers need none', async () => {
    const { none, err } = await without(['@modelcontextprotocol/sdk'], async () => {
      const { openMcpTools } = await import('../../tools/mcp');
      const empty = await openMcpTools({ configPath: null });
      const failed = await openMcpTools({
        config: { mcpServers: { notes: { command: process.execPath, args: ['-e', ''] } } },
      }).catch((e: Error) => e);
      return { none: empty.tools, err: failed };
    });
    expect(none).toEqual([]);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).name).toBe('OptionalDependencyError');
    expect((err as Error).message).toContain('needs the optional package "@modelcontextprotocol/sdk"');
  });

  it('OpenTelemetry without its packages: an error naming them all; off needs none', async () => {
    const otel = Object.keys(OPTIONAL_PEERS).filter((n) => n.includes('opentelemetry')) as OptionalPeer[];
    const { off, err } = await without(otel, async () => {
      const { createTelemetry } = await import('../../worker/telemetry');
      const disabled = createTelemetry({});
      let failed: unknown;
      try {
        createTelemetry({ OTEL_TRACES_EXPORTER: 'console' });
      } catch (e) {
        failed = e;
      }
      return { off: disabled.enabled, err: failed as OptionalDependencyError };
    });
    expect(off).toBe(false);
    expect(err.name).toBe('OptionalDependencyError');
    for (const name of otel) expect(err.install).toContain(`"${name}@${OPTIONAL_PEERS[name]}"`);
  });
});
