/**
 * The guard of one agent loop for a framework other than the AI SDK: the AI SDK
 * path's {@link AgentGuard} (ai-sdk/agent-guard.ts: the guarded step, the stop/resume gate, the
 * kill switch, the views) driven through its public API over a tool set of plain `execute`
 * functions, plus the one thing a framework adapter needs that the AI-SDK-typed API does not
 * expose: stopping the run for a reason the framework itself detected outside any tool call
 * (the OpenAI Agents SDK's max-turns error), and the tenant spend gate for model calls the
 * framework makes itself. Workflow code.
 *
 * The stop goes through the core's `runtimeStop` (AgentGuard.stopWith), so nothing of the
 * guard is re-implemented here.
 */
import type { ToolSet } from 'ai';
import type { TerminalState } from '../guard';
import { AgentGuard } from '../ai-sdk/agent-guard';
import type { ModelSpend } from '../ai-sdk/stops';
import type { GuardAgentOptions, GuardedAgent, WriteRule } from '../ai-sdk/types';

/** A framework-neutral tool: its input (parsed JSON) and a per-call context in, its result out. */
export type HostedExecute = (input: unknown, call: { readonly toolCallId: string }) => unknown;

/** The guard of one loop: the guarded tools and views, and a stop the framework detected. */
export interface GuardHost {
  readonly agent: GuardedAgent<ToolSet>;
  /**
   * Stops the run now (when nothing stopped it yet): the guard's stop with `reason`, its
   * StopReport saying `unmet`, as a budget stop of an agentRun (resumable by its lift rule).
   */
  stopWith(reason: string, terminalState: TerminalState, unmet: string): void;
  /**
   * The tenant spend gate (options' `spend`) for the framework's model calls: reserve before
   * each, settle after; absent without `spend`. A refusal stops the run (ai-sdk/stops.ts).
   */
  readonly spend: ModelSpend | undefined;
  /**
   * Whether the framework may send its next model request (core/model-gate.ts): false once the
   * run stopped or its token or cost budget has nothing left (the run stops first).
   */
  mayCallModel(): boolean;
  /** One model request's items with the accepted resumes' notes woven in (core/resume-note.ts). */
  weaveResumeNotes<T>(items: readonly T[], asMessage: (text: string) => T): T[];
}

/**
 * The guard over `tools` (each a plain `execute`, with an `inputSchema` marker for the AI SDK
 * guard's shape checks, which the caller already made): the same class as `guardAgent`.
 */
export function hostGuard(
  tools: Readonly<Record<string, HostedExecute>>,
  writes: Readonly<Record<string, WriteRule>>,
  options: GuardAgentOptions,
): GuardHost {
  const set: Record<string, unknown> = {};
  for (const [name, execute] of Object.entries(tools)) set[name] = { inputSchema: {}, execute };
  const guard = new AgentGuard(set as ToolSet, writes, options);
  return {
    agent: guard.api(),
    stopWith: (reason, terminalState, unmet) => guard.stopWith(reason, terminalState, unmet),
    spend: guard.modelSpend(),
    mayCallModel: () => guard.mayCallModel(),
    weaveResumeNotes: (items, asMessage) => guard.weaveResumeNotes(items, asMessage),
  };
}
