/**
 * What turns a provider's wire format into a {@link Planner}: per turn it checks the
 * spec, resolves the run's endpoint *name* against the worker's endpoints (endpoints.ts;
 * a run never carries a URL), reads that endpoint's API key and the price table from the
 * worker's environment, and hands
 * the provider a {@link TurnContext} whose `send` runs an SDK request under the
 * activity's cancellation signal and turns its failures into scrubbed planner errors.
 * The provider files (anthropic.ts, openai.ts) only build their client, request and
 * reply; the turn itself is {@link runTurn}.
 */
import type { Planner, PlannerInput, PlannerOutput, PlannerSpec, ToolDescriptor } from '../common/planner';
import { plannerSpecSchema } from '../common/planner';
import type { Usage } from '../guard/schemas';
import { cancellationSignal, warn as activityWarn } from '../activities/activity-context';
import {
  resolveEndpoint,
  loadModelEndpoints,
  type EndpointProvider,
  type ModelEndpoints,
  type ResolvedEndpoint,
} from './endpoints';
import {
  InvalidPlannerSpecError,
  MissingApiKeyError,
  PlannerProtocolError,
  PlannerTimeoutError,
  PlannerUnavailableError,
  type PlannerError,
} from './errors';
import { messageBudgetChars } from './context-window';
import { ceilingGate, finalWordRoomChars } from './call-ceiling';
import { DEFAULT_MAX_OBSERVATION_CHARS, runTurn, type LlmProvider, type ProviderAdapter } from './llm-common';
import {
  DEFAULT_PRICE_TABLE,
  findPrice,
  loadPriceTable,
  usageOf,
  type ModelPrice,
  type TokenCounts,
} from './pricing';
import { failureToThrow, wrapSdkError, type SdkErrorClasses } from './sdk-errors';

/** Options shared by both LLM planners. */
export interface LlmPlannerOptions {
  /**
   * Where API keys, `*_BASE_URL`, `AGENT_MODEL_ENDPOINTS(_FILE)` and `AGENT_PRICE_TABLE`
   * are read; default `process.env`.
   */
  readonly env?: NodeJS.ProcessEnv;
  /**
   * Endpoints configured in code, laid over the built-in and env-configured ones
   * (endpoints.ts). Runs pick one by name with `planner.endpoint`.
   */
  readonly endpoints?: ModelEndpoints;
  /**
   * SDK retries per request; default 0: the plan activity's retries are the one
   * retry policy, so a turn sends at most 1 + those retries requests and no request comes
   * from an attempt Temporal has given up on.
   */
  readonly maxRetries?: number;
  /**
   * SDK timeout per request in ms when the run gives none (`PlannerInput.timeoutMs`, which the
   * workflow derives from the plan activity's timeout); default 110 000.
   */
  readonly timeoutMs?: number;
  /** Base price table (`AGENT_PRICE_TABLE` is still laid over it); default the built-in one. */
  readonly priceTable?: Readonly<Record<string, ModelPrice>>;
  /** Receives warnings (unknown model price); default the activity logger / console. */
  readonly warn?: (message: string) => void;
  /** Observation text longer than this is cut (the model's context is not a dump); default 20 000. */
  readonly maxObservationChars?: number;
}

/** Default SDK timeout per request (the plan activity's 120 s less its margin). */
export const DEFAULT_TIMEOUT_MS = 110_000;
/** Default SDK retries per request: none, the plan activity retries instead. */
export const DEFAULT_MAX_RETRIES = 0;
/**
 * What a plan attempt keeps after its last request is given up (its record, its claim, its
 * answer): 1.5 s, or a quarter of the time left when that is shorter.
 */
const ATTEMPT_END_MARGIN_MS = 1_500;
/** How long the health probe waits for the endpoint. */
const HEALTH_TIMEOUT_MS = 5_000;

/**
 * A request that got no answer because its timeout ran out becomes a
 * {@link PlannerTimeoutError} (the SDKs say `APIConnectionTimeoutError`, the AI SDK a
 * `TimeoutError` abort); any other failure is passed on as it is.
 */
function timedOut(thrown: unknown, raw: unknown, elapsedMs: number, timeoutMs: number): unknown {
  if (!(thrown instanceof PlannerUnavailableError) || thrown.status !== null) return thrown;
  const name = raw instanceof Error ? raw.name : '';
  const cause = raw instanceof Error && raw.cause instanceof Error ? raw.cause.name : '';
  const byName = /timeout/i.test(name) || /timeout/i.test(cause) || /timed out/i.test(thrown.message);
  if (!byName && elapsedMs < timeoutMs - 50) return thrown;
  return new PlannerTimeoutError(timeoutMs, thrown.message);
}

/** Reads an API key from `env`; throws {@link MissingApiKeyError} naming the variable. */
export function readApiKey(env: NodeJS.ProcessEnv, envVar: string, provider: string): string {
  const key = env[envVar]?.trim();
  if (!key) throw new MissingApiKeyError(envVar, provider);
  return key;
}

