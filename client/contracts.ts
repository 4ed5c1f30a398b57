/**
 * The contract of the `agentRun` workflow, for a client of its own (part of
 * `agent-loop-guard/client`): the run's input and result, the workflow's queries, signals and
 * updates with their request schemas, the ids and the sub-agent and conversation settings
 * (docs/spec.md). The client functions in client/api.ts use these; a program that talks to the
 * workflow with a Temporal `Client` alone uses them directly.
 */
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
} from '../common/contracts';
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
} from '../common/contracts';
export { plannerSpecSchema } from '../common/planner';
export type { PlannerSpec } from '../common/planner';
export {
  DEFAULT_MAX_CHILDREN,
  DEFAULT_MAX_DEPTH,
  SPAWN_AGENT_TOOL,
  spawnArgsSchema,
  subAgentsSchema,
} from '../common/sub-agents';
export type { ChildBudget, ChildSummary, SpawnArgs, SubAgents } from '../common/sub-agents';
export {
  ASK_HUMAN_TOOL,
  conversationQuery,
  conversationSettingsSchema,
  messageRequestSchema,
  messageUpdate,
} from '../common/conversation-run';
export type {
  ConversationEnding,
  ConversationSettings,
  ConversationStatus,
  ConversationView,
  MessageAnswer,
  MessageDelivery,
  MessageRequest,
  TranscriptEntry,
} from '../common/conversation-run';
