/**
 * Model endpoints: where an LLM planner sends its requests, and which API key goes with
 * them. Endpoints are **worker configuration**; a run only names one (`planner.endpoint`).
 * Whoever may start a run must not be able to make the worker send its API keys — or any
 * request — to a host of their choice (issue #10), so no URL ever comes from a run input.
 *
 * The worker has two built-in endpoints, `anthropic` and `openai`: the providers' official
 * APIs, or `ANTHROPIC_BASE_URL` / `OPENAI_BASE_URL` when the operator set them in the
 * worker's environment. More come from `AGENT_MODEL_ENDPOINTS` (JSON) or
 * `AGENT_MODEL_ENDPOINTS_FILE` (a JSON file), e.g.
 *
 * ```json
 * { "local-vllm": { "provider": "openai", "baseURL": "http://127.0.0.1:8000/v1", "apiKeyEnv": "VLLM_API_KEY" } }
 * ```
 *
 * Each endpoint names the env var of its own key. The default keys (`ANTHROPIC_API_KEY`,
 * `OPENAI_API_KEY`) are only ever sent to their provider's default base URL: an endpoint
 * elsewhere that names one of them is a configuration error, not a silent leak.
 */
import * as fs from 'node:fs';
import { z } from 'zod';
import { endpointNameSchema } from '../common/planner';
import { EndpointConfigError, EndpointNotConfiguredError } from './errors';

/**
 * The wire protocols an endpoint can speak. `openai` and `anthropic` serve every planner of
 * that kind and the AI SDK planner; `openai-compatible` (vLLM, Ollama, LM Studio through
 * `@ai-sdk/openai-compatible`) only the AI SDK planner (`kind: 'ai-sdk'`, planners/ai-sdk.ts).
 */
export const ENDPOINT_PROVIDERS = ['anthropic', 'openai', 'openai-compatible'] as const;
/** One of {@link ENDPOINT_PROVIDERS}. */
export type EndpointProvider = (typeof ENDPOINT_PROVIDERS)[number];
/** The providers with a built-in endpoint, a default key and a `*_BASE_URL` variable. */
export const BUILT_IN_PROVIDERS = ['anthropic', 'openai'] as const;
/** One of {@link BUILT_IN_PROVIDERS}. */
export type BuiltInProvider = (typeof BUILT_IN_PROVIDERS)[number];

/** Env var holding extra endpoints as JSON `{name: {provider, baseURL, apiKeyEnv?, maxTokensParam?}}`. */
export const MODEL_ENDPOINTS_ENV = 'AGENT_MODEL_ENDPOINTS';
/** Env var naming a JSON file of the same shape (read on every turn, so edits apply without a restart). */
export const MODEL_ENDPOINTS_FILE_ENV = 'AGENT_MODEL_ENDPOINTS_FILE';

/** The providers' official API base URLs (the built-in endpoints when no `*_BASE_URL` is set). */
export const OFFICIAL_BASE_URLS: Readonly<Record<BuiltInProvider, string>> = Object.freeze({
  anthropic: 'https://api.anthropic.com',
  openai: 'https://api.openai.com/v1',
});
/** The env vars of the providers' default API keys. */
export const DEFAULT_API_KEY_ENVS: Readonly<Record<BuiltInProvider, string>> = Object.freeze({
  anthropic: 'ANTHROPIC_API_KEY',
  openai: 'OPENAI_API_KEY',
});
/** The worker env vars that move a built-in endpoint (operator configuration, never a run's). */
export const BASE_URL_ENVS: Readonly<Record<BuiltInProvider, string>> = Object.freeze({
  anthropic: 'ANTHROPIC_BASE_URL',
  openai: 'OPENAI_BASE_URL',
});