/**
 * What the SDKs get as `apiKey` for an endpoint configured without `apiKeyEnv` (a local
 * server without auth): both SDKs insist on a non-empty key, and this one is no secret.
 */
export const NO_API_KEY = 'no-api-key';

/** Request options both SDKs accept: only the cancellation signal, when there is one. */
export type SdkRequestOptions = { signal: AbortSignal } | undefined;

/** What a provider gets to build the adapter of one turn. */
export interface TurnContext<K extends LlmProvider> {
  /** The run's planner spec, already checked to be of this provider's kind. */
  readonly spec: Extract<PlannerSpec, { kind: K }>;
  /** The environment the planner reads (organisation, project, …). */
  readonly env: NodeJS.ProcessEnv;
  /** The worker-configured endpoint this turn goes to: the only base URL a provider may use. */
  readonly endpoint: ResolvedEndpoint;
  readonly tools: readonly ToolDescriptor[];
  /**
   * The SDK client options both SDKs share. Only the `apiKey` is given as a credential,
   * so an SDK never falls back to others it finds on the worker (auth tokens, profiles).
   */
  readonly client: { readonly apiKey: string; readonly maxRetries: number; readonly timeout: number };
  /**
   * Runs one SDK request. A failure is thrown as a {@link PlannerError} with a scrubbed
   * message, or as the activity's cancellation when the activity was cancelled.
   */
  send<T>(request: (options: SdkRequestOptions) => Promise<T>): Promise<T>;
  /** The guard's usage of one reply, priced by the model the API echoed, else the one requested. */
  usage(replyModel: string | null | undefined, counts: TokenCounts): Usage;
}

/** A provider's half of a planner. */
export interface LlmProviderDefinition<K extends LlmProvider, M, S = SdkErrorClasses> {
  readonly kind: K;
  /** The provider's name as error messages say it (`Anthropic`, `OpenAI`). */
  readonly displayName: string;
  /**
   * The endpoint providers this planner can talk to; default the planner's own kind (the AI
   * SDK planner speaks all of them, through the provider package each names).
   */
  readonly endpointProviders?: readonly EndpointProvider[];
  /**
   * The provider's SDK (its default export: the client class, with the error classes
   * {@link wrapSdkError} needs), loaded at the first turn: the SDK is an optional package
   * (common/optional-dep.ts), so a missing one throws `OptionalDependencyError` naming it.
   * The turn's endpoint is given for a planner whose package depends on it (the AI SDK's).
   */
  sdk(endpoint: ResolvedEndpoint): S;
  /**
   * Turns what a request threw into a scrubbed planner error; default {@link wrapSdkError},
   * which needs `S` to be an official SDK's default export (an {@link SdkErrorClasses}).
   */
  wrapError?(sdk: S, err: unknown, secrets: readonly string[]): PlannerError;
  /** Builds this turn's adapter (client, tools, request) from the turn's context and the SDK. */
  adapter(turn: TurnContext<K>, sdk: S): ProviderAdapter<M>;
}

/**
 * Creates a planner from a provider's definition. The endpoints, the key and the price
 * table are read on every turn, inside the activity, so a changed environment takes effect
 * without a restart and the key is never part of the planner's input, memory or output.
 */
