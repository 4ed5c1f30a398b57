/**
 * agent-loop-guard as a Temporal plugin (`@temporalio/plugin`): added to a
 * user's own `Worker` and `Client`, the way Temporal ships its AI-SDK and OpenAI-Agents
 * integrations. {@link createAgentWorker} stays for those who want the whole worker built.
 *
 * On a worker the plugin registers
 *  - the `agentRun` workflow: the worker bundles {@link WORKFLOWS_PATH} unless it has a
 *    `workflowsPath` or `workflowBundle` of its own (which must then export `agentRun`:
 *    `export * from 'agent-loop-guard/workflows'`);
 *  - the activities (`createActivities` over the deps), beside the worker's own;
 *  - the data converter, i.e. the payload codec (codec/load-codec.ts), and the row codec of
 *    what moves out of history into the database, sealed with the same codecs;
 *  - the interceptors and sinks (the `agentTelemetry` sink every agent worker needs, and
 *    worker/telemetry.ts's when given);
 *  - the search attributes: checked (and by default registered) before the worker is
 *    created, as {@link createAgentWorker} does.
 *
 * On a client it sets the same data converter, so the client reads the runs' payloads.
 *
 * A worker of framework agents (`@temporalio/ai-sdk`, docs/ai-sdk.md; the OpenAI Agents and
 * Strands plugins are this plugin with their framework's version check and bundler settings)
 * takes the same plugin with `aiSdk` (or its generic name `agents`) instead of (or beside)
 * `deps`: the same data converter — so `agentctl stop`, `resume` and `approve` reach such a
 * worker decoded, as they reach an agentRun worker — plus the ledger-wrapped writes
 * (`ledgerWrites`) and the guard's activities (`guardActivities`), built when the plugin is
 * (a malformed lease or spend limit refuses the plugin). The worker's own workflows are kept
 * (no agentRun is added without `deps`).
 *
 * @example
 *   const deps = await openWorkerDeps({ tools });
 *   const plugin = new AgentLoopGuardPlugin({ deps });
 *   const worker = await Worker.create({ connection, taskQueue: 'agent-runs', plugins: [plugin] });
 *   const client = new Client({ connection: clientConnection, plugins: [plugin] });
 *
 * @example
 *   // an AI SDK agent's worker
 *   const ledger = await openLedger(process.env.LEDGER_URL);
 *   plugins: [new AiSdkPlugin({ modelProvider }), new AgentLoopGuardPlugin({ aiSdk: { ledger, writes: { fileTicket } } })]
 */
import type { DataConverter } from '@temporalio/common';
import { SimplePlugin } from '@temporalio/plugin';
import type { ClientOptions, ClientPlugin } from '@temporalio/client';
import type {
  BundleOptions,
  BundlerPlugin,
  InjectedSinks,
  NativeConnection,
  ReplayWorkerOptions,
  Worker,
  WorkerInterceptors,
  WorkerOptions,
  WorkerPlugin,
} from '@temporalio/worker';
import type { Sinks } from '@temporalio/workflow';
import { dataConverterOf, isLocalDevServer, loadPayloadCodec } from '../codec';
import { loadConnectionOptions } from '../connection/env';
import { createActivities, type ActivityDeps } from '../activities/create-activities';
import { RowCodec } from '../storage/row-codec';
import { silencedUnlessListening, withOutbox } from './bundle-options';
import { agentSinks, WORKFLOWS_PATH, type AgentTelemetry } from './create-worker';
import { ensureSearchAttributes, type SearchAttributesMode } from './search-attributes';
import { isLedgerWrite, ledgerWrites, type WriteEntry } from './ledger-writes';
import { guardActivities, type GuardActivitiesOptions } from './guard-activities';
import type { Ledger } from '../storage/ledger';
import { OperatorRegistry } from '../operators/registry';

/**
 * The worker side of framework agents (AI SDK, OpenAI Agents, Strands) guarded by
 * `agent-loop-guard`: what {@link AgentLoopGuardPlugin} registers for them (`ledgerWrites` and
 * `guardActivities` over one ledger and one operator registry).
 */
export interface AgentsWorkerOptions extends GuardActivitiesOptions {
  /** The ledger (and approval and spend stores) of the writes: `await openLedger(url)`; the caller closes it. */
  readonly ledger: Ledger;
  /**
   * The write activities `guardAgent`'s `writes` name, each run through the ledger: the function,
   * or `{ execute, reconcile?, vendorIdempotent? }` (a write that can be probed is settled without a
   * person after its worker died mid-write). Not also in the worker's own `activities`.
   */
  readonly writes?: Readonly<Record<string, WriteEntry>>;
  /** The ledger lease of one write (default 30 s). */
  readonly leaseMs?: number;
}

