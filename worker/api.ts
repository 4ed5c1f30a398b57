/**
 * `agent-loop-guard/worker`: a worker built piece by piece. The root entry has the usual
 * setup (`openWorkerDeps`, `createAgentWorker`, `AgentLoopGuardPlugin`, `openLedger`, the
 * connection); this subpath has those too, and what a worker wired by hand or configured beyond
 * the defaults needs:
 *
 * - **Ready-made tools:** the finishing tool, the shell tool and its workspace reports, the
 *   registry, the error classification and how a tool's args are shown.
 * - **MCP tools** (docs/mcp.md): tools from MCP servers, named `mcp__SERVER__TOOL`.
 * - **Hosting:** the activities, the sinks, the workflows path, the worker's environment and
 *   defaults, the search attributes, the plugin's name.
 * - **Planners:** the built-in planners, the model endpoints, and the planner interface a planner
 *   of your own implements.
 * - **Stores:** the ledger and the tenant spend limits (docs/spec.md §7.10).
 * - **Security** (docs/security.md): the payload codec and its server, the operators file, keys
 *   and signed requests.
 *
 * Node code: never imported by workflow code.
 *
 * @module agent-loop-guard/worker
 */

// ── The usual setup (also on the root entry) ──
export { createAgentWorker, openWorkerDeps } from './create-worker';
export type { AgentWorkerOptions, WorkerDeps, WorkerDepsOptions } from './create-worker';
export { AgentLoopGuardPlugin } from './plugin';
export type { AgentLoopGuardPluginOptions, AiSdkWorkerOptions } from './plugin';
export { loadConnectionOptions } from './env';
export { connectToTemporal } from './connect-temporal';
export type { ConnectToTemporalOptions } from './connect-temporal';

// ── Ready-made tools ──
export { toResult } from '../tools/define-tool';
export { checkArgDisplay, displayHintsOf, formatArg } from '../tools/arg-display';
export type { ArgDisplay, ArgDisplayHints } from '../tools/arg-display';
export { classifyError, DEFAULT_RETRY_AFTER_MS } from '../tools/classify';
export { ToolRegistry } from '../tools/registry';
export type { NormalizedProposal } from '../tools/registry';
export { FINISHING_TOOL, finishingTool } from '../tools/finish';
export type { FinishingToolOptions } from '../tools/finish';
export { gitWorkspace, runCommand, shellTool, workspaceReport } from '../tools/shell';
export type { ShellOutput, ShellToolOptions, WorkspaceFingerprinter, WorkspaceState } from '../tools/shell';
export type { Tx } from '../tools/tx';

// ── MCP tools ──
export {
  DEFAULT_CONFIG_FILE,
  McpConfigError,
  McpToolsError,
  McpUnavailableError,
  mcpToolName,
  openMcpTools,
  parseAgentConfig,
  readAgentConfig,
} from '../tools/mcp';
export type {
  AgentConfig,
  AgentConfigInput,
  McpServerConfig,
  McpTools,
  McpToolsOptions,
  ToolOverride,
} from '../tools/mcp';

// ── Hosting ──
export { agentSinks, TELEMETRY_OFF_MODULE, TELEMETRY_OUTBOX_MODULE, WORKFLOWS_PATH } from './create-worker';
export { agentBundleOptions } from './bundle-options';
export type { AgentTelemetry } from './create-worker';
export type { AgentSinks, DecisionEvent, RunEndEvent } from '../common/telemetry';
export { AGENT_LOOP_GUARD_PLUGIN_NAME } from './plugin';
export { createActivities } from '../activities/create-activities';
export type { Activities, ActivityDeps } from '../activities/create-activities';
export {
  DEFAULT_NAMESPACE,
  DEFAULT_TEMPORAL_ADDRESS,
  DEFAULT_TEMPORAL_WAIT_S,
  readTemporalWaitMs,
  readWorkerEnv,
} from './env';
export type { ConnectionSettings, WorkerEnv } from './env';
export { DEFAULT_TASK_QUEUE } from '../common/contracts';
export { ensureSearchAttributes, SearchAttributesError } from './search-attributes';
export type { SearchAttributesMode } from './search-attributes';
export { SEARCH_ATTRIBUTES, searchAttributeCliArgs } from '../common/search-attributes';

// ── Planners ──
export { createAnthropicPlanner } from '../planners/anthropic';
export { createOpenAIPlanner } from '../planners/openai';
export { createAiSdkPlanner, type AiSdkPlannerOptions } from '../planners/ai-sdk';
export { loadModelEndpoints } from '../planners/endpoints';
export type {
  Observation,
  Planner,
  PlannerInput,
  PlannerOutput,
  PlannerSpec,
  PlannerTurn,
  ToolDescriptor,
} from '../common/planner';

// ── Stores: the ledger and the tenant spend limits ──
export { DEFAULT_LEDGER_URL, LedgerError, openLedger } from '../storage/ledger';
export type { Ledger, LedgerRecord, OpenLedgerOptions, ReconcileAnswer } from '../storage/ledger';
export {
  SPEND_LIMITS_ENV,
  SpendError,
  SpendLimitsInvalidError,
  SpendStore,
  spendLimitsFromEnv,
} from '../storage/spend';
export type { SpendLimit, SpendLimits, SpendStatus } from '../storage/spend';

// ── Security: payload encryption, operator identity ──
export { AesGcmCodec, CodecConfigError, dataConverterOf, loadPayloadCodec, startCodecServer } from '../codec';
export { PayloadCodecMismatchError } from '../codec/mismatch';
export type { CodecServerHandle, CodecServerOptions, LoadedCodec } from '../codec';
export { OperatorRegistry, operatorsFileSchema } from '../operators/registry';
export type { OperatorsFile, OperatorVerdict } from '../operators/registry';
export { generateOperatorKey, readOperatorKey, signRequest } from '../operators/sign';
export type { OperatorKeyFile } from '../operators/sign';
export { signedPayload } from '../common/operator-auth';
export type { OperatorAction, OperatorAuth } from '../common/operator-auth';
