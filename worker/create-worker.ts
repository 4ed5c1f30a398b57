/**
 * Builds the worker: opens the ledger, registers the user's tools and the planners, and
 * creates a Temporal `Worker` hosting the workflow and the activities. Shared by users'
 * workers, `npm run worker` (through the demo's deps, demo/deps.ts), the demo and the tests.
 */
import { resolve } from 'node:path';
import { NativeConnection, Worker, type InjectedSinks, type WorkerInterceptors } from '@temporalio/worker';
import type { DataConverter } from '@temporalio/common';
import type { Sinks } from '@temporalio/workflow';
import { dataConverterOf, isLocalDevServer, loadPayloadCodec } from '../codec';
import { loadConnectionOptions } from '../connection/env';
import type { AgentSinks } from '../common/telemetry';
import { createActivities, type ActivityDeps } from '../activities/create-activities';
import { es2022Sources, withOutbox } from './bundle-options';
import { RowCodec } from '../storage/row-codec';
import { DEFAULT_LEDGER_URL, openLedger, type Ledger } from '../storage/ledger';
import type { ProgressSource } from '../activities/progress';
import { createAiSdkPlanner } from '../planners/ai-sdk';
import { createAnthropicPlanner } from '../planners/anthropic';
import { loadModelEndpoints } from '../planners/endpoints';
import { createOpenAIPlanner } from '../planners/openai';
import { finishingTool } from '../tools/finish';
import { ToolRegistry } from '../tools/registry';
import type { AnyTool } from '../tools/define-tool';
import type { ToolStore } from '../tools/store';
import { openMcpTools, type AgentConfigInput, type McpTools } from '../tools/mcp';
import type { WorkerTuning } from './env';
import { ensureSearchAttributes, type SearchAttributesMode } from './search-attributes';

/** Options for {@link openWorkerDeps}. */
export interface WorkerDepsOptions {
  /** The ledger: `sqlite:FILE` (default `sqlite:data/agent.db`) or `postgres://…`. */
  readonly ledgerUrl?: string;
  /** The worker's own tools (README, "Defining a tool"). */
  readonly tools?: readonly AnyTool[];
  /**
   * The worker's progress source (docs/spec.md §7.8). Default: new read results and committed
   * writes of the run (activities/progress).
   */
  readonly progress?: ProgressSource;
  /**
   * The SQL store the tools share through `ctx.tx` (tools/store.ts), when they share one; the
   * worker does not close it. Default: none (tools keep their own stores).
   */
  readonly store?: ToolStore;
  readonly leaseMs?: number;
  readonly identity?: string;
  /** MCP servers as an `agent.config.json` value (docs/mcp.md); replaces reading a file. */
  readonly mcpConfig?: AgentConfigInput;
  /** The MCP config file; null reads none. Default: AGENT_CONFIG, else ./agent.config.json if it exists. */
  readonly configPath?: string | null;
  /**
   * The tool that finishes a run (tools/finish.ts): default the built-in
   * `complete_task`, offered on every run. `finishingTool({ name: 'done' })` renames it; a
   * tool of your own returning `{ terminal: true }` replaces it; `null` registers none (your
   * tools must then finish the run). A tool in `tools` with the same name replaces it too.
   */
  readonly finishingTool?: AnyTool | null;
}

const WORKER_DEPS_OPTIONS: ReadonlySet<string> = new Set([
  'ledgerUrl',
  'tools',
  'progress',
  'store',
  'leaseMs',
  'identity',
  'mcpConfig',
  'configPath',
  'finishingTool',
]);

/** The activities' dependencies plus a close function. */
export interface WorkerDeps extends ActivityDeps {
  readonly ledger: Ledger;
  /** The MCP servers' connections and tools (empty without a config). */
  readonly mcp: McpTools;
  close(): Promise<void>;
}

/** The SQLite file of a `sqlite:` URL; null for any other URL. */
function sqliteFile(url: string): string | null {
  if (!url.startsWith('sqlite:')) return null;
  const file = url.slice('sqlite:'.length);
  return file === ':memory:' ? null : resolve(file);
}