/** The AI SDK's name of {@link AgentsWorkerOptions}. */
export type AiSdkWorkerOptions = AgentsWorkerOptions;

/** Options of {@link AgentLoopGuardPlugin}. */
export interface AgentLoopGuardPluginOptions {
  /**
   * What the agentRun activities need (`openWorkerDeps`): with it the worker runs `agentRun`.
   * A plugin with neither `deps` nor `aiSdk`/`agents` configures clients only. The plugin does not close
   * them: the caller does, after the worker.
   */
  readonly deps?: ActivityDeps;
  /** A worker of `@temporalio/ai-sdk` agents (see {@link AgentsWorkerOptions}); the caller closes its ledger. */
  readonly aiSdk?: AgentsWorkerOptions;
  /** The same for any framework's agents (`aiSdk` is its AI SDK name; give one of the two). */
  readonly agents?: AgentsWorkerOptions;
  /**
   * The data converter (payload codec) of the runs, for workers and clients alike; its
   * fields replace the Worker's or Client's own (the SDK's plugin merge). Default: the codec
   * policy of codec/load-codec.ts from the environment, the one agentctl and
   * `createAgentWorker` apply (docs/security.md).
   */
  readonly dataConverter?: DataConverter;
  /**
   * The namespace's search attributes at worker creation (worker/search-attributes.ts):
   * `register` (default) registers missing ones, `check` throws a SearchAttributesError
   * naming them, `skip` does nothing.
   */
  readonly searchAttributes?: SearchAttributesMode;
  /** Where the run's telemetry sink goes (common/telemetry.ts); not given, the runs make no sink call. */
  readonly telemetry?: AgentTelemetry;
  /**
   * Worker interceptors, appended to the worker's (worker/telemetry.ts). Their
   * `workflowModules` reach a worker that bundles (no `workflowBundle`); for a prebuilt bundle
   * pass the plugin to `bundleWorkflowCode({ plugins })`.
   */
  readonly interceptors?: WorkerInterceptors;
  /** Sinks beside `agentTelemetry` (worker/telemetry.ts: the workflow span exporter). */
  readonly sinks?: InjectedSinks<Sinks>;
}

const PLUGIN_OPTIONS: ReadonlySet<string> = new Set([
  'deps',
  'aiSdk',
  'agents',
  'dataConverter',
  'searchAttributes',
  'telemetry',
  'interceptors',
  'sinks',
]);

/** The plugin's name, as Temporal lists it. */
export const AGENT_LOOP_GUARD_PLUGIN_NAME = 'AgentLoopGuardPlugin';

/**
 * The agent-run workflow, its activities, codec, interceptors, sinks and search attributes
 * as one plugin for a user's own Worker and Client (see the module comment). Built on
 * `@temporalio/plugin`'s {@link SimplePlugin}, which does the SDK's merging (activities and
 * interceptors appended, the data converter's fields replaced); the plugin adds what it has
 * no option for (sinks, the row codec, the default workflows) and checks the search
 * attributes before the worker is created, so a namespace without them fails
 * `Worker.create` (SimplePlugin's hooks are synchronous, hence a wrapper, not a subclass).
 * Plugins are experimental in the Temporal SDK; the API may change with it.
 *
 * @throws {TypeError} on an unknown option
 */
export class AgentLoopGuardPlugin implements WorkerPlugin, ClientPlugin, BundlerPlugin {
  /** The plugin's name, as Temporal lists it (a framework's plugin names itself). */
  readonly name: string = AGENT_LOOP_GUARD_PLUGIN_NAME;
  /** The data converter the plugin gives workers and clients. */
  readonly dataConverter: DataConverter;
  private readonly simple: SimplePlugin;
  private readonly deps: ActivityDeps | undefined;
  /** The framework agents' activities (writes and guard), built with the plugin; null without `aiSdk`/`agents`. */
  private readonly agentActivities: Record<string, unknown> | null;
  /** The names of the framework agents' writes (to name a write wrapped twice). */
  private readonly agentWrites: ReadonlySet<string>;
  private readonly searchAttributes: SearchAttributesMode;
  private readonly telemetry: AgentTelemetry | undefined;
  private readonly extraSinks: InjectedSinks<Sinks> | undefined;
  /** Namespaces checked already, per connection (a plugin on connection and worker runs twice). */
  private readonly checked = new WeakMap<NativeConnection, Set<string>>();

