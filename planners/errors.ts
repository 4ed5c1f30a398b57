/**
 * Errors of the LLM planners. Temporal reports an activity error's `name` as the
 * failure `type`, and the workflow's retry policy and its `planner_failed` stop match
 * on that type (`NON_RETRYABLE_PLANNER_ERRORS` in common/planner.ts), so every `name`
 * here is part of the contract and must not change.
 *
 * No message may hold an API key: the SDK wrapper (sdk-errors.ts) scrubs messages
 * before it builds these errors, and does not pass the SDK error on as `cause`.
 */
import { AgentLoopGuardError } from '../common/errors';
import type { Usage } from '../guard/schemas';

/** Base class of the planner errors; `retryable` says whether another attempt may help. */
export abstract class PlannerError extends AgentLoopGuardError {
  /** Whether another attempt of the same turn may succeed: false unless a class says so. */
  readonly retryable: boolean = false;

  /**
   * @param message human-readable explanation, never holding a secret
   * @param options standard `ErrorOptions` (`cause`); the cause is serialised into
   *   workflow history, so it must not hold a secret either
   */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

/** The API key env var is unset or empty: a worker configuration error. */
export class MissingApiKeyError extends PlannerError {
  readonly code = 'planner_api_key_missing';

  constructor(
    /** The env var that should hold the key, e.g. `ANTHROPIC_API_KEY`. */
    readonly envVar: string,
    /** The planner that needed the key (`anthropic`, `openai`). */
    readonly provider: string,
    options?: ErrorOptions,
  ) {
    super(
      `${envVar} is not set: the ${provider} planner reads its API key from the environment of the worker`,
      options,
    );
  }
}

/** The provider refused the credentials (401/403). */
export class PlannerAuthError extends PlannerError {
  readonly code = 'planner_auth_failed';

