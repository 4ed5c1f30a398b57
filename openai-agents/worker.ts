/**
 * `agent-loop-guard/openai-agents/worker`: the worker side of the OpenAI Agents
 * guard, as one Temporal plugin beside `@temporalio/openai-agents`'s own: the user's write
 * activities wrapped by the ledger (`ledgerWrites`, worker/ledger-writes.ts, the AI SDK path's too), the
 * activities a resume, a stop and an approval are verified by (`guardActivities`), and the
 * payload codec agentctl encrypts with (codec/load-codec.ts, as worker/plugin.ts sets it). It
 * refuses SDK versions the adapter is not tested with. Node code, never imported by workflows.
 *
 * @example
 *   const worker = await Worker.create({
 *     connection, taskQueue, workflowsPath,
 *     plugins: [
 *       new OpenAIAgentsPlugin({ modelProvider: new OpenAIProvider() }),
 *       new OpenAIAgentsGuardPlugin({ ledger, writes: { pay: async (i: { orderId: string }) => charge(i) } }),
 *     ],
 *   });
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { DataConverter } from '@temporalio/common';
import { SimplePlugin } from '@temporalio/plugin';
import type { BundleOptions, InjectedSinks, ReplayWorkerOptions, WorkerOptions } from '@temporalio/worker';
import { dataConverterOf, loadPayloadCodec } from '../codec';
import type { AgentSinks } from '../common/telemetry';
import { agentSinks, type AgentTelemetry } from '../worker/create-worker';
import { silencedUnlessListening, withOutbox } from '../worker/bundle-options';
import type { Ledger } from '../storage/ledger';
import { ledgerWrites, type LedgerWritesOptions, type WriteActivity } from '../worker/ledger-writes';
import { guardActivities, type GuardActivitiesOptions } from '../worker/guard-activities';
import { openAIGuardError, TESTED_VERSIONS } from './types';

export { guardActivities, ledgerWrites };
export type { GuardActivitiesOptions, LedgerWritesOptions, WriteActivity };

/** Options of {@link OpenAIAgentsGuardPlugin}. */
export interface OpenAIAgentsGuardPluginOptions extends GuardActivitiesOptions {
  /** The idempotency ledger (`openLedger`) the writes and approvals live in. */
  readonly ledger: Ledger;
  /**
   * The write activities, each registered under its name wrapped by `ledgerWrites` (name them
   * in `guardOpenAIAgent`'s `writes`). Register `ledgerWrites`' result yourself instead when the
   * activity does more around the write.
   */
  readonly writes?: Readonly<Record<string, WriteActivity>>;
  /** The ledger lease of one write (default 30 s). */
  readonly leaseMs?: LedgerWritesOptions['leaseMs'];
  /** The payload codec of the runs (default: codec/load-codec.ts's policy from the environment, agentctl's). */
  readonly dataConverter?: DataConverter;
  /** Where the runs' decisions and ends go (the `agentTelemetry` sink; default: nowhere). */
  readonly telemetry?: AgentTelemetry;
}

/** The plugin's name, as Temporal lists it. */
export const OPENAI_AGENTS_GUARD_PLUGIN_NAME = 'AgentLoopGuardOpenAIAgentsPlugin';

/** The worker side of `guardOpenAIAgent` as one plugin (see the module comment). */
export class OpenAIAgentsGuardPlugin extends SimplePlugin {
  /** The `agentTelemetry` sink the guarded workflows report to (without it the SDK logs an error per call). */
  private readonly sinks: InjectedSinks<AgentSinks>;
  /** Whether `telemetry` was given (else a worker that bundles makes no sink call). */
  private readonly listening: boolean;

  constructor(o: OpenAIAgentsGuardPluginOptions) {
    checkOpenAIAgentsVersions();
    const { ledger, writes, leaseMs, dataConverter, telemetry, ...verify } = o;
    super({
      name: OPENAI_AGENTS_GUARD_PLUGIN_NAME,
      activities: {
        ...ledgerWrites(ledger, writes ?? {}, {
          ...(leaseMs !== undefined ? { leaseMs } : {}),
          ...(verify.operators ? { operators: verify.operators } : {}),
        }),
        ...guardActivities(ledger, verify),
      },
      dataConverter: dataConverter ?? dataConverterOf(loadPayloadCodec(process.env)),
      // The decisions' batches (core/telemetry-outbox.ts) in every bundle; a worker that
      // bundles without `telemetry` gets the module that sends nothing (configureWorker).
      workerInterceptors: withOutbox(),
    });
    this.sinks = agentSinks(telemetry);
    this.listening = telemetry !== undefined;
  }

  /** The worker: the activities, the codec, the outbox interceptor and the `agentTelemetry` sink. */
  override configureWorker(options: WorkerOptions): WorkerOptions {
    const configured = silencedUnlessListening(super.configureWorker(options), this.listening);
    return { ...configured, sinks: { ...configured.sinks, ...this.sinks } };
  }

  /** A replay worker: the codec, the outbox interceptor and the `agentTelemetry` sink. */
  override configureReplayWorker(options: ReplayWorkerOptions): ReplayWorkerOptions {
    const configured = super.configureReplayWorker(options);
    return { ...configured, sinks: { ...configured.sinks, ...this.sinks } };
  }

  /**
   * The workflow bundle: `@openai/agents-core` resolved to its one CommonJS build. Workflow code
   * that imports it as ESM (`import { Agent }`) would otherwise get its ESM build beside the
   * CommonJS one `@temporalio/openai-agents` requires: two copies of every class (an `Agent` or
   * a `RunState` of one is not an instance of the other's) and a lazily loaded chunk the
   * workflow sandbox cannot load ("Automatic publicPath is not supported").
   */
  override configureBundler(options: BundleOptions): BundleOptions {
    const base = super.configureBundler(options);
    const hook = base.webpackConfigHook;
    const core = require.resolve('@openai/agents-core');
    return {
      ...base,
      webpackConfigHook: (config) => {
        const cfg = hook ? hook(config) : config;
        const alias = cfg.resolve?.alias;
        return {
          ...cfg,
          resolve: {
            ...cfg.resolve,
            alias: {
              ...(alias && !Array.isArray(alias) ? alias : {}),
              '@openai/agents-core$': core,
            },
          },
        };
      },
    };
  }
}

/** The installed version of a package (its package.json beside its resolved entry), or null. */
function installedVersion(name: string): string | null {
  let dir: string;
  try {
    dir = dirname(require.resolve(name));
  } catch {
    return null;
  }
  for (let i = 0; i < 5; i++, dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (!existsSync(file)) continue;
    const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
    if (pkg.name === name) return pkg.version ?? null;
  }
  return null;
}

/**
 * Refuses SDK versions outside the tested ones (docs/openai-agents.md): the integration is
 * pre-release and the adapter wraps its tools, so an untested version could run a tool unguarded.
 *
 * @throws ApplicationFailure `unsupported_version`, naming the package, its version and the tested one
 */
export function checkOpenAIAgentsVersions(version: (name: string) => string | null = installedVersion): void {
  for (const [name, prefix] of Object.entries(TESTED_VERSIONS)) {
    const v = version(name);
    if (v === null)
      throw openAIGuardError('unsupported_version', `${name} is not installed: install ${name}@${prefix}x`);
    if (!v.startsWith(prefix))
      throw openAIGuardError(
        'unsupported_version',
        `${name} ${v} is not a version agent-loop-guard/openai-agents is tested with (${prefix}x): install ${name}@${prefix}x`,
      );
  }
}
