/**
 * The types and refusals of `agent-loop-guard/openai-agents` (openai-agents/index.ts): what the
 * workflow side and the worker side (openai-agents/worker.ts) agree on. Workflow-safe.
 */
import type { AgentInputItem, RunResult, RunState } from '@openai/agents-core';
import type { TemporalOpenAIRunner, TemporalRunOptions } from '@temporalio/openai-agents/workflow';
import type { ApplicationFailure } from '@temporalio/workflow';
import {
  guardRefusal,
  type DefaultedWriteRule,
  type FrameworkGuardOptions,
  type GuardedLoop,
} from '../core/framework-types';

/** The versions the adapter is tested with (docs/openai-agents.md); the worker plugin checks them. */
export const TESTED_VERSIONS = {
  '@temporalio/openai-agents': '1.23.',
  '@openai/agents-core': '0.11.',
} as const;

/**
 * How a write tool runs: its activity (wrapped by `ledgerWrites` on the worker), its operation
 * key, and whether each call waits for a signed approval of its exact args (a twin under the
 * approved call id waits for its own). The one rule of every framework adapter.
 */
export type OpenAIWriteRule = DefaultedWriteRule;

/** Options of {@link guardOpenAIAgent}: a framework guard's (those of the AI SDK path's `guardAgent`), writes keyed as above. */
export interface OpenAIGuardOptions extends Omit<FrameworkGuardOptions, 'writes' | 'spend'> {
  /** Tools that write, each with its operation-key rule (and activity when not the tool's name). */
  readonly writes?: Readonly<Record<string, OpenAIWriteRule>>;
  /**
   * Charge the tenant spend limit (the worker's `AGENT_SPEND_LIMITS`, storage/spend) with each
   * model call `guard.run` makes: reserved at its worst case before the model is called (its
   * instructions, input, tools and handoffs as UTF-8 JSON + 512 tokens, plus the call's
   * `maxTokens` or `maxOutputTokens`, default 4096, priced by `prices`), settled at its usage
   * after. A refusal stops the run NEEDS_HUMAN `spend_limit` and the model is not called (the
   * SDK's loop ends with the guard's note as its output). Needs `guardActivities` on the worker
   * (`OpenAIAgentsGuardPlugin` registers them) and `TemporalOpenAIRunner`. Absent: the spend
   * store is not consulted.
   */
  readonly spend?: FrameworkGuardOptions['spend'];
}

/** The codes of {@link guardOpenAIAgent}'s refusals (the failure's `type`). */
export type OpenAIGuardErrorCode =
  | 'not_in_workflow'
  | 'already_guarded'
  | 'no_parameters_schema'
  | 'unsupported_tool'
  | 'undeclared_tool'
  | 'write_without_operation_key'
  | 'unknown_tool'
  | 'invalid_option'
  | 'unsupported_version';

/** A wrong use of the API, said before anything runs: non-retryable, its `type` the code. */
export function openAIGuardError(code: OpenAIGuardErrorCode, message: string): ApplicationFailure {
  return guardRefusal(code, message);
}

/** The guard of one OpenAI Agents SDK agent, in the user's workflow. */
export interface GuardedOpenAIAgent<TAgent> extends GuardedLoop {
  /** The user's agent (and its handoffs' agents) with every function tool guarded. */
  readonly agent: TAgent;
  /**
   * `runner.run(guard.agent, input, options)` that ends on a StopReport instead of failing:
   * the SDK's max-turns error becomes a `step_budget` stop (null then); a guard stop ends the
   * SDK's loop after the step (its final output the guard's note). Tool inputs and outputs are
   * left out of the SDK's trace spans unless `runConfig.traceIncludeSensitiveData` is true.
   * Interruptions of tools whose own `needsApproval` asked are returned as the SDK returns
   * them; approve them on the result's state and call `run` again with it.
   */
  run(
    runner: TemporalOpenAIRunner,
    input: string | AgentInputItem[] | RunState<unknown, never>,
    options?: TemporalRunOptions<unknown> & { stream?: false },
  ): Promise<RunResult<unknown, never> | null>;
}
