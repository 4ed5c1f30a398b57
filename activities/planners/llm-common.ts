/**
 * What the Anthropic and OpenAI planners share: the turn engine (observation → tool
 * result, queued parallel calls, one model request when every call has its result),
 * the JSON-safe memory, API-key handling with redaction, and error wrapping.
 *
 * The provider files only translate between our turn and their wire format.
 */
import { Context } from '@temporalio/activity';
import { z } from 'zod';
import type { Observation, PlannerInput, PlannerOutput, ToolDescriptor } from '../../common/planner';
import { NON_RETRYABLE_PLANNER_ERRORS } from '../../common/planner';
import type { Usage } from '../../guard/schemas';

// ---------------------------------------------------------------------------------
// Errors. Each has a stable `name` (Temporal reports it as the failure type, so a
// retry policy can list the non-retryable ones) and a message that never holds a key.
// ---------------------------------------------------------------------------------

/** Base class of the planner errors; `retryable` says whether another attempt may help. */
export abstract class PlannerError extends Error {
  abstract readonly retryable: boolean;
}

/** The API key env var is unset or empty. */
export class MissingApiKeyError extends PlannerError {
  readonly retryable = false;
  constructor(
    /** The env var that should hold the key, e.g. `ANTHROPIC_API_KEY`. */
    readonly envVar: string,
    provider: string,
  ) {
    super(
      `${envVar} is not set: the ${provider} planner reads its API key from the environment of the worker`,
    );
    this.name = 'MissingApiKeyError';
  }
}

/** The provider refused the credentials (401/403). */
export class PlannerAuthError extends PlannerError {
  readonly retryable = false;
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
    this.name = 'PlannerAuthError';
  }
}

/** The provider rejected the request itself (other 4xx): unknown model, bad schema, … */
export class PlannerRequestError extends PlannerError {
  readonly retryable = false;
  constructor(
    message: string,
    readonly status: number | null,
  ) {
    super(message);
    this.name = 'PlannerRequestError';
  }
}

/** Rate limit, overload, 5xx, timeout or network failure: worth another attempt. */
export class PlannerUnavailableError extends PlannerError {
  readonly retryable = true;
  constructor(
    message: string,
    readonly status: number | null,
    /** The server's `retry-after`, when it gave one. */
    readonly retryAfterMs: number | null,
  ) {
    super(message);
    this.name = 'PlannerUnavailableError';
  }
}

/** The memory or the observation does not fit the conversation (a runtime bug). */
export class PlannerProtocolError extends PlannerError {
  readonly retryable = false;
  constructor(message: string) {
    super(message);
    this.name = 'PlannerProtocolError';
  }
}

/** Error names a Temporal retry policy should treat as non-retryable. */
export { NON_RETRYABLE_PLANNER_ERRORS };

// ---------------------------------------------------------------------------------
// Secrets.
// ---------------------------------------------------------------------------------

const SECRET_PATTERNS: readonly RegExp[] = [
  // OpenAI / Anthropic style keys (sk-…, sk-ant-…, sk-proj-…) and their underscore cousins.
  /\bsk[-_][A-Za-z0-9_-]{6,}/g,
  /\b(Bearer)\s+[A-Za-z0-9._~+/=-]{6,}/gi,
  /\b(x-api-key|api[-_]?key)(["']?\s*[:=]\s*["']?)[^\s"',}]{6,}/gi,
];

/**
 * Replaces every given secret and every key-like string (`sk-…`, `Bearer …`,
 * `x-api-key: …`) in `text` with `[REDACTED]`.
 */
export function redactSecrets(text: string, secrets: ReadonlyArray<string | undefined> = []): string {
  let out = text;
  for (const secret of secrets) {
    // Very short "keys" (local servers often take "x") would blank out ordinary words.
    if (secret && secret.length >= 4) out = out.split(secret).join('[REDACTED]');
  }
  out = out.replace(SECRET_PATTERNS[0] as RegExp, '[REDACTED]');
  out = out.replace(SECRET_PATTERNS[1] as RegExp, '$1 [REDACTED]');
  out = out.replace(SECRET_PATTERNS[2] as RegExp, '$1$2[REDACTED]');
  return out;
}

