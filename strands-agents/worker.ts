/**
 * `agent-loop-guard/strands-agents/worker`: the worker side of the Strands guard, as one
 * Temporal plugin beside `@temporalio/strands-agents`' own `StrandsPlugin`: `AgentLoopGuardPlugin`
 * with `agents` (the user's write activities wrapped by the ledger, the guard's verifying
 * activities, the payload codec agentctl encrypts with, the telemetry sink, the search
 * attributes), under its own name, refusing SDK versions the adapter is not tested with. Nothing of its own beyond that wiring: the model activity stays `StrandsPlugin`'s, and
 * the guard leaves the workflow's cancel signal out of each model call (it does not survive the
 * activity's payload), so the SDK's `OpenAIModel` works as documented. Node code, never imported
 * by workflows.
 *
 * @example
 *   const worker = await Worker.create({
 *     connection, taskQueue, workflowsPath, activities: { readDoc },
 *     plugins: [
 *       new StrandsPlugin({ models: { openai: () => new OpenAIModel({ modelId, apiKey }) } }),
 *       new StrandsGuardPlugin({ ledger, writes: { pay: async (i: { orderId: string }) => charge(i) } }),
 *     ],
 *   });
 */
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
  type FrameworkPluginOptions,
} from '../worker/framework-plugin';
import { TESTED_VERSIONS } from './types';

export { guardActivities, ledgerWrites };
export type { GuardActivitiesOptions, LedgerWritesOptions, WriteActivity, WriteEntry };
export { PayloadCodecMismatchError } from '../codec/mismatch';
export type { ReconcileAnswer } from '../storage/ledger';

/** Options of {@link StrandsGuardPlugin}: every framework plugin's (worker/framework-plugin.ts). */
export type StrandsGuardPluginOptions = FrameworkPluginOptions;

/** The plugin's name, as Temporal lists it. */
export const STRANDS_GUARD_PLUGIN_NAME = 'AgentLoopGuardStrandsAgentsPlugin';

/**
 * The worker side of `guardStrandsAgent` as one plugin: {@link AgentLoopGuardPlugin} with
 * `agents` (the writes, the guard's activities, the codec, the sink, the search attributes) and
 * the SDK's version check.
 */
export class StrandsGuardPlugin extends AgentLoopGuardPlugin {
  override readonly name: string = STRANDS_GUARD_PLUGIN_NAME;

  constructor(o: StrandsGuardPluginOptions) {
    checkStrandsVersions();
    super(agentsPluginOptions(o));
  }
}

/**
 * Refuses versions outside the tested ones (docs/strands-agents.md): the adapter replaces the
 * agent's tools and gates its model, so an untested version could run a tool unguarded.
 *
 * @throws ApplicationFailure `unsupported_version`, naming the package, its version and the tested one
 */
export function checkStrandsVersions(version: (name: string) => string | null = installedVersion): void {
  checkTestedVersions('agent-loop-guard/strands-agents', TESTED_VERSIONS, version);
}