/**
 * Opens what a worker needs: the ledger (with the approvals, conversations and payloads
 * beside it), the user's tools, MCP tools from a config when one is present, the finishing
 * tool (`complete_task` unless {@link WorkerDepsOptions.finishingTool} says otherwise) and the planners.
 * `openWorkerDeps({ tools })` is all a user's worker needs: no tool store and no demo tools
 * (the demo adds its own: demo/deps.ts). An unknown option is a TypeError naming it.
 */
export async function openWorkerDeps(o: WorkerDepsOptions = {}): Promise<WorkerDeps> {
  const unknown = Object.keys(o).filter((k) => !WORKER_DEPS_OPTIONS.has(k));
  if (unknown.length > 0)
    throw new TypeError(
      `openWorkerDeps: unknown option(s) ${unknown.join(', ')} (known: ${[...WORKER_DEPS_OPTIONS].join(', ')})`,
    );
  const ledgerUrl = o.ledgerUrl ?? DEFAULT_LEDGER_URL;
  // The planners read the endpoints on every turn (edits apply without a restart), but a
  // worker whose endpoints are already unusable (an unknown provider, a bad URL, a default key
  // sent elsewhere) does not start: EndpointConfigError names the variable, endpoint and field.
  loadModelEndpoints(process.env);
  // Next: a malformed config or an unreachable MCP server stops the start before anything opens.
  const mcp = await openMcpTools({ config: o.mcpConfig, configPath: o.configPath });
  let ledger: Ledger;
  try {
    ledger = await openLedger(ledgerUrl);
  } catch (err) {
    await mcp.close();
    throw err;
  }
  const store = o.store ?? null;
  const ledgerFile = sqliteFile(ledgerUrl);
  const storeFile = store?.file ? resolve(store.file) : null;
  const own = [...(o.tools ?? []), ...mcp.tools];
  const finish = o.finishingTool === undefined ? finishingTool() : o.finishingTool;
  // A tool of the user's with the finishing tool's name is their own finishing tool.
  const builtIn = finish && !own.some((t) => t.name === finish.name) ? [finish] : [];
  return {
    registry: new ToolRegistry([...own, ...builtIn], { finishing: finish?.name ?? null }),
    store,
    ledger,
    storeSharesLedger: ledgerFile !== null && ledgerFile === storeFile,
    ...(o.progress ? { progress: o.progress } : {}),
    planners: {
      anthropic: createAnthropicPlanner(),
      openai: createOpenAIPlanner(),
      'ai-sdk': createAiSdkPlanner(),
    },
    leaseMs: o.leaseMs,
    identity: o.identity,
    mcp,
    async close() {
      await mcp.close();
      await ledger.close();
    },
  };
}

/** Options for {@link createAgentWorker}. */
export interface AgentWorkerOptions {
  readonly connection: NativeConnection;
  readonly namespace: string;
  readonly taskQueue: string;
  readonly deps: ActivityDeps;
  /** Prebuilt workflow bundle (tests share one to save bundling time). */
  readonly workflowBundle?: { code: string };
  readonly maxConcurrentActivityTaskExecutions?: number;
  /** Cache, slot and poller settings (worker/env.ts readWorkerTuning); unset keys keep the SDK's defaults. */
  readonly tuning?: WorkerTuning;
  /**
   * The namespace's search attributes check before the worker is created
   * (worker/search-attributes.ts): `register` (default) registers missing ones, `check` throws
   * a SearchAttributesError naming them, `skip` does nothing (the caller checked already).
   * On a namespace that has them all it costs one ListSearchAttributes call.
   */
  readonly searchAttributes?: SearchAttributesMode;
  /**
   * Where the run's telemetry sink goes (common/telemetry.ts). Not given: nothing listens, and
   * a bundle the worker builds makes no sink call at all.
   */
  readonly telemetry?: AgentTelemetry;
  /**
   * Worker interceptors (worker/telemetry.ts: OpenTelemetry activity interceptors and the
   * workflow interceptor module). With a prebuilt `workflowBundle` the bundle must already
   * contain `workflowModules` (`bundleWorkflowCode({ workflowInterceptorModules })`).
   */
  readonly interceptors?: WorkerInterceptors;
  /** Sinks beside `agentTelemetry` (worker/telemetry.ts: the workflow span exporter). */
  readonly sinks?: InjectedSinks<Sinks>;
  /**
   * The data converter, i.e. the payload codec (codec/load-codec.ts `dataConverterOf`):
   * every client of these runs must use the same one. Unset: the codec policy of
   * codec/load-codec.ts from the environment (`AGENT_CODEC_KEYS`, `AGENT_CODEC_KEY_FILE`,
   * the default key file, created when the environment names a local dev server, or `AGENT_CODEC=off`) — the same one agentctl and the
   * client API apply, so a worker and a client configured alike read each other's payloads.
   */
  readonly dataConverter?: DataConverter;
}