/** Reads an API key from `env`; throws {@link MissingApiKeyError} naming the variable. */
export function readApiKey(env: NodeJS.ProcessEnv, envVar: string, provider: string): string {
  const key = env[envVar]?.trim();
  if (!key) throw new MissingApiKeyError(envVar, provider);
  return key;
}

/** Shape of an SDK failure, as both official SDKs report it. */
export interface SdkFailure {
  /** HTTP status; null for network errors and timeouts. */
  readonly status: number | null;
  readonly message: string;
  readonly retryAfter?: string | null;
  readonly requestId?: string | null;
  readonly aborted?: boolean;
}

function parseRetryAfter(value: string | null | undefined): number | null {
  if (!value) return null;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, Math.round(seconds * 1000));
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - Date.now());
}

/**
 * Turns an SDK failure into one of our error classes with a redacted message. The
 * SDK error itself is *not* kept as `cause`: it carries request options and headers,
 * and Temporal would serialise it into history.
 */
export function wrapSdkFailure(
  provider: string,
  failure: SdkFailure,
  secrets: ReadonlyArray<string | undefined>,
): PlannerError {
  const request = failure.requestId ? ` (request ${failure.requestId})` : '';
  const message = redactSecrets(
    `${provider} API ${failure.status ?? 'request'} failed${request}: ${failure.message}`,
    secrets,
  );
  const { status } = failure;
  if (status === 401 || status === 403) return new PlannerAuthError(message, status);
  if (status === null || status === 408 || status === 409 || status === 429 || status >= 500) {
    return new PlannerUnavailableError(message, status, parseRetryAfter(failure.retryAfter));
  }
  return new PlannerRequestError(message, status);
}

/**
 * Wraps a non-HTTP failure of an SDK call (invalid options, a bug): not retryable,
 * message redacted, original error dropped for the same reason as in {@link wrapSdkFailure}.
 */
export function wrapOtherFailure(
  provider: string,
  err: unknown,
  secrets: ReadonlyArray<string | undefined>,
): PlannerError {
  const text = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  return new PlannerRequestError(redactSecrets(`${provider} client failed: ${text}`, secrets), null);
}

// ---------------------------------------------------------------------------------
// Environment of the activity.
// ---------------------------------------------------------------------------------

/** The cancellation signal of the current Temporal activity, if running in one. */
export function activityCancellationSignal(): AbortSignal | undefined {
  try {
    return Context.current().cancellationSignal;
  } catch {
    // Not inside an activity (tests, scripts): nothing can cancel the request.
    return undefined;
  }
}

/**
 * What to throw when a request failed: the activity's own cancellation (so Temporal
 * sees a cancelled activity, not a failed one), else the wrapped SDK error.
 */
export function failureToThrow(
  err: unknown,
  signal: AbortSignal | undefined,
  wrap: (err: unknown) => PlannerError,
): unknown {
  if (signal?.aborted && signal.reason !== undefined) return signal.reason;
  return wrap(err);
}

/** Warns through the activity logger inside a worker, else through `console.warn`. */
export function defaultWarn(message: string): void {
  try {
    Context.current().log.warn(message);
  } catch {
    console.warn(message);
  }
}

/** Options shared by both LLM planners. */
export interface LlmPlannerOptions {
  /** Where API keys, base URLs and `AGENT_PRICE_TABLE` are read; default `process.env`. */
  readonly env?: NodeJS.ProcessEnv;
  /** SDK retries per turn (on top of Temporal's activity retries); default 2. */
  readonly maxRetries?: number;
  /** SDK timeout per request in ms; default 120 000. */
  readonly timeoutMs?: number;
  /** Base price table (`AGENT_PRICE_TABLE` is still laid over it); default the built-in one. */
  readonly priceTable?: Readonly<Record<string, import('./pricing').ModelPrice>>;
  /** Receives warnings (unknown model price); default the activity logger / console. */
  readonly warn?: (message: string) => void;
  /** Observation text longer than this is cut (the model's context is not a dump); default 20 000. */
  readonly maxObservationChars?: number;
}

/** Default SDK timeout per request. */
export const DEFAULT_TIMEOUT_MS = 120_000;

// ---------------------------------------------------------------------------------
// Observations → tool-result text.
// ---------------------------------------------------------------------------------

/** Default cap on the length of one tool-result text. */
export const DEFAULT_MAX_OBSERVATION_CHARS = 20_000;

