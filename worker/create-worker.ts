/**
 * Builds the worker: opens the ledger and the demo world, registers the tools and
 * planners, and creates a Temporal `Worker` hosting the workflow and the activities.
 * Shared by `npm run worker`, the demo and the tests, so they all run the same thing.
 */
import { NativeConnection, Worker, type InjectedSinks, type WorkerInterceptors } from '@temporalio/worker';
import type { DataConverter } from '@temporalio/common';
import type { Sinks } from '@temporalio/workflow';
import { dataConverterOf, loadPayloadCodec } from '../codec';
import type { AgentSinks } from '../common/telemetry';
import { createActivities, type ActivityDeps } from '../activities/create-activities';
import { RowCodec } from '../activities/row-codec';
import { openLedger, type Ledger } from '../activities/ledger';
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
  readonly ledgerUrl: string;
  readonly worldUrl: string;
  /** Extra tools beyond the demo set. */
  readonly tools?: readonly AnyTool[];
  /** Replace the demo tools entirely. */
  readonly demoTools?: boolean;
  readonly pollAfterMs?: number;
  readonly leaseMs?: number;
  readonly identity?: string;
  /** MCP servers as an `agent.config.json` value (docs/mcp.md); replaces reading a file. */
  readonly mcpConfig?: AgentConfigInput;
  /** The MCP config file; null reads none. Default: AGENT_CONFIG, else ./agent.config.json if it exists. */
  readonly configPath?: string | null;
}

/** The activities' dependencies plus a close function. */
export interface WorkerDeps extends ActivityDeps {
  readonly world: World;
  readonly ledger: Ledger;
  /** The MCP servers' connections and tools (empty without a config). */
  readonly mcp: McpTools;
  close(): Promise<void>;
}

function sqlitePath(url: string): string | null {
  return url.startsWith('sqlite:') ? worldFile(url) : null;
}

/** Opens the ledger and the world and builds the tool registry. */
export async function openWorkerDeps(o: WorkerDepsOptions): Promise<WorkerDeps> {
  // First: a malformed config or an unreachable MCP server stops the start before anything opens.
  const mcp = await openMcpTools({ config: o.mcpConfig, configPath: o.configPath });
  let ledger: Ledger;
  let world: World;
  try {
    ledger = await openLedger(o.ledgerUrl);
    world = World.open(o.worldUrl);
  } catch (err) {
    await mcp.close();
    throw err;
  }
  const tools = [
    ...(o.demoTools === false ? [] : createDemoTools(world, { pollAfterMs: o.pollAfterMs })),
    ...(o.tools ?? []),
    ...mcp.tools,
  ];
  const ledgerPath = sqlitePath(o.ledgerUrl);
  return {
    registry: new ToolRegistry(tools),
    world,
    ledger,
    ledgerSharesWorldDb: ledgerPath !== null && ledgerPath === world.file,
    planners: { anthropic: createAnthropicPlanner(), openai: createOpenAIPlanner() },
    leaseMs: o.leaseMs,
    identity: o.identity,
    mcp,
    async close() {
      await mcp.close();
      world.close();
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