/**
 * The worker side of the `agentTelemetry` sink: one call per decision, however the workflow
 * sent them (a `decisions` batch is unpacked here).
 */
export type AgentTelemetry = Omit<AgentSinks['agentTelemetry'], 'decisions'>;

const NO_TELEMETRY: AgentTelemetry = {
  decision: () => undefined,
  runEnd: () => undefined,
  turn: () => undefined,
};

/** The sinks registered on every agent worker (a workflow calling an unregistered sink logs errors). */
export function agentSinks(telemetry: AgentTelemetry = NO_TELEMETRY): InjectedSinks<AgentSinks> {
  return {
    agentTelemetry: {
      decision: { fn: (_info, event) => telemetry.decision(event) },
      decisions: {
        fn: (_info, events) => {
          for (const event of events) telemetry.decision(event);
        },
      },
      runEnd: { fn: (_info, event) => telemetry.runEnd(event) },
      turn: { fn: (_info, event) => telemetry.turn(event) },
    },
  };
}

/** The path of the workflows module the worker bundles. */
export const WORKFLOWS_PATH = require.resolve('../workflows');

export { TELEMETRY_OFF_MODULE, TELEMETRY_OUTBOX_MODULE } from './bundle-options';

/** Whether the environment's Temporal connection settings name a local dev server. */
function localServerByEnv(): boolean {
  try {
    const { connectionOptions } = loadConnectionOptions(process.env);
    return isLocalDevServer({ ...connectionOptions, address: connectionOptions.address ?? '' });
  } catch {
    return false;
  }
}

/** Checks the namespace's search attributes (see {@link AgentWorkerOptions.searchAttributes}), then creates the Temporal worker. */
export async function createAgentWorker(o: AgentWorkerOptions): Promise<Worker> {
  const mode = o.searchAttributes ?? 'register';
  if (mode !== 'skip') {
    await ensureSearchAttributes(o.connection, o.namespace, { register: mode === 'register' });
  }
  // Against a local dev server (by the environment's connection settings) a missing default
  // key file is created, as agentctl and `npm run worker` do: a user's first worker starts.
  const dataConverter =
    o.dataConverter ?? dataConverterOf(loadPayloadCodec(process.env, { createKeyFile: localServerByEnv() }));
  // What moves out of history into the database (conversations, large payloads) is sealed
  // with the same codec as history (storage/row-codec.ts).
  const rows = new RowCodec(dataConverter.payloadCodecs ?? []);
  return Worker.create({
    connection: o.connection,
    namespace: o.namespace,
    taskQueue: o.taskQueue,
    // A bundle the worker builds gets the outbox when `telemetry` is given, else the module
    // that sends nothing (worker/bundle-options.ts); a prebuilt one has what it was built with
    // (agentBundleOptions).
    ...(o.workflowBundle
      ? { workflowBundle: o.workflowBundle, ...(o.interceptors ? { interceptors: o.interceptors } : {}) }
      : {
          workflowsPath: WORKFLOWS_PATH,
          bundlerOptions: { webpackConfigHook: es2022Sources },
          interceptors: withOutbox(o.interceptors, o.telemetry !== undefined),
        }),
    activities: createActivities({ rows, ...o.deps }),
    sinks: { ...o.sinks, ...agentSinks(o.telemetry) },
    dataConverter,
    ...o.tuning,
    ...(o.maxConcurrentActivityTaskExecutions
      ? { maxConcurrentActivityTaskExecutions: o.maxConcurrentActivityTaskExecutions }
      : {}),
  });
}
