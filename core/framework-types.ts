/**
 * The types of a framework guard (core/framework-guard.ts) that no framework's types are in:
 * its options, a write's rule, what the workflow and the worker's write activity exchange, the
 * names of the worker's guard activities, and the views a user's workflow reads. The AI SDK
 * adapter (ai-sdk/types.ts) and the OpenAI Agents adapter (openai-agents/types.ts) export them
 * under their own names. Workflow-safe.
 */
import { ApplicationFailure, type ActivityOptions } from '@temporalio/workflow';
import type { Checkpoint, RunResult, RunStatus } from '../common/contracts';
import type { ArgsSpec, GuardConfigInput, Json, StopReport, TerminalState } from '../guard';
import type { ModelPrice, TokenPrices } from '../common/price';

/** What the worker's ledger-wrapped write activity is given besides the tool's input. */
export interface GuardedWriteMeta {
  readonly tool: string;
  readonly operationKey: string;
  readonly runId: string;
  /**
   * A `requiresApproval` write: the approval a verified resume accepted for this exact call,
   * which the worker consumes (once, re-checking the call's digest from the input) before the
   * write runs. Absent on a gated write: the worker refuses it (`approval_required`).
   */
  readonly approval?: {
    readonly approvalId: string;
    readonly stopRef: string;
    readonly fingerprint: string;
  };
  /** The tool requires an approval (the worker refuses the write without one). */
  readonly requiresApproval?: boolean;
  /**
   * The call's canonical args as the guard computed them for its fingerprint (`normalizeCall`
   * with the tool's `args` rules: defaults filled, `nonSemantic` paths removed). The ledger's
   * args hash is taken from these, as an `agentRun` tool's is, so a re-sent write that differs
   * only in an ignored field is the same operation. Sent only for a tool with `args` rules;
   * without them the worker canonicalises the input itself (the same form).
   */
  readonly canonicalArgs?: Json;
}

/** What the worker's ledger-wrapped write activity answers. */
export interface GuardedWriteOutput {
  /**
   * `executed`: the write ran now; `ledger`: the ledger had its result, nothing ran;
   * `reconciled`: the write's `reconcile` probe settled an earlier attempt's lost dispatch,
   * nothing ran.
   */
  readonly via: 'executed' | 'ledger' | 'reconciled';
  readonly result: unknown;
}

/** How a write tool runs: its activity (wrapped by `ledgerWrites` on the worker) and its key. */
export interface WriteRule {
  /** The activity's name on the worker (a function given to `ledgerWrites`). */
  readonly activity: string;
  /**
   * The operation key of a call: the same business operation gives the same key, never a random
   * id. A write without one is refused before anything runs.
   */
  readonly operationKey: (input: never) => string;
  /**
   * Each call waits for a person's signed approval of that exact call (its digest) before it
   * runs: the run shows NEEDS_HUMAN `approval_required` while it waits, `agentctl approvals
   * approve <run> --resume` lifts it, and the tool then runs it and returns its result
   * (docs/ai-sdk.md "Approvals"). Past `approvalWaitMs` the run stops NEEDS_HUMAN.
   */
  readonly requiresApproval?: boolean;
}

/**
 * A write rule as the OpenAI Agents and Strands adapters take it: {@link WriteRule} whose activity
 * may be left out (the adapter's default: the activity the tool dispatches, else its name).
 */
export interface DefaultedWriteRule extends Omit<WriteRule, 'activity'> {
  /** The activity's name on the worker (a function given to `ledgerWrites`); default: the tool's activity, else its name. */
  readonly activity?: string;
}

/** Options of a framework guard (the AI SDK's `guardAgent`, and the base of `guardOpenAIAgent`'s). */
export interface FrameworkGuardOptions {
  /** The guard's settings (e.g. `guardProfile('llm')` plus overrides); the spec's defaults otherwise. */
  readonly guard?: GuardConfigInput;
  /** Tools that only read. Every tool is in `reads` or `writes`: an undeclared one is refused. */
  readonly reads?: readonly string[];
  /** Tools that write, each with its activity and operation-key rule. */
  readonly writes?: Readonly<Record<string, WriteRule>>;
  /** How the guard fingerprints a tool's input (`nonSemantic` paths, `similarArgs`), per tool. */
  readonly args?: Readonly<Record<string, ArgsSpec>>;
  /** Activity options of the write activities (default: 1 minute start-to-close, 5 attempts). */
  readonly writeActivity?: ActivityOptions;
  /**
   * The model's price (`{ inputPerMTok, outputPerMTok, cacheReadPerMTok?, cacheWritePerMTok? }`,
   * USD per million tokens; the old `{ inputPerMillion, outputPerMillion }` is read as the same
   * rates), so model usage counts against `maxCostUsd` and the spend limit. Any other shape is
   * refused when the guard is built, naming it.
   */
  readonly prices?: ModelPrice | TokenPrices;
  /**
   * Upsert the search attributes `agentctl list` filters by (AgentState, AgentGuardReason,
   * AgentSteps) at a stop and in `result()`. They must be registered on the namespace
   * (`agentctl`'s worker does it for `agentRun`; `temporal operator search-attribute create`).
   */
  readonly searchAttributes?: boolean;
  /**
   * How long a `requiresApproval` call waits for its approval (default 24 h); then the run stops
   * NEEDS_HUMAN `approval_required` and the loop ends.
   */
  readonly approvalWaitMs?: number;
  /**
   * Charge the tenant spend limit (the worker's `AGENT_SPEND_LIMITS`, storage/spend) with each
   * call of `guard.model(…)`: reserved at its worst case before it is sent (its prompt and tools'
   * UTF-8 size + 512 tokens, plus `maxOutputTokens`, default 4096, priced by `prices`), settled
   * at its priced usage after. A refusal stops the run NEEDS_HUMAN `spend_limit` and the model is
   * not called. Needs `guardActivities` on the worker. Absent: the spend store is not consulted.
   */
  readonly spend?: { readonly tenant: string; readonly maxOutputTokens?: number };
  /**
   * The trace records the run keeps (default 2000, as an `agentRun`): `agentctl trace` and
   * `watch` page them; older ones stay in the workflow's history.
   */
  readonly traceLimit?: number;
  /**
   * The guard's state to continue from: what `guard.checkpoint()` gave the run before a
   * continue-as-new (its guard, counters, newest decisions and trace, and any stop in force).
   */
  readonly checkpoint?: Checkpoint;
}

