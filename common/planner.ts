/**
 * The planner contract: what the workflow gives a planner activity each turn and what
 * it gets back. Sandbox-safe (types and zod only) so the workflow can import it.
 */
import { z } from 'zod';
import { usageSchema, type Usage } from '../guard/schemas';
import type { ConversationAccess } from './conversation';

/** What the planner (and an LLM) knows about a tool. */
export interface ToolDescriptor {
  readonly name: string;
  readonly description: string;
  readonly effect: 'read' | 'write';
  /** JSON Schema of the args (from the tool's zod schema), for the model's tool list. */
  readonly inputSchema: Record<string, unknown>;
}

/**
 * What happened to the planner's previous proposal, fed back on its next turn. A guard
 * *stop* is never an observation: it ends the run, it is not text for the model to argue with.
 */
export interface Observation {
  /** The planner's own id for the call (e.g. Anthropic `tool_use.id`), echoed back. */
  readonly callId?: string;
  readonly tool: string;
  readonly kind: 'SUCCESS' | 'RETRYABLE' | 'PENDING' | 'PRECONDITION' | 'FATAL';
  readonly data?: unknown;
  readonly code?: string;
  readonly unmet?: string;
  readonly retryAfterMs?: number;
  /** True when the ledger answered with a stored result and nothing ran. */
  readonly cached?: boolean;
  /** The guard's note when it refused the call and steered back instead of stopping (docs/spec.md §3.3). */
  readonly guard?: GuardNote;
}

/** What the guard tells the model about a refused call (docs/spec.md §3.3): nothing ran. */
export interface GuardNote {
  /** The rule's reason code, e.g. `same_call_repeat`. */
  readonly rule: string;
  /** The note in words (it names the rule's code too). */
  readonly note: string;
  /** How often this call already ran in the current window. */
  readonly times: number;
  /** The steps at which it ran (the newest few). */
  readonly earlierSteps: readonly number[];
  /** Its last result, when the run still has it (a read's data, a write's stored ledger answer). */
  readonly earlierResult?: unknown;
  /** What would count as progress instead. */
  readonly progress: string;
  /** Steers the run has left; at 0 the next refusal stops the run. */
  readonly steersLeft: number;
}

/** One planner turn: a tool call, a final answer, or nothing more to propose. */
export type PlannerTurn =
  | {
      readonly type: 'call';
      readonly tool: string;
      readonly args: unknown;
      /** Explicit operation key; else the tool's own `operationKey(args)` is used. */
      readonly operationKey?: string | null;
      readonly callId?: string;
      readonly usage: Usage;
      /** Replay/script mode only: the index of the proposal in the script. */
      readonly scriptIndex?: number;
    }
  | {
      readonly type: 'finish';
      readonly summary: string;
      readonly usage: Usage;
      /**
       * An LLM reply with no tool call ended the turn: `text` (the model stopped
       * talking, the wire's `stop`), `truncated` (the reply hit its output-token limit, also
       * after the engine asked again: nothing in it ran) or `other` (a finish reason the wire
       * does not know, e.g. `content_filter`). Absent: a planner that finishes on purpose.
       */
      readonly ended?: 'text' | 'truncated' | 'other';
      /** The wire's own finish reason of the last reply (`stop`, `length`, `max_tokens`, …). */
      readonly finishReason?: string;
    }
  | { readonly type: 'exhausted'; readonly usage: Usage };

/**
 * What the run tells the model after a reply with no tool call: the reply did not
 * finish the task, nothing ran; the planner turns it into a user message (llm-common.ts).
 */
export interface ModelNudge {
  /** What the model said (cut to a few hundred characters; may be empty). */
  readonly said: string;
  /** Further replies without a tool call the run takes before it ends PARTIAL `model_stopped`. */
  readonly left: number;
}

/**
 * What the run already knows about itself, handed to the planner every turn (small and
 * bounded). When older turns are compacted out of a model request, the planner writes these
 * facts into a run-state note so the model keeps what matters; the guard's own state is
 * separate and never compacted.
 */
