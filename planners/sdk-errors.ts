/**
 * The one place where an official SDK's error becomes a {@link PlannerError}. Both
 * `@anthropic-ai/sdk` and `openai` throw the same shape (`APIError` with `status`,
 * `headers`, `requestID`; `APIUserAbortError` when the request was aborted), so one
 * mapping serves both:
 *
 * | SDK failure                                   | planner error             | retryable |
 * | --------------------------------------------- | ------------------------- | --------- |
 * | 401, 403                                      | `PlannerAuthError`        | no        |
 * | 408, 409, 429, 5xx, network, timeout, aborted | `PlannerUnavailableError` | yes       |
 * | other 4xx                                     | `PlannerRequestError`     | no        |
 * | not an API error (invalid options, a bug)     | `PlannerRequestError`     | no        |
 */
import {
  ContextLengthExceededError,
  PlannerAuthError,
  PlannerRequestError,
  PlannerUnavailableError,
  type PlannerError,
} from './errors';
import { redactSecrets } from './scrub';

/** The two error classes an official SDK throws for a request (both SDKs share the shape). */
export interface SdkErrorClasses {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  readonly APIUserAbortError: abstract new (...args: any[]) => Error;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  readonly APIError: abstract new (...args: any[]) => Error & {
    readonly status?: unknown;
    readonly headers?: { get(name: string): string | null } | undefined;
    readonly requestID?: string | null | undefined;
  };
}

/**
 * `retry-after` in ms: either delay-seconds or an HTTP date (RFC 9110 §10.2.3); null
 * when absent or unreadable.
 */
export function parseRetryAfter(value: string | null | undefined, now = Date.now()): number | null {
  if (!value) return null;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, Math.round(seconds * 1000));
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

/**
 * How the providers say a request is longer than the model's window: OpenAI (and vLLM,
 * Ollama's OpenAI API) `context_length_exceeded` / "maximum context length", Anthropic
 * "prompt is too long", others "too many tokens" / "context window".
 */
const CONTEXT_EXCEEDED =
  /context_length_exceeded|maximum context length|prompt is too long|context window|too many tokens|reduce the length of the messages/i;

/** True when an API error (a 400 or 413) refuses the request for the model's context window. */
export function isContextLengthError(status: number | null, code: unknown, message: string): boolean {
  if (status !== 400 && status !== 413) return false;
  return code === 'context_length_exceeded' || CONTEXT_EXCEEDED.test(message);
}

/**
 * The planner error of a failed request from its HTTP status (null: no response), the
 * server's `retry-after` and its error code: the table above. Shared with the AI SDK
 * planner's mapping (ai-sdk-errors.ts), whose errors carry the same facts in other fields.
 */
export function byStatus(
  message: string,
  status: number | null,
  retryAfter: string | null,
  code?: unknown,
): PlannerError {
  if (isContextLengthError(status, code, message)) return new ContextLengthExceededError(message);
  if (status === 401 || status === 403) return new PlannerAuthError(message, status);
  // 408/409 are the statuses the SDKs themselves retry; null is a network error or timeout.
  if (status === null || status === 408 || status === 409 || status === 429 || status >= 500) {
    return new PlannerUnavailableError(message, status, parseRetryAfter(retryAfter));
  }
  return new PlannerRequestError(message, status);
}

/**
 * Turns whatever an SDK request threw into a {@link PlannerError} with a scrubbed
 * message. The SDK error is deliberately *not* kept as `cause`: it carries the request
 * options and headers, and Temporal would serialise it into workflow history.
 *
 * @param provider the provider's display name, first word of the message (`Anthropic`)
 * @param sdk the SDK's error classes (pass the SDK's default export)
 * @param err what the SDK call threw
 * @param secrets values to scrub from the message besides anything key-shaped
 */
export function wrapSdkError(
  provider: string,
  sdk: SdkErrorClasses,
  err: unknown,
  secrets: ReadonlyArray<string | undefined>,
): PlannerError {
  const redacted = (text: string): string => redactSecrets(text, secrets);
  if (err instanceof sdk.APIUserAbortError) {
    return byStatus(redacted(`${provider} API request failed: request aborted`), null, null);
  }
  if (err instanceof sdk.APIError) {
    const status = typeof err.status === 'number' ? err.status : null;
    const request = err.requestID ? ` (request ${err.requestID})` : '';
    return byStatus(
      redacted(`${provider} API ${status ?? 'request'} failed${request}: ${err.message}`),
      status,
      err.headers?.get('retry-after') ?? null,
      (err as { code?: unknown }).code,
    );
  }
  const text = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  return new PlannerRequestError(redacted(`${provider} client failed: ${text}`), null);
}

/**
 * What to throw when a request failed: the activity's own cancellation reason when the
 * activity was cancelled (so Temporal records a cancelled activity, not a failed one
 * that its retry policy would retry), else `wrap(err)`.
 */
export function failureToThrow(
  err: unknown,
  signal: AbortSignal | undefined,
  wrap: (err: unknown) => PlannerError,
): unknown {
  if (signal?.aborted && signal.reason !== undefined) return signal.reason;
  return wrap(err);
}