export function createLlmPlanner<K extends LlmProvider, M, S>(
  provider: LlmProviderDefinition<K, M, S>,
  opts: LlmPlannerOptions = {},
): Planner {
  const env = opts.env ?? process.env;
  const warn = opts.warn ?? activityWarn;
  const maxObservationChars = opts.maxObservationChars ?? DEFAULT_MAX_OBSERVATION_CHARS;
  const client = {
    maxRetries: opts.maxRetries ?? DEFAULT_MAX_RETRIES,
    timeout: opts.timeoutMs ?? DEFAULT_TIMEOUT_MS,
  };

  return {
    /**
     * The lift rule of a `planner_failed` stop: everything a turn needs resolves (spec,
     * endpoint, key, price table, the SDK installed) and the endpoint answers HTTP at all. The probe carries no
     * credentials, so it can never leak the key; a key the provider rejects shows at the
     * next turn, which stops the run again.
     */
    async health(raw: PlannerSpec): Promise<string | null> {
      try {
        const spec = plannerSpecSchema.parse(raw);
        if (spec.kind !== provider.kind)
          return `the ${provider.kind} planner got a "${spec.kind}" planner spec`;
        const endpoint = resolveEndpoint(
          provider.kind,
          spec.endpoint,
          loadModelEndpoints(env, opts.endpoints),
          provider.endpointProviders,
        );
        if (endpoint.apiKeyEnv) readApiKey(env, endpoint.apiKeyEnv, provider.kind);
        loadPriceTable(env, opts.priceTable ?? DEFAULT_PRICE_TABLE);
        provider.sdk(endpoint);
        await fetch(endpoint.baseURL, { method: 'GET', signal: AbortSignal.timeout(HEALTH_TIMEOUT_MS) });
        return null;
      } catch (err) {
        return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
      }
    },
    async next(input: PlannerInput): Promise<PlannerOutput> {
      const parsed = plannerSpecSchema.safeParse(input.planner);
      if (!parsed.success) {
        // A spec the workflow would have refused too (e.g. an old run carrying `baseURL`):
        // refused here before any client exists, so nothing is sent anywhere.
        const problems = parsed.error.issues.map(
          (i) => `${['planner', ...i.path.map(String)].join('.')}: ${i.message}`,
        );
        throw new InvalidPlannerSpecError(`invalid planner spec: ${problems.join('; ')}`);
      }
      const spec = parsed.data;
      if (spec.kind !== provider.kind)
        throw new PlannerProtocolError(`the ${provider.kind} planner got a "${spec.kind}" planner spec`);
      const endpoint = resolveEndpoint(
        provider.kind,
        spec.endpoint,
        loadModelEndpoints(env, opts.endpoints),
        provider.endpointProviders,
      );
      const apiKey = endpoint.apiKeyEnv
        ? readApiKey(
            env,
            endpoint.apiKeyEnv,
            endpoint.name === provider.kind ? provider.kind : `${provider.kind} (endpoint ${endpoint.name})`,
          )
        : NO_API_KEY;
      const table = loadPriceTable(env, opts.priceTable ?? DEFAULT_PRICE_TABLE);
      const sdk = provider.sdk(endpoint);
      const wrap = (e: unknown): PlannerError =>
        provider.wrapError
          ? provider.wrapError(sdk, e, [apiKey])
          : // Without wrapError, S is an official SDK's default export (see wrapError).
            wrapSdkError(provider.displayName, sdk as unknown as SdkErrorClasses, e, [apiKey]);
      const timeout = input.timeoutMs ?? client.timeout;
      const turn: TurnContext<K> = {
        // The kind check above makes this true; TypeScript cannot narrow a union by a generic K.
        spec: spec as Extract<PlannerSpec, { kind: K }>,
        env,
        endpoint,
        tools: input.tools,
        // Under a tenant spend limit every HTTP request must be behind its own reservation: no
        // SDK-internal retries (a timed-out request may have been billed); the activity's
        // retries (each a new turn with a new reservation) take their place.
        client: { apiKey, ...client, timeout, ...(input.spend ? { maxRetries: 0 } : {}) },
        async send(request) {
          const signal = cancellationSignal();
          const started = Date.now();
          // No request outlives its plan attempt: one that would is given up just
          // before the attempt's end, so the attempt ends by itself and its outcome carries the
          // turn's recorded usage, instead of Temporal abandoning it.
          const remaining = input.deadlineMs === undefined ? Infinity : input.deadlineMs - started;
          const leftMs = Math.floor(remaining - Math.min(ATTEMPT_END_MARGIN_MS, remaining / 4));
          const deadline = leftMs < timeout ? AbortSignal.timeout(Math.max(1, leftMs)) : undefined;
          const both = signal && deadline ? AbortSignal.any([signal, deadline]) : (signal ?? deadline);
          try {
            return await request(both ? { signal: both } : undefined);
          } catch (err) {
            if (deadline?.aborted && !signal?.aborted)
              return Promise.reject(
                new PlannerTimeoutError(Math.max(0, leftMs), 'given up at the end of the plan attempt'),
              );
            const thrown = failureToThrow(err, signal, wrap);
            return Promise.reject(timedOut(thrown, err, Date.now() - started, timeout));
          }
        },
        usage: (replyModel, counts) => usageOf([replyModel, spec.model], counts, { table, warn }),
      };
      // Tools go with every request: their size comes off the conversation's budget.
      const toolsJson = JSON.stringify(input.tools.map((t) => [t.name, t.description, t.inputSchema]));
      const toolsChars = toolsJson.length;
      const fixedBytes = Buffer.byteLength(spec.system ?? '') + Buffer.byteLength(toolsJson);
      // A final word after a money stop carries only what the run's tokens and cost have left.
      const room = input.finalWord
        ? finalWordRoomChars(input.facts?.budgetsLeft ?? {}, fixedBytes, findPrice(table, spec.model))
        : null;
      return runTurn(input, provider.adapter(turn, sdk), {
        maxObservationChars,
        maxTokens: spec.maxTokens,
        ...(room !== null ? { finalWordChars: room } : {}),
        budgetChars: messageBudgetChars(spec, toolsChars),
        // Before each request: its worst case must fit the run's budgets and the tenant's cap.
        gate: ceilingGate({
          input,
          model: spec.model,
          maxTokens: spec.maxTokens,
          fixedBytes,
          table,
        }),
      });
    },
  };
}