export interface RunFacts {
  readonly steps: number;
  readonly progressVersion: number;
  /** Operation keys completed so far (count), and the newest few. */
  readonly completedOperations: number;
  readonly recentCompleted: readonly string[];
  /** The newest guard stops and refused resumes, as `reason` (at step N). */
  readonly stops: readonly string[];
  readonly refusedResumes: readonly string[];
  /** What is left of each finite budget. */
  readonly budgetsLeft: {
    readonly steps?: number;
    readonly tokens?: number;
    readonly costUsd?: number;
    readonly ms?: number;
  };
  /**
   * The run keeps room for a final word: each request's check against the tokens and
   * cost left also reserves the final word's worst case, so a `token_budget` / `cost_budget` stop
   * still leaves it room (planners/call-ceiling.ts). Absent: nothing reserved.
   */
  readonly reserveFinalWord?: boolean;
}

/** Input of one planner turn. `memory` is the planner's own opaque, JSON-safe state. */
export interface PlannerInput {
  readonly runId: string;
  readonly goal: string;
  readonly planner: PlannerSpec;
  readonly tools: readonly ToolDescriptor[];
  readonly memory: unknown;
  readonly observation: Observation | null;
  /** The run's facts for a compacted request's run-state note (absent: none). */
  readonly facts?: RunFacts | null;
  /**
   * Where the conversation lives (storage/conversation-store.ts): set by the
   * `plan` activity from the worker's database; absent, the memory carries the conversation.
   * Not JSON: never part of any workflow payload.
   */
  readonly conversations?: ConversationAccess;
  /**
   * The tenant's spend limit for this turn (storage/spend): set by the `plan` activity when
   * the run's tenant has a cap on this worker. An LLM planner reserves each model call's
   * worst-case price before it sends the request and settles the actual usage after.
   * Not JSON: never part of any workflow payload.
   */
  readonly spend?: SpendAccess;
  /**
   * Where this turn's model requests are recorded outside the activity's attempt (
   * storage/spend/served-usage.ts): set by the `plan` activity of an LLM run on a worker with a
   * SQL ledger. Not JSON: never part of any workflow payload.
   */
  readonly served?: ServedUsageAccess;
  /**
   * When the activity's attempt times out (epoch ms): a reply cut off at its output limit is
   * asked again with a larger one only when the time left can hold it. Not JSON.
   */
  readonly deadlineMs?: number;
  /**
   * The model's last reply had no tool call and the run asks again: the planner
   * says so in the user message it sends instead of the plain continue prompt.
   */
  readonly nudge?: ModelNudge | null;
  /**
   * A conversation run: the person's message after the model's text reply to them,
   * sent as the next user message (instead of the continue prompt).
   */
  readonly userText?: string | null;
  /**
   * A resume was accepted since the model's last turn: the runtime's note of who resumed, why,
   * what was verified and the fresh result (core/resume-note.ts), told before the next request.
   */
  readonly resumeNote?: string | null;
  /**
   * The guard has stopped the run: this turn is the model's final word, one request
   * with tool use turned off and a small output limit, asking it to tell its user what it did
   * and what is left. No tool runs after it; its text is the run's `final_message`.
   */
  readonly finalWord?: { readonly reason: string } | null;
  /**
   * How long one model request may take, in ms (the run's `timeouts.plannerRequestMs`, or
   * derived from the plan activity's timeout): the SDK's own timeout. Absent: the planner's.
   */
  readonly timeoutMs?: number;
}

/** How one model request ended, as {@link ServedUsageAccess} records it. */
export interface ServedRequestEnd {
  readonly state: 'answered' | 'failed';
  /** What the request is counted at (the run's tokens and cost, and the tenant's spend). */
  readonly usage: Usage;
  /** Why that figure: `reported`, `estimated`, `above_bound`, `unanswered`, `error_answer`. */
  readonly basis: 'reported' | 'estimated' | 'above_bound' | 'unanswered' | 'error_answer';
  /** How the reply ended (`done`, `truncated`, `other`, `unreadable`); null without a reply. */
  readonly finish?: string | null;
  readonly elapsedMs: number;
}

/**
 * A turn's model requests, recorded outside the activity's attempt: each before it
 * is sent and when it ends, so a reply is counted whether or not the attempt completes.
 */
export interface ServedUsageAccess {
  /** What earlier attempts of this turn sent, and how their newest answered request ended. */
  earlier(): Promise<{
    readonly requests: number;
    readonly lastReply: {
      readonly finish: string | null;
      readonly maxTokens: number;
      readonly elapsedMs: number | null;
    } | null;
  }>;
  /** Records a request about to be sent at its worst case; answers its record's id. */
  sent(worst: { tokens: number; costUsd: number | null }, maxTokens: number): Promise<string>;
  /** Records how the request ended. */
  ended(id: string, end: ServedRequestEnd): Promise<void>;
}

