/**
 * `agent-loop-guard/testing`: test an agent with its own tools and a scripted model.
 *
 * - {@link startScriptedModel}: a local model server speaking OpenAI Chat Completions whose
 *   answers are a list of turns or a function of the conversation;
 * - {@link startAgentTest}: a real worker with the app's tools on Temporal's test environment
 *   (`@temporalio/testing`, an optional peer: a devDependency of the app), a run per scripted
 *   model, its end, its StopReport and each tool's call counter;
 * - {@link startOpenAIServer}: the same server at the wire level (raw replies, API errors,
 *   unreadable replies) for testing how an agent meets a failing model.
 *
 * docs/testing.md shows the tests an app writes with them.
 *
 * @module agent-loop-guard/testing
 */
export { startScriptedModel } from './scripted-model';
export type {
  ChatMessage,
  ModelScript,
  ScriptedCall,
  ScriptedModel,
  ScriptedModelOptions,
  ScriptedTurn,
} from './scripted-model';
export { NO_TEMPORAL_CLI, startAgentTest } from './agent-test';
export type {
  AgentRunEnd,
  AgentTest,
  AgentTestOptions,
  AgentTestResume,
  AgentTestRun,
  AgentTestRunOptions,
} from './agent-test';
export { startOpenAIServer } from './openai-server';
export type {
  OpenAIScript,
  OpenAIServer,
  OpenAIServerOptions,
  OpenAIStep,
  ScriptedOpenAIError,
  ScriptedOpenAIReply,
  ScriptedOpenAIToolCall,
} from './openai-server';
