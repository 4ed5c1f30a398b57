/**
 * What the AI SDK throws for a failed request, as a {@link PlannerError}: the same table as
 * the official SDKs' (sdk-errors.ts), read from the AI SDK's own fields. `generateText`
 * throws an `APICallError` (`statusCode`, `responseHeaders`, `data`, `isRetryable`; no
 * status for a network failure), wrapped in a `RetryError` once its own retries are spent,
 * or the abort of its `abortSignal` / `timeout`, or (a `fetch` of another realm) `fetch failed`.
 *
 * | AI SDK failure                                            | planner error             |
 * | --------------------------------------------------------- | ------------------------- |
 * | 400/413 saying the context window is exceeded             | `ContextLengthExceededError` (the engine retries tighter) |
 * | 401, 403                                                  | `PlannerAuthError`        |
 * | 408, 409, 429, 5xx, network (no status), timeout, aborted | `PlannerUnavailableError` |
 * | other 4xx, anything else (invalid options, a bug)         | `PlannerRequestError`     |
 *
 * As there, the AI SDK error is not kept as `cause`: it carries the request body and the
 * response headers, and Temporal would serialise it into workflow history.
 */
import { PlannerRequestError, type PlannerError } from './errors';
import { redactSecrets } from './scrub';
import { byStatus } from './sdk-errors';

/** The two error classes of `ai` the mapping needs (the package's own exports). */
export interface AiSdkErrorClasses {
  readonly APICallError: {
    isInstance(error: unknown): error is Error & {
      readonly statusCode?: number;
      readonly responseHeaders?: Record<string, string>;
      readonly data?: unknown;
    };
  };
  readonly RetryError: { isInstance(error: unknown): error is Error & { readonly lastError: unknown } };
}

/** The error code a provider put in its JSON error body (`{error: {code}}`), if any. */
function codeOf(data: unknown): unknown {
  if (!data || typeof data !== 'object') return undefined;
  const error = (data as { error?: unknown }).error;
  return error && typeof error === 'object' ? (error as { code?: unknown }).code : undefined;
}

/** A header by name, whatever its case (the AI SDK keeps them as the server sent them). */
function header(headers: Record<string, string> | undefined, name: string): string | null {
  if (!headers) return null;
  for (const [k, v] of Object.entries(headers)) if (k.toLowerCase() === name) return v;
  return null;
}

/**
 * Turns what `generateText` threw into a {@link PlannerError} with a scrubbed message.
 *
 * @param provider the endpoint's provider as messages say it (`AI SDK (openai endpoint local)`)
 * @param ai the `ai` module's error classes
 * @param err what `generateText` threw
 * @param secrets values to scrub from the message besides anything key-shaped
 */
export function wrapAiSdkError(
  provider: string,
  ai: AiSdkErrorClasses,
  err: unknown,
  secrets: ReadonlyArray<string | undefined>,
): PlannerError {
  const redacted = (text: string): string => redactSecrets(text, secrets);
  // Its own retries spent: the last attempt's error says what happened.
  const e = ai.RetryError.isInstance(err) ? err.lastError : err;
  if (ai.APICallError.isInstance(e)) {
    const status = typeof e.statusCode === 'number' ? e.statusCode : null;
    const id = header(e.responseHeaders, 'x-request-id') ?? header(e.responseHeaders, 'request-id');
    const request = id ? ` (request ${id})` : '';
    return byStatus(
      redacted(`${provider} API ${status ?? 'request'} failed${request}: ${e.message}`),
      status,
      header(e.responseHeaders, 'retry-after'),
      codeOf(e.data),
    );
  }
  // By name, not class: a DOMException or a fetch TypeError may come from another realm (the
  // AI SDK itself wraps `fetch failed` only when `instanceof TypeError` holds).
  const { name, message } = (e && typeof e === 'object' ? e : {}) as { name?: unknown; message?: unknown };
  const network = name === 'TypeError' && message === 'fetch failed';
  if (name === 'AbortError' || name === 'TimeoutError' || network) {
    return byStatus(
      redacted(`${provider} API request failed: ${String(name)}: ${String(message)}`),
      null,
      null,
    );
  }
  const text = typeof name === 'string' && typeof message === 'string' ? `${name}: ${message}` : String(e);
  return new PlannerRequestError(redacted(`${provider} client failed: ${text}`), null);
}