/** A model call's reservation under a tenant spend limit (see {@link SpendAccess}). */
export interface SpendTicket {
  /** Charges the call's actual cost (USD) and ends the reservation. */
  settle(actualUsd: number): Promise<void>;
}

/**
 * The tenant spend limit as a planner sees it: one reservation per model call, refused (a
 * `SpendLimitError`) when the worst case would cross the tenant's cap in its window.
 */
export interface SpendAccess {
  /** The tenant the run bills to. */
  readonly tenant: string;
  /**
   * Reserves `worstUsd` for one model call of `model` (null: the model has no price, which a
   * tenant with a cap refuses). Throws when refused; nothing is sent then.
   */
  reserve(worstUsd: number | null, model: string): Promise<SpendTicket>;
}

/** Output of one planner turn: the turn and the planner's new memory. */
export interface PlannerOutput {
  readonly turn: PlannerTurn;
  readonly memory: unknown;
}

/**
 * The name of a model endpoint configured on the worker (planners/endpoints.ts).
 * A run picks an endpoint by name only: whoever may start a run must not be able to make
 * the worker send its API keys, or any request, to a host of their choice (issue #10).
 */
export const endpointNameSchema = z
  .string()
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/,
    'planner.endpoint must be the name of an endpoint configured on the worker (letters, digits, . _ -)',
  );

/** The error of an LLM planner spec with keys it does not know; a URL field gets a pointed one. */
function unknownPlannerField(issue: { code?: string; keys?: readonly string[] }): string | undefined {
  if (issue.code !== 'unrecognized_keys') return undefined;
  const keys = issue.keys ?? [];
  const urlKeys = keys.filter((k) => /url|host|endpoint/i.test(k));
  if (urlKeys.length > 0) {
    return (
      `planner.${urlKeys.join(', planner.')} is not accepted: a run cannot choose where the worker sends ` +
      `its model requests (or its API keys); use planner.endpoint with the name of an endpoint ` +
      `configured on the worker (AGENT_MODEL_ENDPOINTS)`
    );
  }
  return `unknown planner field(s): ${keys.map((k) => `planner.${k}`).join(', ')}`;
}

/**
 * Which planner a run uses, and its non-secret settings. API keys and model endpoints
 * (base URLs) are worker configuration: a run names an endpoint, it never carries a URL.
 */
export const plannerSpecSchema = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('scripted'),
    scriptPath: z.string().optional(),
    script: z.unknown().optional(),
    /**
     * false (fixture mode): the script's own results answer, as in the offline replay.
     * true (live mode): the script only proposes; the registered tools really run.
     */
    live: z.boolean().default(false),
  }),
  z.strictObject(
    {
      kind: z.literal('anthropic'),
      model: z.string().default('claude-sonnet-4-6'),
      maxTokens: z.number().int().positive().default(1024),
      endpoint: endpointNameSchema.optional(),
      system: z.string().optional(),
      /**
       * The model's context window in tokens; every request is compacted to fit it. Default:
       * the model's known window (planners/context-window.ts), else a conservative one.
       */
      contextTokens: z.number().int().min(1024).optional(),
    },
    { error: unknownPlannerField },
  ),
  z.strictObject(
    {
      kind: z.literal('openai'),
      model: z.string().default('gpt-4o-mini'),
      maxTokens: z.number().int().positive().default(1024),
      endpoint: endpointNameSchema.optional(),
      system: z.string().optional(),
      /**
       * The model's context window in tokens; every request is compacted to fit it. Default:
       * the model's known window (planners/context-window.ts), else a conservative one.
       */
      contextTokens: z.number().int().min(1024).optional(),
    },
    { error: unknownPlannerField },
  ),
  z.strictObject(
    {
      /**
       * The AI SDK planner (planners/ai-sdk.ts): `generateText` through the provider package
       * the named endpoint's `provider` says (`openai`, `anthropic`, `openai-compatible`).
       */
      kind: z.literal('ai-sdk'),
      /** Required: the endpoint's provider picks the AI SDK provider package, so there is no default. */
      endpoint: endpointNameSchema,
      /** Required: no default model fits every provider. */
      model: z.string().min(1, 'planner.model must name the model (e.g. gpt-4o-mini)'),
      maxTokens: z.number().int().positive().default(1024),
      system: z.string().optional(),
      /** As for the other LLM planners: the window every request is compacted to. */
      contextTokens: z.number().int().min(1024).optional(),
    },
    { error: unknownPlannerField },
  ),
]);
/** Planner selection. */
export type PlannerSpec = z.output<typeof plannerSpecSchema>;

