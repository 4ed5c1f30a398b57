/**
 * agent-loop-guard as a package: define tools, host them in a worker, start and steer
 * runs, and use the pure loop guard and its offline replay.
 *
 * - **Tools:** {@link defineTool}, the tool errors a tool throws to say what kind of
 *   failure it hit, and the {@link ToolRegistry} a worker hosts.
 * - **Worker:** {@link openWorkerDeps} (ledger, world, tools, planners) and
 *   {@link createAgentWorker}, which bundles the `agentRun` workflow from
 *   {@link WORKFLOWS_PATH}; {@link openLedger} opens a ledger on its own.
 * - **Contracts:** the workflow's input and result, its message definitions and schemas.
 * - **Client:** start, resume, stop, status, report, trace and wait, as functions over a
 *   Temporal `Client` (also the `agent-loop-guard/client` subpath, which does not load the
 *   worker runtime).
 * - **Guard:** {@link LoopGuard}, fingerprints, StopReports, the reasons catalogue and the
 *   replay (also the `agent-loop-guard/guard` subpath: pure, no Node, no Temporal).
 * - **MCP:** tools from MCP servers, named `mcp__SERVER__TOOL`.
 *
 * The workflow itself is not exported from here: workflow code is bundled by the worker
 * from `agent-loop-guard/workflows`, and importing this barrel from workflow code would
 * pull the worker into the bundle.
 *
 * @module agent-loop-guard
 */

// ── Errors: the one root; every error class below extends it and has a stable `code` ──
export { AgentLoopGuardError, isAgentLoopGuardError } from './common/errors';

// ── Tools ──
export { defineTool, toResult } from './tools/define-tool';
export type { AnyTool, ToolContext, ToolDefinition, ToolReturn } from './tools/define-tool';
export { checkArgDisplay, displayHintsOf, formatArg } from './tools/arg-display';
export type { ArgDisplay, ArgDisplayHints } from './tools/arg-display';
export { FatalToolError, PreconditionToolError, RetryableToolError, ToolError } from './tools/errors';
export { classifyError, DEFAULT_RETRY_AFTER_MS } from './tools/classify';
export { ToolRegistry } from './tools/registry';
export { FINISHING_TOOL, finishingTool } from './tools/finish';
export { gitWorkspace, runCommand, shellTool, workspaceReport } from './tools/shell';
export type { ShellOutput, ShellToolOptions, WorkspaceFingerprinter, WorkspaceState } from './tools/shell';
export type { FinishingToolOptions } from './tools/finish';
export type { NormalizedProposal } from './tools/registry';
export type { Tx } from './tools/tx';

// ── Worker ──
export {
  agentSinks,
  createAgentWorker,
  openWorkerDeps,
  TELEMETRY_OUTBOX_MODULE,
  WORKFLOWS_PATH,
} from './worker/create-worker';
export type {
  AgentTelemetry,
  AgentWorkerOptions,
  WorkerDeps,
  WorkerDepsOptions,
} from './worker/create-worker';
export { AGENT_LOOP_GUARD_PLUGIN_NAME, AgentLoopGuardPlugin } from './worker/plugin';
export type { AgentLoopGuardPluginOptions, AiSdkWorkerOptions } from './worker/plugin';
export { createActivities } from './activities/create-activities';
export type { Activities, ActivityDeps } from './activities/create-activities';
export {
  DEFAULT_NAMESPACE,
  DEFAULT_TEMPORAL_ADDRESS,
  DEFAULT_TEMPORAL_WAIT_S,
  loadConnectionOptions,
  readTemporalWaitMs,
  readWorkerEnv,
} from './worker/env';
export { connectToTemporal } from './worker/connect-temporal';
export type { ConnectToTemporalOptions } from './worker/connect-temporal';
export type { ConnectionSettings, WorkerEnv } from './worker/env';
export { ensureSearchAttributes, SearchAttributesError } from './worker/search-attributes';
export type { SearchAttributesMode } from './worker/search-attributes';
export { createAnthropicPlanner } from './planners/anthropic';
export { createOpenAIPlanner } from './planners/openai';
export { createAiSdkPlanner, type AiSdkPlannerOptions } from './planners/ai-sdk';

// ── MCP tools (docs/mcp.md) ──
export {
  DEFAULT_CONFIG_FILE,
  McpConfigError,
  McpToolsError,
  McpUnavailableError,
  mcpToolName,
  openMcpTools,
  parseAgentConfig,
  readAgentConfig,
} from './tools/mcp';
export type {
  AgentConfig,
  AgentConfigInput,
  McpServerConfig,
  McpTools,
  McpToolsOptions,
  ToolOverride,
} from './tools/mcp';

// ── Security (docs/security.md): payload encryption, operator identity, model endpoints ──
export { AesGcmCodec, CodecConfigError, dataConverterOf, loadPayloadCodec, startCodecServer } from './codec';
export { PayloadCodecMismatchError } from './codec/mismatch';
export type { CodecServerHandle, CodecServerOptions, LoadedCodec } from './codec';
export { OperatorRegistry, operatorsFileSchema } from './operators/registry';
export type { OperatorsFile, OperatorVerdict } from './operators/registry';
export { generateOperatorKey, readOperatorKey, signRequest } from './operators/sign';
export type { OperatorKeyFile } from './operators/sign';
export { signedPayload } from './common/operator-auth';
export type { OperatorAction, OperatorAuth } from './common/operator-auth';
export { loadModelEndpoints } from './planners/endpoints';

