/**
 * `agent-loop-guard/ai-sdk`: the loop guard for an agent written on Temporal's own AI
 * SDK integration (`@temporalio/ai-sdk`, ai 7), added inside the user's workflow with a few lines:
 *
 * ```ts
 * const guard = guardAgent(tools, { reads: ['search'], writes: { file_ticket: { activity: 'fileTicket', operationKey: (i) => `ticket:${i.title}` } } });
 * guard.installHandlers(); // agentctl status / report read the run; resume / stop control it
 * const result = await generateText({ model: guard.model(temporalProvider.languageModel('gpt-4o')), tools: guard.tools, stopWhen: [stepCountIs(20), guard.stopWhen], prompt });
 * return guard.result(result.text);
 * ```
 *
 * Every tool call passes the same {@link LoopGuard} as an `agentRun` (repeats, near repeats,
 * cycles, no progress, the budgets; steering notes come back as the tool's result); a write
 * runs as the user's activity wrapped on the worker by `ledgerWrites` (ai-sdk/worker.ts), with
 * its operation key, so a crash, a retry or a re-sent call never repeats it; a stop ends the
 * loop (`stopWhen`) with the same StopReport. Workflow code: no Node built-ins, and nothing
 * but types from `ai` (the user's bundle has it).
 */
import type { ToolSet } from 'ai';
import { setupRefusal } from '../core/guard-options';
import { FrameworkGuard } from '../core/framework-guard';
import { aiSdkAgent } from './agent-guard';
import { aiSdkGuardError, isGuarded, type GuardAgentOptions, type GuardedAgent } from './types';

export * from './types';
/** A tool's PRECONDITION, PENDING, RETRYABLE or FATAL, thrown from its execute (core/step.ts). */
export { ToolResultError } from '../core/step';

/**
 * Wraps `tools` with the loop guard and the idempotency ledger (docs/ai-sdk.md). Call it in
 * workflow code, once per agent loop.
 */
export function guardAgent<TOOLS extends ToolSet>(
  tools: TOOLS,
  options: GuardAgentOptions = {},
): GuardedAgent<TOOLS> {
  if (isGuarded(tools)) {
    throw aiSdkGuardError(
      'already_guarded',
      'these tools are already guarded by agent-loop-guard: call guardAgent once, with the original tools',
    );
  }
  const reads = new Set(options.reads ?? []);
  const writes = options.writes ?? {};
  for (const name of [...reads, ...Object.keys(writes)]) {
    if (!(name in tools))
      throw aiSdkGuardError('unknown_tool', `guardAgent: "${name}" is declared but is not one of the tools`);
  }
  for (const [name, t] of Object.entries(tools)) {
    if (!t || typeof t !== 'object' || !('inputSchema' in t) || t.inputSchema === undefined) {
      throw aiSdkGuardError(
        'no_input_schema',
        `tool "${name}" has no inputSchema: the guard fingerprints a call by its validated input`,
      );
    }
    const rule = writes[name];
    if (rule !== undefined) {
      if (typeof rule.operationKey !== 'function' || typeof rule.activity !== 'string') {
        throw aiSdkGuardError(
          'write_without_operation_key',
          `write tool "${name}" has no operation-key rule: give writes.${name} = { activity, operationKey: (input) => string } (a write without a key could run twice)`,
        );
      }
    } else if (!reads.has(name)) {
      throw aiSdkGuardError(
        'undeclared_tool',
        `tool "${name}" is neither in reads nor in writes: declare it (a write needs an operation-key rule)`,
      );
    }
  }
  const refusal = setupRefusal('guardAgent', options);
  if (refusal) throw aiSdkGuardError(refusal.code, refusal.message);
  return aiSdkAgent(new FrameworkGuard(writes, options), tools);
}