/**
 * The tool-result text the model reads: compact JSON with `kind`, then `code`,
 * `unmet`, `retryAfterMs`, `cached` and `data` when present. Data whose JSON is longer
 * than `maxChars` is replaced by a `data_preview` prefix and `data_truncated: true`.
 */
export function observationContent(obs: Observation, maxChars = DEFAULT_MAX_OBSERVATION_CHARS): string {
  const out: Record<string, unknown> = { kind: obs.kind };
  if (obs.code !== undefined) out.code = obs.code;
  if (obs.unmet !== undefined) out.unmet = obs.unmet;
  if (obs.retryAfterMs !== undefined) out.retryAfterMs = obs.retryAfterMs;
  if (obs.cached) out.cached = true;
  if (obs.data !== undefined) {
    const data = JSON.stringify(obs.data) ?? null;
    if (data !== null && data.length > maxChars) {
      out.data_truncated = true;
      out.data_preview = data.slice(0, maxChars);
    } else {
      out.data = obs.data;
    }
  }
  return JSON.stringify(out);
}

/**
 * The tool-result text for a call the runtime never answered: the planner was asked
 * for another turn with no observation (e.g. after a resume from a guard stop). Both
 * APIs demand a result for every call, and the guard's reasons are not the model's
 * business (SPEC §2: a stop is not an observation), so the model learns only this.
 */
export const NOT_EXECUTED_CONTENT = JSON.stringify({
  kind: 'NOT_EXECUTED',
  unmet: 'the runtime did not execute this call',
});

/** JSON Schema for a provider: no `$schema` keyword, and always an object at the top. */
export function toolParameters(tool: ToolDescriptor): Record<string, unknown> {
  const { $schema: _ignored, ...schema } = tool.inputSchema;
  return { ...schema, type: 'object' };
}

// ---------------------------------------------------------------------------------
// Memory and the turn engine.
// ---------------------------------------------------------------------------------

/** A tool call the model proposed and the runtime has not answered yet. */
export interface PendingCall {
  /** The provider's id (`tool_use.id`, `tool_calls[].id`), echoed as `Observation.callId`. */
  readonly id: string;
  readonly tool: string;
  readonly args: unknown;
}

/**
 * The planner's memory: plain JSON, stored by the workflow between turns. It holds
 * the conversation in the provider's own message format, the call handed to the
 * runtime last turn (`awaiting`) and the remaining calls of the same reply (`queue`).
 */
export interface ConversationMemory<M> {
  readonly v: 1;
  readonly provider: 'anthropic' | 'openai';
  readonly messages: M[];
  readonly awaiting: PendingCall | null;
  readonly queue: PendingCall[];
}

const pendingCallSchema = z.object({ id: z.string(), tool: z.string(), args: z.unknown() });
const memorySchema = z.object({
  v: z.literal(1),
  provider: z.enum(['anthropic', 'openai']),
  messages: z.array(z.record(z.string(), z.unknown())),
  awaiting: pendingCallSchema.nullable(),
  queue: z.array(pendingCallSchema),
});

/** What one model request produced. */
export interface ModelReply<M> {
  /** The assistant message as it goes back into the conversation. */
  readonly message: M;
  readonly calls: PendingCall[];
  /** The reply's text (the summary when there is no call). */
  readonly text: string;
  readonly usage: Usage;
}

/** The provider-specific half of a planner. */
export interface ProviderAdapter<M> {
  readonly provider: 'anthropic' | 'openai';
  /** The conversation's first message: the goal. */
  userMessage(text: string): M;
  /** Appends the result of `call` to the conversation (`isError` for non-SUCCESS kinds). */
  appendToolResult(messages: M[], call: PendingCall, content: string, isError: boolean): void;
  /** Whether `message` came from the model (then a user turn must follow before a request). */
  isAssistant(message: M): boolean;
  /** Sends the conversation and returns the model's reply. */
  request(messages: readonly M[]): Promise<ModelReply<M>>;
}

/** Text sent when the planner is asked again after the model already gave its answer. */
export const CONTINUE_PROMPT = 'Continue working on the goal.';

