/**
 * The checks of a framework guard's options that every adapter shares (ai-sdk/index.ts
 * `guardAgent`, openai-agents/index.ts `guardOpenAIAgent`): one validator, so an option is
 * refused the same way whichever framework hosts the agent. Workflow-safe.
 */

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