/**
 * The worker-side activities the guard calls to verify a resume (worker/guard-activities.ts
 * `guardActivities`); register them on the worker that runs the agent's workflow.
 */
export const GUARD_ACTIVITY = {
  verifyOperator: 'agentLoopGuardVerifyOperator',
  verifyResume: 'agentLoopGuardVerifyResume',
  callDigest: 'agentLoopGuardCallDigest',
  /** The gate's audit of a refusal (core/gate.ts): `refusalAuditor` of storage/approvals/refusal-audit.ts. */
  auditRefusal: 'agentLoopGuardAuditRefusal',
  reserveSpend: 'agentLoopGuardReserveSpend',
  settleSpend: 'agentLoopGuardSettleSpend',
} as const;

/**
 * The mark a guarded tool set, tool or model carries (so wrapping twice is refused), whichever
 * adapter wrapped it: a tool guarded by one adapter is refused by the other too.
 */
export const GUARDED = Symbol.for('agent-loop-guard.ai-sdk.guarded');

/**
 * A wrong use of a guard, said plainly before anything runs: a non-retryable ApplicationFailure
 * (its `type` the code), so in a workflow it fails the workflow with this message instead of
 * retrying the workflow task. Each adapter's own refusal (`aiSdkGuardError`, `openAIGuardError`)
 * is this.
 */
export function guardRefusal(code: string, message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: code, message, nonRetryable: true });
}

/** What the guarded loop returns to the model for a call that did not run because the run stopped. */
export interface GuardStopOutput {
  readonly guard: 'stopped';
  readonly reason: string;
  readonly terminalState: TerminalState;
  readonly note: string;
}

/** The guard of one agent loop in the user's workflow, whichever framework drives the loop. */
export interface GuardedLoop {
  /** The stop in force, or null. */
  readonly stopped: { readonly reason: string; readonly terminalState: TerminalState } | null;
  /** The StopReport (null while running or when the run completed). */
  report(): StopReport | null;
  /** The run's status, as agentctl's `status` query reads it. */
  status(): RunStatus;
  /** Tool executions per tool (reads and writes that ran; cached answers and refusals excluded). */
  readonly executions: Readonly<Record<string, number>>;
  /**
   * Installs what agentctl reads and sends (core/handlers.ts, the same as an `agentRun`'s): the
   * `status`, `report`, `checkpoint` and `trace` queries, the `resume` update and signal and the
   * `stop` update and signal (the kill switch); a resume or a stop is verified on the worker by
   * `guardActivities`, and every refusal is audited.
   */
  installHandlers(): void;
  /**
   * After the loop ended on a guard stop: waits until a verified `agentctl resume` lifts it
   * (true; the guard runs on, call `generateText` again with the messages so far) or `timeoutMs`
   * passes (false; the run stays stopped; default 24 h). True at once when the run is not stopped.
   */
  untilResumed(timeoutMs?: number): Promise<boolean>;
  /**
   * The guard's state for the next run of a continue-as-new (`guardAgent(tools, { ...,
   * checkpoint })`): the same checkpoint shape as an `agentRun`'s (unsealed: it travels only in
   * the workflow's own chain). Also what `agentctl approvals` reads of a stop.
   */
  checkpoint(): Checkpoint;
  /** The workflow's result in the shape agentctl reads for a closed run. */
  result(summary?: string | null): RunResult;
  /**
   * Ends the workflow as agentctl and the Temporal UI expect: returns {@link result} when the run
   * COMPLETED, and throws it otherwise, as the typed non-retryable failure an `agentRun` ends with
   * (`AgentRunNotCompleted`: the workflow closes FAILED, not COMPLETED, in the UI's list; the
   * client reads the result back with `getAgentRunResult` / `runResultOf`). `return guard.end(text)`.
   */
  end(summary?: string | null): RunResult;
}
