/**
 * The types and refusals of `agent-loop-guard/ai-sdk` (ai-sdk/index.ts): the AI SDK's own (the
 * guarded tool set, `stopWhen`, `guard.model`) over a framework guard's (core/framework-types.ts,
 * exported here under the names this entry always had). Workflow-safe.
 */
import type { LanguageModelV4 } from '@ai-sdk/provider';
import type { ToolSet } from 'ai';
import type { ApplicationFailure } from '@temporalio/workflow';
import { GUARDED, guardRefusal, type FrameworkGuardOptions, type GuardedLoop } from '../core/framework-types';

export {
  GUARD_ACTIVITY,
  GUARDED,
  type GuardedWriteMeta,
  type GuardedWriteOutput,
  type GuardStopOutput,
  type WriteRule,
} from '../core/framework-types';

/** Prices for the cost budget (common/price.ts): the one price type, or its old spelling. */
export type { ModelPrice, TokenPrices } from '../common/price';

/** A step's usage as the AI SDK reports it (`StepResult.usage`). */
export interface StepUsage {
  readonly inputTokens: number | undefined;
  readonly outputTokens: number | undefined;
}

/** Options of {@link guardAgent}: a framework guard's (core/framework-types.ts). */
export type GuardAgentOptions = FrameworkGuardOptions;

/** The codes of {@link guardAgent}'s refusals (the failure's `type`). */
export type AiSdkGuardErrorCode =
  | 'not_in_workflow'
  | 'already_guarded'
  | 'no_input_schema'
  | 'undeclared_tool'
  | 'write_without_operation_key'
  | 'unknown_tool'
  | 'invalid_option';

/**
 * A wrong use of the API, said plainly before anything runs: a non-retryable ApplicationFailure
 * (its `type` the code), so in a workflow it fails the workflow with this message instead of
 * retrying the workflow task.
 */
export function aiSdkGuardError(code: AiSdkGuardErrorCode, message: string): ApplicationFailure {
  return guardRefusal(code, message);
}

/** Whether `tools` (or any tool in it) is already wrapped by {@link guardAgent}. */
export function isGuarded(tools: unknown): boolean {
  if (tools === null || typeof tools !== 'object') return false;
  if ((tools as Record<symbol, unknown>)[GUARDED] === true) return true;
  return Object.values(tools).some(
    (t) => t !== null && typeof t === 'object' && (t as Record<symbol, unknown>)[GUARDED] === true,
  );
}

/** The guard of one agent loop, in the user's workflow. */
export interface GuardedAgent<TOOLS extends ToolSet> extends GuardedLoop {
  /** The user's tools, each call passing the guard first. Give these to `generateText` / `ToolLoopAgent`. */
  readonly tools: TOOLS;
  /**
   * Ends the loop once the guard stopped the run (combine with the user's own:
   * `[stepCountIs(n), guard.stopWhen]`). Without {@link model}, it counts each step's usage here,
   * after the step's tool calls ran.
   */
  readonly stopWhen: (options: { readonly steps: ReadonlyArray<{ readonly usage?: StepUsage }> }) => boolean;
  /** Wraps a language model (e.g. `temporalProvider.languageModel(…)`) so its usage counts against the budgets. */
  model(model: LanguageModelV4): LanguageModelV4;
}