function loadMemory<M>(raw: unknown, provider: 'anthropic' | 'openai'): ConversationMemory<M> {
  if (raw === null || raw === undefined) return { v: 1, provider, messages: [], awaiting: null, queue: [] };
  const parsed = memorySchema.safeParse(raw);
  if (!parsed.success)
    throw new PlannerProtocolError(
      `the ${provider} planner cannot read this memory: ${parsed.error.issues[0]?.message}`,
    );
  if (parsed.data.provider !== provider) {
    throw new PlannerProtocolError(
      `memory belongs to the ${parsed.data.provider} planner, not the ${provider} planner`,
    );
  }
  // A deep copy: the caller's memory object is never mutated.
  return JSON.parse(JSON.stringify(parsed.data)) as ConversationMemory<M>;
}

function matches(obs: Observation, call: PendingCall): boolean {
  return obs.callId !== undefined ? obs.callId === call.id : obs.tool === call.tool;
}

const NO_USAGE: Usage = { tokens: 0, costUsd: 0 };

/**
 * One planner turn, provider-independent:
 * 1. the observation (or, if none came, a NOT_EXECUTED marker) becomes the result of
 *    the awaited call;
 * 2. a queued call of the same reply is handed out next, without a request (usage 0);
 * 3. otherwise every call has its result and the model is asked again; its first tool
 *    call is returned and the rest are queued, or its text is the final answer.
 */
export async function runTurn<M>(
  input: PlannerInput,
  adapter: ProviderAdapter<M>,
  maxObservationChars: number,
): Promise<PlannerOutput> {
  const memory = loadMemory<M>(input.memory, adapter.provider);
  const messages = memory.messages;
  let queue = memory.queue;
  const { observation } = input;

  if (memory.awaiting) {
    const call = memory.awaiting;
    if (observation) {
      if (!matches(observation, call)) {
        throw new PlannerProtocolError(
          `observation for ${observation.tool} (${observation.callId ?? 'no call id'}) does not answer the awaited call ${call.tool} (${call.id})`,
        );
      }
      adapter.appendToolResult(
        messages,
        call,
        observationContent(observation, maxObservationChars),
        observation.kind !== 'SUCCESS',
      );
    } else {
      adapter.appendToolResult(messages, call, NOT_EXECUTED_CONTENT, true);
    }
  } else if (observation) {
    throw new PlannerProtocolError(
      `observation for ${observation.tool} but no tool call is awaiting a result`,
    );
  }

  const handOut = (next: PendingCall, rest: PendingCall[], usage: Usage): PlannerOutput => {
    const out: ConversationMemory<M> = {
      v: 1,
      provider: adapter.provider,
      messages,
      awaiting: next,
      queue: rest,
    };
    return { turn: { type: 'call', tool: next.tool, args: next.args, callId: next.id, usage }, memory: out };
  };

  const [queued, ...restQueued] = queue;
  if (queued) return handOut(queued, restQueued, NO_USAGE);

  const last = messages[messages.length - 1];
  if (last === undefined) messages.push(adapter.userMessage(input.goal));
  else if (adapter.isAssistant(last)) messages.push(adapter.userMessage(CONTINUE_PROMPT));

  const reply = await adapter.request(messages);
  messages.push(reply.message);
  const [first, ...rest] = reply.calls;
  queue = rest;
  if (first) return handOut(first, queue, reply.usage);
  const out: ConversationMemory<M> = {
    v: 1,
    provider: adapter.provider,
    messages,
    awaiting: null,
    queue: [],
  };
  return { turn: { type: 'finish', summary: reply.text, usage: reply.usage }, memory: out };
}

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

/** Wraps whatever an SDK request threw into a redacted {@link PlannerError}. */
export function wrapRequestError(
  provider: string,
  sdk: SdkErrorClasses,
  err: unknown,
  key: string,
): PlannerError {
  if (err instanceof sdk.APIUserAbortError) {
    return wrapSdkFailure(provider, { status: null, message: 'request aborted', aborted: true }, [key]);
  }
  if (err instanceof sdk.APIError) {
    return wrapSdkFailure(
      provider,
      {
        status: typeof err.status === 'number' ? err.status : null,
        message: err.message,
        retryAfter: err.headers?.get('retry-after') ?? null,
        requestId: err.requestID ?? null,
      },
      [key],
    );
  }
  return wrapOtherFailure(provider, err, [key]);
}
