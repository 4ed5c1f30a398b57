/**
 * The worker half every framework adapter shares (agent-loop-guard/openai-agents/worker,
 * agent-loop-guard/strands-agents/worker), as one Temporal plugin beside the framework's own:
 * the user's write activities wrapped by the ledger (`ledgerWrites`, worker/ledger-writes.ts),
 * the activities a resume, a stop, an approval and a spend reservation are verified by
 * (`guardActivities`), the payload codec agentctl encrypts with (codec/load-codec.ts, as
 * worker/plugin.ts sets it), the decisions' outbox interceptor and the `agentTelemetry` sink.
 * An adapter's plugin is this with its name and its tested versions. Node code, never imported
 * by workflows.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { DataConverter } from '@temporalio/common';
import { SimplePlugin } from '@temporalio/plugin';
import type { InjectedSinks, ReplayWorkerOptions, WorkerOptions } from '@temporalio/worker';
import { dataConverterOf, loadPayloadCodec } from '../codec';
import type { AgentSinks } from '../common/telemetry';
import { guardRefusal } from '../core/framework-types';
import type { Ledger } from '../storage/ledger';
import { agentSinks, type AgentTelemetry } from './create-worker';
import { withOutbox } from './bundle-options';
import { guardActivities, type GuardActivitiesOptions } from './guard-activities';
import { ledgerWrites, type LedgerWritesOptions, type WriteActivity } from './ledger-writes';

/** Options of a framework adapter's worker plugin. */
export interface FrameworkGuardPluginOptions extends GuardActivitiesOptions {
  /** The idempotency ledger (`openLedger`) the writes and approvals live in. */
  readonly ledger: Ledger;
  /**
   * The write activities, each registered under its name wrapped by `ledgerWrites` (name them
   * in the guard's `writes`). Register `ledgerWrites`' result yourself instead when the
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

/** The shared worker half (see the module comment), under an adapter's plugin name. */
export class FrameworkGuardPlugin extends SimplePlugin {
  /** The `agentTelemetry` sink the guarded workflows report to (without it the SDK logs an error per call). */
  private readonly sinks: InjectedSinks<AgentSinks>;

  constructor(name: string, o: FrameworkGuardPluginOptions) {
    const { ledger, writes, leaseMs, dataConverter, telemetry, ...verify } = o;
    super({
      name,
      activities: {
        ...ledgerWrites(ledger, writes ?? {}, {
          ...(leaseMs !== undefined ? { leaseMs } : {}),
          ...(verify.operators ? { operators: verify.operators } : {}),
        }),
        ...guardActivities(ledger, verify),
      },
      dataConverter: dataConverter ?? dataConverterOf(loadPayloadCodec(process.env)),
      // The decisions' one sink call per activation (core/telemetry-outbox.ts), as every agent bundle.
      workerInterceptors: withOutbox(),
    });
    this.sinks = agentSinks(telemetry);
  }

  /** The worker: the activities, the codec, the outbox interceptor and the `agentTelemetry` sink. */
  override configureWorker(options: WorkerOptions): WorkerOptions {
    const configured = super.configureWorker(options);
    return { ...configured, sinks: { ...configured.sinks, ...this.sinks } };
  }

  /** A replay worker: the codec, the outbox interceptor and the `agentTelemetry` sink. */
  override configureReplayWorker(options: ReplayWorkerOptions): ReplayWorkerOptions {
    const configured = super.configureReplayWorker(options);
    return { ...configured, sinks: { ...configured.sinks, ...this.sinks } };
  }
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
 * Refuses versions outside `tested` (name → version prefix): an adapter wraps the framework's
 * tools, so an untested version could run a tool unguarded.
 *
 * @throws ApplicationFailure `unsupported_version`, naming the package, its version and the tested one
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
