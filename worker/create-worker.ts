/**
 * Builds the worker: opens the ledger (and, only when asked, the demo world), registers the
 * user's tools and the planners, and creates a Temporal `Worker` hosting the workflow and the
 * activities. Shared by users' workers, `npm run worker`, the demo and the tests.
 */
import { NativeConnection, Worker, type InjectedSinks, type WorkerInterceptors } from '@temporalio/worker';
import type { DataConverter } from '@temporalio/common';
import type { Sinks } from '@temporalio/workflow';
import { dataConverterOf, loadPayloadCodec } from '../codec';
import type { AgentSinks } from '../common/telemetry';
import { createActivities, type ActivityDeps } from '../activities/create-activities';
import { RowCodec } from '../activities/row-codec';
import { DEFAULT_LEDGER_URL, openLedger, type Ledger } from '../activities/ledger';
import type { ProgressSource } from '../activities/progress';
import { createAnthropicPlanner } from '../activities/planners/anthropic';
import { createOpenAIPlanner } from '../activities/planners/openai';
import { createDemoTools } from '../activities/tools/demo/tools';
import { World, worldFile } from '../activities/tools/demo/world';
import { ToolRegistry } from '../activities/tools/registry';
import type { AnyTool } from '../activities/tools/define-tool';
import { openMcpTools, type AgentConfigInput, type McpTools } from '../activities/tools/mcp';
import type { WorkerTuning } from './env';
import { ensureSearchAttributes, type SearchAttributesMode } from './search-attributes';

/** Options for {@link openWorkerDeps}. */
export interface WorkerDepsOptions {
  /** The ledger: `sqlite:FILE` (default `sqlite:data/agent.db`) or `postgres://…`. */
  readonly ledgerUrl?: string;
  /** The worker's own tools (docs/tools.md). */
  readonly tools?: readonly AnyTool[];
  /**
   * The worker's progress source (docs/spec.md §7.8). Default: new read results and committed
   * writes of the run (activities/progress); with the demo, the demo world's version.
   */
  readonly progress?: ProgressSource;
  /**
   * Host the demo: open its world database and offer its tools. Off unless asked for (the
   * demo, `npm run worker` and the tests ask). `worldUrl` alone also asks for it.
   */
  readonly demo?: boolean | { readonly worldUrl?: string; readonly tools?: boolean };
  /** The demo world's SQLite URL (implies `demo`); default: the ledger's file when it is SQLite. */
  readonly worldUrl?: string;
  /** With the demo: false hosts its world without its tools. */
  readonly demoTools?: boolean;
  readonly pollAfterMs?: number;
  readonly leaseMs?: number;
  readonly identity?: string;
  /** MCP servers as an `agent.config.json` value (docs/mcp.md); replaces reading a file. */
  readonly mcpConfig?: AgentConfigInput;
  /** The MCP config file; null reads none. Default: AGENT_CONFIG, else ./agent.config.json if it exists. */
  readonly configPath?: string | null;
}

const WORKER_DEPS_OPTIONS: ReadonlySet<string> = new Set([
  'ledgerUrl',
  'tools',
  'progress',
  'demo',
  'worldUrl',
  'demoTools',
  'pollAfterMs',
  'leaseMs',
  'identity',
  'mcpConfig',
  'configPath',
]);

/** The activities' dependencies plus a close function. */
export interface WorkerDeps extends ActivityDeps {
  /** The demo world, when the worker hosts the demo; null otherwise. */
  readonly world: World | null;
  readonly ledger: Ledger;
  /** The MCP servers' connections and tools (empty without a config). */
  readonly mcp: McpTools;
  close(): Promise<void>;
}

/** A worker's deps when it hosts the demo: its world is open. */
export type DemoWorkerDeps = WorkerDeps & { readonly world: World };

function sqlitePath(url: string): string | null {
  return url.startsWith('sqlite:') ? worldFile(url) : null;
}

/** Where the demo world lives, when the options ask for the demo; null when they do not. */
function demoWorldUrl(o: WorkerDepsOptions, ledgerUrl: string): string | null {
  const demo = o.demo ?? (o.worldUrl !== undefined ? true : false);
  if (demo === false) return null;
  const given = typeof demo === 'object' ? demo.worldUrl : undefined;
  return given ?? o.worldUrl ?? (ledgerUrl.startsWith('sqlite:') ? ledgerUrl : 'sqlite:data/world.db');
}

/**
 * Opens what a worker needs: the ledger (with the approvals, conversations and payloads
 * beside it), the user's tools, MCP tools from a config when one is present, and the planners.
 * `openWorkerDeps({ tools })` is all a user's worker needs: no world database and no demo
 * tools unless `demo` asks for them. An unknown option is a TypeError naming it.
 */
