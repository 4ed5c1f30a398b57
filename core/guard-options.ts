/**
 * The checks of a framework guard's declarations and options that every adapter shares
 * (ai-sdk/index.ts `guardAgent`, openai-agents/index.ts `guardOpenAIAgent`,
 * strands-agents/index.ts `guardStrandsAgent`): one validator, so a tool or an option is refused
 * the same way, in the same words, whichever framework hosts the agent. Workflow code.
 */
import { inWorkflowContext } from '@temporalio/workflow';
import type { ModelPrice, TokenPrices } from '../common/price';
import { spendOptionProblem } from './spend-gate';

/** A refusal before anything runs: the failure's `type` and its message. */
export interface GuardRefusal {
  readonly code: 'unknown_tool' | 'undeclared_tool' | 'invalid_option' | 'not_in_workflow';
  readonly message: string;
}

/** The options every framework guard takes and checks alike. */
export interface SharedGuardOptions {
  /** Trace records kept in workflow memory: an integer > 0. */
  readonly traceLimit?: number;
  /** How long a gated call waits for its approval: ms > 0. */
  readonly approvalWaitMs?: number;
}

/** What is wrong with `options` (an `invalid_option` refusal's message), or null. */
export function guardOptionProblem(options: SharedGuardOptions): string | null {
  const limit = options.traceLimit;
  if (limit !== undefined && !(Number.isInteger(limit) && limit > 0))
    return `traceLimit must be an integer > 0, got ${String(limit)}`;
  const wait = options.approvalWaitMs;
  if (wait !== undefined && !(typeof wait === 'number' && Number.isFinite(wait) && wait > 0))
    return `approvalWaitMs must be a number of ms > 0, got ${String(wait)}`;
  return null;
}

/**
 * A declared tool the agent does not have, or a tool of the agent declared neither a read nor a
 * write (a write needs an operation-key rule), named; null when every tool is declared once.
 */
export function declarationRefusal(
  fn: string,
  tools: Iterable<string>,
  reads: ReadonlySet<string>,
  writes: Readonly<Record<string, unknown>>,
): GuardRefusal | null {
  const have = new Set(tools);
  for (const name of [...reads, ...Object.keys(writes)])
    if (!have.has(name))
      return { code: 'unknown_tool', message: `${fn}: "${name}" is declared but the agent has no such tool` };
  for (const name of have)
    if (!reads.has(name) && !(name in writes))
      return {
        code: 'undeclared_tool',
        message: `tool "${name}" is neither in reads nor in writes: declare it (a write needs an operation-key rule)`,
      };
  return null;
}

/** The options (shared and spend) wrong, or the guard built outside workflow code; null when neither. */
export function setupRefusal(
  fn: string,
  options: SharedGuardOptions & {
    readonly spend?: { readonly tenant?: unknown; readonly maxOutputTokens?: unknown };
    readonly prices?: ModelPrice | TokenPrices;
  },
): GuardRefusal | null {
  const problem = guardOptionProblem(options) ?? spendOptionProblem(options.spend, options.prices);
  if (problem) return { code: 'invalid_option', message: problem };
  if (!inWorkflowContext())
    return {
      code: 'not_in_workflow',
      message: `${fn} runs in workflow code (the guard decides inside the workflow, writes run as activities); call it in your workflow function, not in the worker or a client`,
    };
  return null;
}