  constructor(
    message: string,
    /** The HTTP status the provider answered with. */
    readonly status: number,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** The provider rejected the request itself (other 4xx: unknown model, bad schema) or the client was misused. */
export class PlannerRequestError extends PlannerError {
  readonly code = 'planner_request_rejected';

  constructor(
    message: string,
    /** The HTTP status; null when the SDK failed before any response (invalid options, a bug). */
    readonly status: number | null,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** Rate limit, overload, 5xx, timeout or network failure: worth another attempt. */
export class PlannerUnavailableError extends PlannerError {
  readonly code = 'planner_unavailable';
  override readonly retryable: boolean = true;

  constructor(
    message: string,
    /** The HTTP status; null for network errors, timeouts and aborted requests. */
    readonly status: number | null,
    /** The server's `retry-after` in ms, when it gave one. */
    readonly retryAfterMs: number | null,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/**
 * The model did not answer one request within its timeout: worth another attempt
 * (the plan activity's retries, the SDK makes none); after them the run stops NEEDS_HUMAN
 * `planner_timeout`, whose StopReport says how to give a slow model more time.
 */
export class PlannerTimeoutError extends PlannerUnavailableError {
  constructor(
    /** The timeout the request had, in ms. */
    readonly timeoutMs: number,
    detail: string,
  ) {
    super(
      `the model did not answer within ${Math.round(timeoutMs / 1000)} s (${detail}); a slow model ` +
        `(e.g. on a CPU) needs a longer planner timeout: agentctl start --planner-timeout <s>, ` +
        `or the run input's timeouts.plannerRequestMs`,
      null,
      null,
    );
  }
}

/** The memory or the observation does not fit the conversation (a runtime bug, not the model's). */
export class PlannerProtocolError extends PlannerError {
  readonly code: string = 'planner_protocol_error';
}

/**
 * The model answered (and billed) a reply the planner cannot read: a chat completion without a
 * choice or message, a tool call without its function, Messages content that is not a list.
 * Never retried; the run stops NEEDS_HUMAN `planner_failed`. It carries the reply's
 * usage, so the run's totals and the tenant's spend still count what the provider billed: the
 * plan activity hands it to the workflow in the failure's details (`UNREADABLE_REPLY_ERROR`).
 */
export class UnreadableReplyError extends PlannerProtocolError {
  override readonly code = 'planner_reply_unreadable';

  constructor(
    message: string,
    /** What the provider billed for the reply. */
    readonly usage: Usage,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }

  /** The same error carrying `usage` (a turn's earlier replies added). */
  withUsage(usage: Usage): UnreadableReplyError {
    return new UnreadableReplyError(this.message, usage);
  }
}

/**
 * A turn reached the bound on its model requests across every attempt of its plan activity
 * (`MAX_TURN_REQUESTS` in llm-common.ts): no more are sent; the run stops NEEDS_HUMAN
 * `planner_failed`, its StopReport saying so. Never retried.
 */
export class TurnRequestBoundError extends PlannerError {
  readonly code = 'planner_turn_request_bound';
}

/** `AGENT_PRICE_TABLE` is malformed: a configuration error, never retried. */
export class PriceTableError extends PlannerError {
  readonly code = 'price_table_invalid';
}

/**
 * The run names a model endpoint this worker does not have (or one of another provider).
 * The message lists the endpoints that are configured; nothing was sent anywhere.
 */
export class EndpointNotConfiguredError extends PlannerError {
  readonly code = 'model_endpoint_not_configured';

  constructor(
    message: string,
    /** The endpoint name the run asked for. */
    readonly endpoint: string,
    /** The names this worker does have for the run's provider. */
    readonly configured: readonly string[],
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** `AGENT_MODEL_ENDPOINTS` / `AGENT_MODEL_ENDPOINTS_FILE` is malformed or unsafe: a configuration error. */
export class EndpointConfigError extends PlannerError {
  readonly code = 'model_endpoint_config_invalid';
}

/**
 * The planner spec does not pass `plannerSpecSchema` (e.g. it carries a `baseURL`, which a
 * run may not set): refused before any request is built.
 */
export class InvalidPlannerSpecError extends PlannerError {
  readonly code = 'planner_spec_invalid';
}

/**
 * The provider refused a request as longer than the model's context window (OpenAI
 * `context_length_exceeded`, Anthropic `prompt is too long`). The turn engine catches it and
 * retries once with a tighter compaction; it never leaves the planner.
 */
export class ContextLengthExceededError extends PlannerError {
  readonly code = 'context_length_exceeded';
}

/**
 * The next request cannot fit the model's context window even compacted (or the provider
 * refused the tighter retry too): the run stops NEEDS_HUMAN `context_exhausted`.
 */
export class ContextExhaustedError extends PlannerError {
  readonly code = 'context_exhausted';
}

/**
 * The next model call's worst case (the request's token bound plus its `maxTokens` of output,
 * at the model's price) does not fit what the run's `maxCostUsd` has left: the model is not
 * called and the run stops STOPPED_LOOP_GUARD `cost_budget`, resumable with a raise.
 */
export class CostCeilingError extends PlannerError {
  readonly code = 'cost_ceiling';
}

/** Like {@link CostCeilingError} for the run's `maxTokens`: the run stops `token_budget`. */
export class TokenCeilingError extends PlannerError {
  readonly code = 'token_ceiling';
}

/**
 * The tenant's spend limit (`AGENT_SPEND_LIMITS`) refused the reservation of the next model
 * call's worst-case price: the model is not called and the run stops NEEDS_HUMAN `spend_limit`.
 */
export class SpendLimitError extends PlannerError {
  readonly code = 'spend_limit';
}

/**
 * The model has no price while its tenant has a spend limit: a cap that cannot price a call
 * must not let it through. The model is not called; the run stops NEEDS_HUMAN `spend_limit`.
 */
export class UnpricedModelError extends PlannerError {
  readonly code = 'spend_limit_unpriced_model';
}