// ── Ledger ──
export { DEFAULT_LEDGER_URL, LedgerError, openLedger } from './storage/ledger';
// Tenant spend limits (docs/spec.md §7.10).
export {
  SPEND_LIMITS_ENV,
  SpendError,
  SpendLimitsInvalidError,
  SpendStore,
  spendLimitsFromEnv,
} from './storage/spend';
export type { SpendLimit, SpendLimits, SpendStatus } from './storage/spend';
export type { Ledger, LedgerRecord, OpenLedgerOptions, ReconcileAnswer } from './storage/ledger';

// ── Contracts ──
export {
  budgetRaiseSchema,
  checkpointQuery,
  DEFAULT_TASK_QUEUE,
  reportQuery,
  resumeRequestSchema,
  resumeSignal,
  resumeUpdate,
  runInputSchema,
  statusQuery,
  stopRequestSchema,
  stopSignal,
  stopUpdate,
  timeoutsSchema,
  traceQuery,
  WORKFLOW_ID_PREFIX,
  WORKFLOW_TYPE,
} from './common/contracts';
export type {
  BudgetRaise,
  Checkpoint,
  ResolvedRunInput,
  ResumeAnswer,
  ResumeRequest,
  RunDecision,
  RunInput,
  RunPhase,
  RunResult,
  RunStatus,
  StopAnswer,
  StopRequest,
  TracePage,
  TracePageArgs,
} from './common/contracts';
export { plannerSpecSchema } from './common/planner';
export type {
  Observation,
  Planner,
  PlannerInput,
  PlannerOutput,
  PlannerSpec,
  PlannerTurn,
  ToolDescriptor,
} from './common/planner';
export type { AgentSinks, DecisionEvent, RunEndEvent } from './common/telemetry';
export { SEARCH_ATTRIBUTES, searchAttributeCliArgs } from './common/search-attributes';
export {
  DEFAULT_MAX_CHILDREN,
  DEFAULT_MAX_DEPTH,
  SPAWN_AGENT_TOOL,
  spawnArgsSchema,
  subAgentsSchema,
} from './common/sub-agents';
export type { ChildBudget, ChildSummary, SpawnArgs, SubAgents } from './common/sub-agents';
// ── Conversations (docs/spec.md §7.16) ──
export {
  ASK_HUMAN_TOOL,
  conversationQuery,
  conversationSettingsSchema,
  messageRequestSchema,
  messageUpdate,
} from './common/conversation-run';
export type {
  ConversationSettings,
  ConversationView,
  MessageAnswer,
  MessageRequest,
  TranscriptEntry,
} from './common/conversation-run';
export { getReplies, readConversation, sendMessage, waitForReply } from './client/conversation';
export type {
  MessageOutcome,
  ReadConversationOptions,
  SendMessageOptions,
  WaitForReplyOptions,
} from './client/conversation';

// ── Client ──
export {
  approveRun,
  denyRun,
  getAgentRunReport,
  getAgentRunResult,
  getAgentRunStatus,
  getAgentRunTrace,
  getAgentRunTree,
  formatTree,
  getApprovalAudit,
  getPendingApproval,
  listApprovals,
  listPendingApprovals,
  resumeAgentRun,
  startAgentRun,
  stopAgentRun,
  waitForAgentRun,
} from './client/api';
export type {
  AgentRunSettled,
  AgentTreeNode,
  ApprovalAuditOptions,
  ApprovalRecord,
  ApprovalState,
  ApprovalStoreOptions,
  ApproveRunOptions,
  ApproveRunResult,
  AuditEntry,
  DecideOptions,
  DenyRunResult,
  ListApprovalsOptions,
  ListPendingOptions,
  PendingApproval,
  ResumeAgentRunOptions,
  StartAgentRunOptions,
  StopAgentRunOptions,
  StopAgentRunResult,
} from './client/api';
export { RUN_NOT_COMPLETED, runResultOf } from './common/run-ended';
export { connect as connectClient } from './client/connect';
export type { Connected } from './client/connect';
export { CliError, Exit } from './client/format';
export type { ExitCode } from './client/format';
export { outcomeOfResult } from './client/runs';
export type { FollowOptions, ResumeOutcome, RunOutcome } from './client/runs';
export type { StopOutcome, StopState } from './client/stop';
export { loadReplayFile } from './client/replay';

// ── Guard ──
export {
  AfterDecision,
  BeforeDecision,
  buildStopReport,
  fingerprintCall,
  GUARD_PROFILE_NAMES,
  GUARD_PROFILES,
  guardProfile,
  GuardReason,
  GuardSequenceError,
  guardConfigSchema,
  LLM_PROFILE,
  CODING_PROFILE,
  UnknownProfileError,
  LOOP_REASONS,
  liftRuleOf,
  LoopGuard,
  NEEDS_HUMAN_CODES,
  normalizeCall,
  parseReplayFile,
  replay,
  replayFileSchema,
  ReplayFormatError,
  ResultCode,
  ResultKind,
  resumeConditionOf,
  ruleOf,
  stopReportSchema,
  TerminalState,
  toolResultSchema,
  traceRecordSchema,
  workspaceReportSchema,
} from './guard';
export type {
  ArgsSpec,
  GuardCall,
  GuardConfig,
  GuardConfigInput,
  GuardProfileName,
  GuardStateJson,
  LiftRule,
  LoopGuardOptions,
  ReplayFile,
  ReplayOutcome,
  StopContext,
  StopReport,
  ToolResult,
  TraceRecord,
  Usage,
  WorkspaceReport,
} from './guard';