/** One model endpoint as the worker configures it. */
export interface ModelEndpoint {
  readonly provider: EndpointProvider;
  /** The API base URL (`http:` or `https:`; for OpenAI-compatible servers including `/v1`). */
  readonly baseURL: string;
  /** The env var holding this endpoint's API key; absent for a server that needs none. */
  readonly apiKeyEnv?: string;
  /** OpenAI only: which request field carries `maxTokens` (see `OpenAIPlannerOptions`). */
  readonly maxTokensParam?: 'max_tokens' | 'max_completion_tokens';
}

/** Endpoints by name. */
export type ModelEndpoints = Readonly<Record<string, ModelEndpoint>>;

/** An endpoint chosen for a turn, with its name. */
export interface ResolvedEndpoint extends ModelEndpoint {
  readonly name: string;
  /** True when this is the provider's official API (not a proxy, gateway or local server). */
  readonly official: boolean;
}

const endpointSchema = z.strictObject({
  provider: z.enum(ENDPOINT_PROVIDERS, {
    error: (issue) =>
      `provider ${JSON.stringify(issue.input)} is not a known provider (known: ${ENDPOINT_PROVIDERS.join(', ')})`,
  }),
  baseURL: z
    .string()
    .url()
    .refine((u) => /^https?:$/.test(new URL(u).protocol), 'baseURL must be an http: or https: URL')
    .refine((u) => {
      const url = new URL(u);
      return url.username === '' && url.password === '';
    }, 'baseURL must not carry credentials (name the key with apiKeyEnv)'),
  apiKeyEnv: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'apiKeyEnv must be the name of an environment variable')
    .optional(),
  maxTokensParam: z.enum(['max_tokens', 'max_completion_tokens']).optional(),
});

const trimSlash = (u: string): string => u.replace(/\/+$/, '');

/** The base URL the provider's default key may go to: `*_BASE_URL` from the worker env, else the official one. */
export function defaultBaseURL(provider: BuiltInProvider, env: NodeJS.ProcessEnv): string {
  const configured = env[BASE_URL_ENVS[provider]]?.trim();
  return configured ? configured : OFFICIAL_BASE_URLS[provider];
}

/** The two built-in endpoints, named after their provider. */
export function builtInEndpoints(env: NodeJS.ProcessEnv): Record<BuiltInProvider, ModelEndpoint> {
  return {
    anthropic: {
      provider: 'anthropic',
      baseURL: defaultBaseURL('anthropic', env),
      apiKeyEnv: DEFAULT_API_KEY_ENVS.anthropic,
    },
    openai: {
      provider: 'openai',
      baseURL: defaultBaseURL('openai', env),
      apiKeyEnv: DEFAULT_API_KEY_ENVS.openai,
    },
  };
}

function parseEndpoints(raw: unknown, source: string): Map<string, ModelEndpoint> {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new EndpointConfigError(`${source} must be a JSON object {name: {provider, baseURL, apiKeyEnv?}}`);
  }
  const out = new Map<string, ModelEndpoint>();
  for (const [name, value] of Object.entries(raw as Record<string, unknown>)) {
    if (!endpointNameSchema.safeParse(name).success) {
      throw new EndpointConfigError(
        `${source}: endpoint name "${name}" must be letters, digits, . _ - (at most 64)`,
      );
    }
    const parsed = endpointSchema.safeParse(value);
    if (!parsed.success) {
      const problems = parsed.error.issues.map((i) => `${i.path.join('.') || '(endpoint)'}: ${i.message}`);
      throw new EndpointConfigError(`${source}: endpoint "${name}": ${problems.join('; ')}`);
    }
    out.set(name, parsed.data);
  }
  return out;
}

/**
 * A default key (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`) may only travel to its provider's
 * default base URL; any other endpoint names a key of its own.
 */
function checkKeyDestination(name: string, e: ModelEndpoint, env: NodeJS.ProcessEnv): void {
  for (const provider of BUILT_IN_PROVIDERS) {
    if (e.apiKeyEnv !== DEFAULT_API_KEY_ENVS[provider]) continue;
    const allowed = defaultBaseURL(provider, env);
    if (e.provider !== provider || trimSlash(e.baseURL) !== trimSlash(allowed)) {
      throw new EndpointConfigError(
        `endpoint "${name}" would send ${e.apiKeyEnv} to ${e.baseURL}, but that key only goes to ${allowed}; ` +
          `give the endpoint a key variable of its own (apiKeyEnv)`,
      );
    }
  }
}

