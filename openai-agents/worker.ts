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
import type { BundleOptions } from '@temporalio/worker';
import {
  ledgerWrites,
  type LedgerWritesOptions,
  type WriteActivity,
  type WriteEntry,
} from '../worker/ledger-writes';
import { guardActivities, type GuardActivitiesOptions } from '../worker/guard-activities';
import { AgentLoopGuardPlugin } from '../worker/plugin';
import {
  agentsPluginOptions,
  checkTestedVersions,
  installedVersion,
  withModuleAlias,
  type FrameworkPluginOptions,
} from '../worker/framework-plugin';
import { TESTED_VERSIONS } from './types';

export { guardActivities, ledgerWrites };
export type { GuardActivitiesOptions, LedgerWritesOptions, WriteActivity, WriteEntry };

/**
 * Options of {@link OpenAIAgentsGuardPlugin}: every framework plugin's (worker/framework-plugin.ts):
 * `ledger`, `writes` (the function, or `{ execute, reconcile?, vendorIdempotent? }`: a write that
 * can be probed is settled without a person after its worker died mid-write), `leaseMs`,
 * `operators`, `verifyPrecondition`, `spendLimits`, `dataConverter`, `telemetry`, `searchAttributes`.
 */
export type OpenAIAgentsGuardPluginOptions = FrameworkPluginOptions;

/** The plugin's name, as Temporal lists it. */
export const OPENAI_AGENTS_GUARD_PLUGIN_NAME = 'AgentLoopGuardOpenAIAgentsPlugin';

/**
 * The worker side of `guardOpenAIAgent` as one plugin: {@link AgentLoopGuardPlugin} with
 * `agents` (the writes, the guard's activities, the codec, the sink, the search attributes),
 * plus the SDK's version check and its one CommonJS build in the bundle.
 */
export class OpenAIAgentsGuardPlugin extends AgentLoopGuardPlugin {
  override readonly name: string = OPENAI_AGENTS_GUARD_PLUGIN_NAME;

  constructor(o: OpenAIAgentsGuardPluginOptions) {
    checkOpenAIAgentsVersions();
    super(agentsPluginOptions(o));
  }

  /**
   * The workflow bundle: `@openai/agents-core` resolved to its one CommonJS build. Workflow code
   * that imports it as ESM (`import { Agent }`) would otherwise get its ESM build beside the
   * CommonJS one `@temporalio/openai-agents` requires: two copies of every class (an `Agent` or
   * a `RunState` of one is not an instance of the other's) and a lazily loaded chunk the
   * workflow sandbox cannot load ("Automatic publicPath is not supported").
   */
  override configureBundler(options: BundleOptions): BundleOptions {
    return withModuleAlias(super.configureBundler(options), '@openai/agents-core');
  }
}

/**
 * Refuses SDK versions outside the tested ones (docs/openai-agents.md): the integration is
 * pre-release and the adapter wraps its tools, so an untested version could run a tool unguarded.
 *
 * @throws ApplicationFailure `unsupported_version`, naming the package, its version and the tested one
 */
export function checkOpenAIAgentsVersions(version: (name: string) => string | null = installedVersion): void {
  checkTestedVersions('agent-loop-guard/openai-agents', TESTED_VERSIONS, version);
}