  constructor(o: AgentLoopGuardPluginOptions = {}) {
    const unknown = Object.keys(o).filter((k) => !PLUGIN_OPTIONS.has(k));
    if (unknown.length > 0)
      throw new TypeError(
        `AgentLoopGuardPlugin: unknown option(s) ${unknown.join(', ')} (known: ${[...PLUGIN_OPTIONS].join(', ')})`,
      );
    this.dataConverter = o.dataConverter ?? defaultDataConverter();
    this.simple = new SimplePlugin({
      name: AGENT_LOOP_GUARD_PLUGIN_NAME,
      dataConverter: this.dataConverter,
      // The decisions' batches (core/telemetry-outbox.ts) in every bundle; a worker that
      // bundles without `telemetry` gets the module that sends nothing (configureWorker).
      workerInterceptors: withOutbox(o.interceptors),
    });
    this.deps = o.deps;
    if (o.aiSdk !== undefined && o.agents !== undefined)
      throw new TypeError('AgentLoopGuardPlugin: give `aiSdk` or `agents` (the same option), not both');
    const agentsKey = o.agents !== undefined ? 'agents' : 'aiSdk';
    const agents = o.agents ?? o.aiSdk;
    if (agents !== undefined && (agents === null || typeof agents.ledger?.claim !== 'function'))
      throw new TypeError(
        `AgentLoopGuardPlugin: ${agentsKey}.ledger must be an open ledger (${agentsKey}: { ledger: await openLedger(url), writes: { … } })`,
      );
    this.agentActivities = agents ? agentActivitiesOf(agents) : null;
    this.agentWrites = new Set(Object.keys(agents?.writes ?? {}));
    this.searchAttributes = o.searchAttributes ?? 'register';
    this.telemetry = o.telemetry;
    this.extraSinks = o.sinks;
  }

  /** A client: the runs' data converter. */
  configureClient(options: Omit<ClientOptions, 'plugins'>): Omit<ClientOptions, 'plugins'> {
    return this.simple.configureClient(options);
  }

  /**
   * A worker: the search attributes checked (when it has a connection), then the workflow,
   * activities, data converter, interceptors and sinks.
   *
   * @throws {TypeError} when the plugin has neither `deps` nor `aiSdk`/`agents`, or a framework agents' activity
   *   is also among the worker's own (a write wrapped twice)
   * @throws {SearchAttributesError} when the namespace lacks them and may not (or cannot) register them
   */
  async configureWorker(options: WorkerOptions): Promise<WorkerOptions> {
    const deps = this.deps;
    if (!deps && !this.agentActivities)
      throw new TypeError(
        'AgentLoopGuardPlugin: a worker needs `deps` (agentRun: new AgentLoopGuardPlugin({ deps: await openWorkerDeps({ tools }) })) ' +
          'or `aiSdk` (@temporalio/ai-sdk agents: new AgentLoopGuardPlugin({ aiSdk: { ledger, writes } })); without them the plugin configures clients only',
      );
    const agentActivities = this.agentActivities ?? {};
    refuseTwice(agentActivities, this.agentWrites, options.activities);
    if (options.connection) await this.ensureSearchAttributes(options.connection, options.namespace);
    // Without deps the worker runs its own workflows only (an AI SDK agent's).
    const configured = silencedUnlessListening(
      this.simple.configureWorker(deps ? withWorkflows(options) : options),
      this.telemetry !== undefined,
    );
    // What moves out of history into the database (conversations, large payloads) is sealed
    // with the same codecs as history (storage/row-codec.ts), i.e. the merged converter's.
    const rows = new RowCodec(configured.dataConverter?.payloadCodecs ?? []);
    return {
      ...configured,
      activities: {
        ...configured.activities,
        ...agentActivities,
        ...(deps ? createActivities({ rows, ...deps }) : {}),
      },
      sinks: this.sinksOver(configured.sinks),
    };
  }

  /** A replay worker: the workflow, data converter, interceptors and sinks. */
  configureReplayWorker(options: ReplayWorkerOptions): ReplayWorkerOptions {
    const configured = this.simple.configureReplayWorker(
      this.deps || !this.agentActivities ? withWorkflows(options) : options,
    );
    return { ...configured, sinks: this.sinksOver(configured.sinks) };
  }