export async function openWorkerDeps(
  o: WorkerDepsOptions & ({ readonly worldUrl: string } | { readonly demo: true | object }),
): Promise<DemoWorkerDeps>;
export async function openWorkerDeps(o?: WorkerDepsOptions): Promise<WorkerDeps>;
export async function openWorkerDeps(o: WorkerDepsOptions = {}): Promise<WorkerDeps> {
  const unknown = Object.keys(o).filter((k) => !WORKER_DEPS_OPTIONS.has(k));
  if (unknown.length > 0)
    throw new TypeError(
      `openWorkerDeps: unknown option(s) ${unknown.join(', ')} (known: ${[...WORKER_DEPS_OPTIONS].join(', ')})`,
    );
  const ledgerUrl = o.ledgerUrl ?? DEFAULT_LEDGER_URL;
  const worldUrl = demoWorldUrl(o, ledgerUrl);
  const demoTools =
    worldUrl !== null && o.demoTools !== false && !(typeof o.demo === 'object' && o.demo.tools === false);
  // First: a malformed config or an unreachable MCP server stops the start before anything opens.
  const mcp = await openMcpTools({ config: o.mcpConfig, configPath: o.configPath });
  let ledger: Ledger;
  let world: World | null = null;
  try {
    ledger = await openLedger(ledgerUrl);
    if (worldUrl !== null) world = World.open(worldUrl);
  } catch (err) {
    await mcp.close();
    throw err;
  }
  const tools = [
    ...(world && demoTools ? createDemoTools(world, { pollAfterMs: o.pollAfterMs }) : []),
    ...(o.tools ?? []),
    ...mcp.tools,
  ];
  const ledgerPath = sqlitePath(ledgerUrl);
  return {
    registry: new ToolRegistry(tools),
    world,
    ledger,
    ledgerSharesWorldDb: world !== null && ledgerPath !== null && ledgerPath === world.file,
    ...(o.progress ? { progress: o.progress } : {}),
    planners: { anthropic: createAnthropicPlanner(), openai: createOpenAIPlanner() },
    leaseMs: o.leaseMs,
    identity: o.identity,
    mcp,
    async close() {
      await mcp.close();
      world?.close();
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
  /** Where the run's telemetry sink goes (common/telemetry.ts); a no-op when not given. */
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
   * the local `data/codec-keys.json`, or `AGENT_CODEC=off`) — the same one agentctl and the
   * client API apply, so a worker and a client configured alike read each other's payloads.
   */
  readonly dataConverter?: DataConverter;
}

/** The worker side of the `agentTelemetry` sink. */
export type AgentTelemetry = AgentSinks['agentTelemetry'];

const NO_TELEMETRY: AgentTelemetry = { decision: () => undefined, runEnd: () => undefined };

/** The sinks registered on every agent worker (a workflow calling an unregistered sink logs errors). */
export function agentSinks(telemetry: AgentTelemetry = NO_TELEMETRY): InjectedSinks<AgentSinks> {
  return {
    agentTelemetry: {
      decision: { fn: (_info, event) => telemetry.decision(event) },
      runEnd: { fn: (_info, event) => telemetry.runEnd(event) },
    },
  };
}

/** The path of the workflows module the worker bundles. */
export const WORKFLOWS_PATH = require.resolve('../workflows');

/** Checks the namespace's search attributes (see {@link AgentWorkerOptions.searchAttributes}), then creates the Temporal worker. */
export async function createAgentWorker(o: AgentWorkerOptions): Promise<Worker> {
  const mode = o.searchAttributes ?? 'register';
  if (mode !== 'skip') {
    await ensureSearchAttributes(o.connection, o.namespace, { register: mode === 'register' });
  }
  const dataConverter = o.dataConverter ?? dataConverterOf(loadPayloadCodec(process.env));
  // What moves out of history into the database (conversations, large payloads) is sealed
  // with the same codec as history (activities/row-codec.ts).
  const rows = new RowCodec(dataConverter.payloadCodecs ?? []);
  return Worker.create({
    connection: o.connection,
    namespace: o.namespace,
    taskQueue: o.taskQueue,
    ...(o.workflowBundle ? { workflowBundle: o.workflowBundle } : { workflowsPath: WORKFLOWS_PATH }),
    activities: createActivities({ rows, ...o.deps }),
    sinks: { ...o.sinks, ...agentSinks(o.telemetry) },
    ...(o.interceptors ? { interceptors: o.interceptors } : {}),
    dataConverter,
    ...o.tuning,
    ...(o.maxConcurrentActivityTaskExecutions
      ? { maxConcurrentActivityTaskExecutions: o.maxConcurrentActivityTaskExecutions }
      : {}),
  });
}