/** A planner implementation (lives in planners). */
export interface Planner {
  next(input: PlannerInput): Promise<PlannerOutput>;
  /**
   * A cheap check that the planner answers (the lift rule of a `planner_failed` stop):
   * null when it does, else what is wrong. Absent: being configured is enough.
   */
  health?(spec: PlannerSpec): Promise<string | null>;
}

/**
 * Error types of a planner failure that no retry can fix (a missing key, bad auth, a
 * malformed request or reply). The planner activity is not retried on them; the run
 * stops NEEDS_HUMAN (`planner_failed`) instead of failing.
 */
export const NON_RETRYABLE_PLANNER_ERRORS: readonly string[] = Object.freeze([
  'MissingApiKeyError',
  'PlannerAuthError',
  'PlannerRequestError',
  'PlannerProtocolError',
  'UnreadableReplyError',
  'PriceTableError',
  'PlannerNotConfigured',
  'EndpointNotConfiguredError',
  'EndpointConfigError',
  'InvalidPlannerSpecError',
  'ReplayFormatError',
  'ContextLengthExceededError',
  'ContextExhaustedError',
  // The provider's SDK is an optional package that is not installed (common/optional-dep.ts).
  'OptionalDependencyError',
  // The next model call does not fit the run's budget or the tenant's spend limit (no call made).
  'CostCeilingError',
  'TokenCeilingError',
  'SpendLimitError',
  'UnpricedModelError',
  // The turn's model requests reached their bound across attempts.
  'TurnRequestBoundError',
]);

/**
 * Error type of a model reply the planner could not read: not retried, the run stops
 * `planner_failed`; its failure's first detail is `{ usage }`, what the provider billed, charged
 * to the run before the stop (see {@link unreadableReplyUsage}).
 */
/**
 * The finishing tool the demo and the examples register (a tool whose result is `terminal`):
 * what the model is told to call when done, and the call a conversation holds back while the
 * person's messages wait (workflows/conversation.ts).
 */
export const FINISHING_TOOL = 'complete_task';

export const UNREADABLE_REPLY_ERROR = 'UnreadableReplyError';

/** The usage an {@link UNREADABLE_REPLY_ERROR} failure carries in its details, or null. */
export function unreadableReplyUsage(details: readonly unknown[] | undefined | null): Usage | null {
  const u = (details?.[0] as { usage?: Partial<Usage> } | undefined)?.usage;
  const ok = (n: unknown): n is number => typeof n === 'number' && Number.isFinite(n) && n >= 0;
  return u && ok(u.tokens) && ok(u.costUsd) ? { tokens: u.tokens, costUsd: u.costUsd } : null;
}

/** Error type of a model request that got no answer within its timeout (retried; then `planner_timeout`). */
export const PLANNER_TIMEOUT_ERROR = 'PlannerTimeoutError';

/**
 * Error types of a `plan` activity that refused the next model call before sending it: the
 * run's budget stop each becomes (docs/spec.md §3 rule 3, checked before the call).
 */
export const COST_CEILING_ERROR = 'CostCeilingError';
/** See {@link COST_CEILING_ERROR}; for the run's `maxTokens`. */
export const TOKEN_CEILING_ERROR = 'TokenCeilingError';
/** Error types of a refusal by the tenant's spend limit: the run stops NEEDS_HUMAN `spend_limit`. */
export const SPEND_LIMIT_ERRORS: readonly string[] = Object.freeze(['SpendLimitError', 'UnpricedModelError']);

/**
 * Error type of a `plan` activity whose next request cannot fit the model's context window
 * even compacted: the run stops NEEDS_HUMAN `context_exhausted` with its checkpoint.
 */
export const CONTEXT_EXHAUSTED_ERROR = 'ContextExhaustedError';

/**
 * Error type of a `plan` activity whose planner answered but whose ledger read failed (the
 * database down): after its retries the run stops `infrastructure_fault`, not `planner_failed`.
 */
export const LEDGER_UNAVAILABLE = 'LedgerUnavailable';

/** Zero usage. */
export const NO_USAGE: Usage = Object.freeze({ tokens: 0, costUsd: 0 });
export { usageSchema };