  /** A worker created without a connection (the SDK's default one) is checked before it polls. */
  async runWorker(worker: Worker, next: (w: Worker) => Promise<void>): Promise<void> {
    const connection = worker.connection;
    if (connection) await this.ensureSearchAttributes(connection, worker.options.namespace);
    return next(worker);
  }

  /** `bundleWorkflowCode({ workflowsPath, plugins })`: the interceptors' workflow modules. */
  configureBundler(options: BundleOptions): BundleOptions {
    return this.simple.configureBundler(options);
  }

  private sinksOver(sinks: InjectedSinks<Sinks> | undefined): InjectedSinks<Sinks> {
    return { ...sinks, ...this.extraSinks, ...agentSinks(this.telemetry) };
  }

  private async ensureSearchAttributes(connection: NativeConnection, namespace = 'default'): Promise<void> {
    if (this.searchAttributes === 'skip') return;
    const done = this.checked.get(connection) ?? new Set<string>();
    if (done.has(namespace)) return;
    await ensureSearchAttributes(connection, namespace, { register: this.searchAttributes === 'register' });
    done.add(namespace);
    this.checked.set(connection, done);
  }
}

/**
 * The activities of framework agents: the ledger-wrapped writes and the guard's, over one
 * operator registry (the writes' approvals and the resumes' operators).
 *
 * @throws {TypeError} on a malformed lease ({@link ledgerWrites})
 * @throws {SpendLimitsInvalidError} on malformed spend limits ({@link guardActivities})
 */
function agentActivitiesOf(o: AgentsWorkerOptions): Record<string, unknown> {
  const { ledger, writes = {}, leaseMs, ...verify } = o;
  const operators = verify.operators ?? OperatorRegistry.fromEnv();
  return {
    ...ledgerWrites(ledger, writes, { operators, ...(leaseMs !== undefined ? { leaseMs } : {}) }),
    ...guardActivities(ledger, { ...verify, operators }),
  };
}

/** One the worker registers itself too would be wrapped twice or shadowed: refused, naming it. */
function refuseTwice(
  activities: Record<string, unknown>,
  writes: ReadonlySet<string>,
  own: WorkerOptions['activities'],
): void {
  const ownActivities = (own ?? {}) as Record<string, unknown>;
  for (const name of Object.keys(activities)) {
    if (!(name in ownActivities)) continue;
    const why = isLedgerWrite(ownActivities[name])
      ? `it is wrapped by ledgerWrites there and by the plugin's writes: wrap each write once`
      : `the plugin registers it (${writes.has(name) ? 'one of its writes' : 'a guard activity'})`;
    throw new TypeError(
      `AgentLoopGuardPlugin: activity ${name} is also in the worker's own activities — ${why}; remove it from activities`,
    );
  }
}

/**
 * The codec policy of codec/load-codec.ts from the environment, as `npm run worker` and agentctl
 * apply it: when the environment's Temporal connection (TEMPORAL_ADDRESS, default
 * localhost:7233, no TLS or API key) is a local dev server, a missing default key file is
 * created (and said on stderr), so a worker started before any agentctl on a fresh machine works
 * and agentctl then finds the same key; anywhere else a missing key throws CodecConfigError
 * naming the fix.
 */
function defaultDataConverter(): DataConverter {
  let local = false;
  try {
    local = isLocalDevServer(loadConnectionOptions(process.env).connectionOptions);
  } catch {
    // A malformed connection environment is the connection's to report, not the codec's.
  }
  const loaded = loadPayloadCodec(process.env, { createKeyFile: local });
  if (loaded.createdKeyFile)
    process.stderr.write(
      `agent-loop-guard: created the payload encryption key file ${loaded.createdKeyFile} (mode 0600; no AGENT_CODEC_KEYS ` +
        'or AGENT_CODEC_KEY_FILE set, local dev server). agentctl and clients without those variables use it.\n',
    );
  return dataConverterOf(loaded);
}

/** The worker's own workflows when it has some, else the agent-run workflow's module. */
function withWorkflows<T extends Pick<WorkerOptions, 'workflowsPath' | 'workflowBundle'>>(options: T): T {
  return options.workflowsPath !== undefined || options.workflowBundle !== undefined
    ? options
    : { ...options, workflowsPath: WORKFLOWS_PATH };
}
