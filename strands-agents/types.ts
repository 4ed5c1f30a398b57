/**
 * The types and refusals of `agent-loop-guard/strands-agents` (strands-agents/index.ts): what the
 * workflow side and the worker side (strands-agents/worker.ts) agree on. Workflow-safe.
 */
import type { AgentResult, InvokeArgs, InvokeOptions } from '@strands-agents/sdk';
import type { ApplicationFailure } from '@temporalio/workflow';
import {
  guardRefusal,
  type DefaultedWriteRule,
  type FrameworkGuardOptions,
  type GuardedLoop,
} from '../core/framework-types';

/** The versions the adapter is tested with (docs/strands-agents.md); the worker plugin checks them. */
export const TESTED_VERSIONS = {
  '@temporalio/strands-agents': '1.23.',
  '@strands-agents/sdk': '1.19.',
} as const;

/**
 * How a write tool runs: its activity (wrapped by `ledgerWrites` on the worker), its operation
 * key, and whether each call waits for a signed approval of its exact args (a twin under the
 * approved call id waits for its own). The one rule of every framework adapter.
 */
export type StrandsWriteRule = DefaultedWriteRule;

/** Options of {@link guardStrandsAgent}: a framework guard's, writes keyed as above. */
export interface StrandsGuardOptions extends Omit<FrameworkGuardOptions, 'writes' | 'spend'> {
  /** Tools that write, each with its operation-key rule (and activity when not the tool's). */
  readonly writes?: Readonly<Record<string, StrandsWriteRule>>;
  /**
   * Charge the tenant spend limit (the worker's `AGENT_SPEND_LIMITS`, storage/spend) with each
   * model call of the agent: reserved at its worst case before the model activity is scheduled
   * (its system prompt, messages and tool specs as UTF-8 JSON + 512 tokens, plus
   * `maxOutputTokens`, default 4096, priced by `prices`), settled at its usage after. A refusal
   * stops the run NEEDS_HUMAN `spend_limit` and the model is not called (the agent's loop ends
   * with the guard's note as its text). Needs `guardActivities` on the worker
   * (`StrandsGuardPlugin` registers them). Absent: the spend store is not consulted.
   */
  readonly spend?: FrameworkGuardOptions['spend'];
}

/** The codes of {@link guardStrandsAgent}'s refusals (the failure's `type`). */
export type StrandsGuardErrorCode =
  | 'not_in_workflow'
  | 'already_guarded'
  | 'no_input_schema'
  | 'unsupported_tool'
  | 'undeclared_tool'
  | 'write_without_operation_key'
  | 'unknown_tool'
  | 'invalid_option'
  | 'unsupported_version';

/** A wrong use of the API, said before anything runs: non-retryable, its `type` the code. */
export function strandsGuardError(code: StrandsGuardErrorCode, message: string): ApplicationFailure {
  return guardRefusal(code, message);
}

/** The guard of one Strands agent, in the user's workflow. */
export interface GuardedStrandsAgent<TAgent> extends GuardedLoop {
  /** The user's agent, its tools guarded and its model gated (the same object, guarded in place). */
  readonly agent: TAgent;
  /**
   * `agent.invoke(input, options)` that ends on a StopReport instead of running on: the SDK's
   * own stop (`limits.turns`, `stopReason: 'limitTurns'`) becomes a `step_budget` stop, its
   * token limits a `token_budget` stop; a guard stop ends the SDK's loop before its next model
   * call (the result's text is the guard's note); a model activity that failed for good (its
   * retries used up) is a NEEDS_HUMAN `planner_failed` stop (null then), not a workflow task
   * retried forever. Interrupts the agent's own hooks raise are returned as the SDK returns them.
   */
  run(input: InvokeArgs, options?: InvokeOptions): Promise<AgentResult | null>;
}