/**
 * Every endpoint this worker has: the built-in ones, then `AGENT_MODEL_ENDPOINTS_FILE`,
 * then `AGENT_MODEL_ENDPOINTS`, then `extra` (programmatic, e.g. `createOpenAIPlanner({ endpoints })`);
 * a later source replaces an endpoint of the same name.
 *
 * @throws EndpointConfigError when a source is malformed or an endpoint would send a
 *   default key to a host other than its provider's default base URL
 */
export function loadModelEndpoints(env: NodeJS.ProcessEnv, extra?: ModelEndpoints): ModelEndpoints {
  const all = new Map<string, ModelEndpoint>(Object.entries(builtInEndpoints(env)));
  const file = env[MODEL_ENDPOINTS_FILE_ENV]?.trim();
  if (file) {
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch (err) {
      throw new EndpointConfigError(`${MODEL_ENDPOINTS_FILE_ENV}: cannot read ${file}`, { cause: err });
    }
    for (const [k, v] of parseEndpoints(parseJson(text, `${MODEL_ENDPOINTS_FILE_ENV} (${file})`), file))
      all.set(k, v);
  }
  const inline = env[MODEL_ENDPOINTS_ENV]?.trim();
  if (inline) {
    for (const [k, v] of parseEndpoints(parseJson(inline, MODEL_ENDPOINTS_ENV), MODEL_ENDPOINTS_ENV))
      all.set(k, v);
  }
  if (extra) for (const [k, v] of parseEndpoints(extra, 'endpoints option')) all.set(k, v);
  for (const [name, e] of all) checkKeyDestination(name, e, env);
  return Object.freeze(Object.fromEntries(all));
}

function parseJson(text: string, source: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new EndpointConfigError(`${source} is not valid JSON`, { cause: err });
  }
}

/**
 * The endpoint a run named (or the planner's built-in one when it named none).
 *
 * @param planner the run's planner kind (`openai`, `anthropic`, `ai-sdk`), as messages say it
 * @param accepts the endpoint providers that planner speaks; default the planner's own kind
 * @throws EndpointNotConfiguredError naming the endpoints configured for `accepts`
 */
export function resolveEndpoint(
  planner: string,
  name: string | undefined,
  endpoints: ModelEndpoints,
  accepts: readonly EndpointProvider[] = [planner as EndpointProvider],
): ResolvedEndpoint {
  const wanted = name ?? planner;
  const configured = Object.keys(endpoints).filter((k) => accepts.includes(endpoints[k]!.provider));
  const hint =
    `configured ${accepts.join('/')} endpoints: ${configured.join(', ') || '(none)'} ` +
    `(set ${MODEL_ENDPOINTS_ENV} or ${MODEL_ENDPOINTS_FILE_ENV} on the worker)`;
  // Own properties only: a name like "constructor" must not find Object.prototype's.
  const e = Object.hasOwn(endpoints, wanted) ? endpoints[wanted] : undefined;
  if (!e) {
    throw new EndpointNotConfiguredError(
      `planner endpoint "${wanted}" is not configured on this worker; ${hint}`,
      wanted,
      configured,
    );
  }
  if (!accepts.includes(e.provider)) {
    throw new EndpointNotConfiguredError(
      `planner endpoint "${wanted}" is a ${e.provider} endpoint, but the run's planner is ${planner}; ${hint}`,
      wanted,
      configured,
    );
  }
  const official =
    e.provider !== 'openai-compatible' && trimSlash(e.baseURL) === trimSlash(OFFICIAL_BASE_URLS[e.provider]);
  return { ...e, name: wanted, official };
}
