/**
 * `agent-loop-guard/ai-sdk/worker`: the worker side of the AI SDK guard (docs/ai-sdk.md "On the
 * worker"). The one setup is {@link AgentLoopGuardPlugin} with `aiSdk` (the payload codec, the
 * ledger-wrapped writes and the guard's activities together); `ledgerWrites` and
 * `guardActivities` stay for a worker wired by hand, which then needs the plugin's data
 * converter too. Node code, never imported by workflow code.
 */
export {
  isLedgerWrite,
  LEDGER_WRAPPED,
  ledgerWrites,
  type LedgerWriteActivities,
  type LedgerWritesOptions,
  type WriteActivity,
  type WriteContext,
  type WriteDefinition,
  type WriteEntry,
} from '../worker/ledger-writes';
export {
  guardActivities,
  type GuardActivitiesOptions,
  type PreconditionCheck,
} from '../worker/guard-activities';
export {
  AgentLoopGuardPlugin,
  type AgentLoopGuardPluginOptions,
  type AiSdkWorkerOptions,
} from '../worker/plugin';
export { PayloadCodecMismatchError } from '../codec/mismatch';
export type { ReconcileAnswer } from '../storage/ledger';
