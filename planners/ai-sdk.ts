/**
 * The AI SDK planner (`planner: { kind: 'ai-sdk', endpoint, model, … }`): one more
 * wire under the shared turn engine (llm-planner.ts, llm-common.ts), speaking through the
 * Vercel AI SDK's `generateText` instead of a provider's own SDK. The run names an endpoint;
 * the endpoint's `provider` (worker configuration, endpoints.ts) picks the provider package:
 *
 * | endpoint `provider`  | package                     | model                                    |
 * | -------------------- | --------------------------- | ---------------------------------------- |
 * | `openai`             | `@ai-sdk/openai`            | `.chat(model)`: Chat Completions          |
 * | `anthropic`          | `@ai-sdk/anthropic`         | Messages (`baseURL` + `/v1`)              |
 * | `openai-compatible`  | `@ai-sdk/openai-compatible` | `.chatModel(model)` (vLLM, Ollama, LM Studio) |
 *
 * Tools are declared without `execute`: the model only proposes, the guard decides what
 * runs. Their JSON Schema is given without a validator, so an argument the schema refuses
 * reaches the runtime's own zod check (PRECONDITION `invalid_args`), as with the other wires.
 * The conversation is kept in the AI SDK's own `ModelMessage` form, so what the engine
 * stores, compacts and sends back is what `generateText` takes.
 */
import type * as Ai from 'ai';
import type * as OpenAIProviderModule from '@ai-sdk/openai';
import type * as AnthropicProviderModule from '@ai-sdk/anthropic';
import type * as CompatibleProviderModule from '@ai-sdk/openai-compatible';
import { loadOptional, type OptionalPeer } from '../common/optional-dep';
import type { Planner } from '../common/planner';
import { wrapAiSdkError } from './ai-sdk-errors';
import {
  DEFAULT_API_KEY_ENVS,
  ENDPOINT_PROVIDERS,
  type EndpointProvider,
  type ResolvedEndpoint,
} from './endpoints';
import { finishOf, toolParameters, type PendingCall } from './llm-common';
import {
  createLlmPlanner,
  NO_API_KEY,
  type LlmPlannerOptions,
  type LlmProviderDefinition,
} from './llm-planner';

type ModelMessage = Ai.ModelMessage;
type ToolResultPart = Extract<Ai.ToolModelMessage['content'][number], { type: 'tool-result' }>;
type AssistantPart = Exclude<Ai.AssistantModelMessage['content'], string>[number];

/** The provider package of each endpoint provider. */
export const AI_SDK_PACKAGES: Readonly<Record<EndpointProvider, OptionalPeer>> = Object.freeze({
  openai: '@ai-sdk/openai',
  anthropic: '@ai-sdk/anthropic',
  'openai-compatible': '@ai-sdk/openai-compatible',
});

/** Options of {@link createAiSdkPlanner}. */
export type AiSdkPlannerOptions = LlmPlannerOptions;

/** What one turn needs to build a model: the credentials and account of its endpoint. */
interface ModelSettings {
  readonly endpoint: ResolvedEndpoint;
  /** The endpoint's key; undefined for an endpoint configured without `apiKeyEnv`. */
  readonly apiKey: string | undefined;
  readonly env: NodeJS.ProcessEnv;
}

/** The loaded packages of one turn: `ai` and the endpoint's provider package. */
interface AiSdk {
  readonly ai: typeof Ai;
  languageModel(modelId: string, settings: ModelSettings): Ai.LanguageModel;
}

const trimSlash = (u: string): string => u.replace(/\/+$/, '');

/**
 * Loads `ai` and the provider package the endpoint names; a missing one is an
 * `OptionalDependencyError` naming it and the command installing both.
 */
function loadAiSdk(endpoint: ResolvedEndpoint): AiSdk {
  const pkg = AI_SDK_PACKAGES[endpoint.provider];
  const feature = `the AI SDK planner (endpoint "${endpoint.name}", provider ${endpoint.provider})`;
  const ai = loadOptional<typeof Ai>('ai', feature, ['ai', pkg]);
  switch (endpoint.provider) {
    case 'openai': {
      const { createOpenAI } = loadOptional<typeof OpenAIProviderModule>(pkg, feature, ['ai', pkg]);
      return {
        ai,
        languageModel(modelId, { apiKey, env }) {
          // As in openai.ts: organisation and project belong to OPENAI_API_KEY's account only.
          const ownAccount = endpoint.apiKeyEnv === DEFAULT_API_KEY_ENVS.openai;
          return createOpenAI({
            // Always given, so the package never falls back to the worker's OPENAI_API_KEY.
            apiKey: apiKey ?? NO_API_KEY,
            baseURL: endpoint.baseURL,
            ...(ownAccount && env.OPENAI_ORG_ID ? { organization: env.OPENAI_ORG_ID } : {}),
            ...(ownAccount && env.OPENAI_PROJECT_ID ? { project: env.OPENAI_PROJECT_ID } : {}),
          }).chat(modelId);
        },
      };
    }
    case 'anthropic': {
      const { createAnthropic } = loadOptional<typeof AnthropicProviderModule>(pkg, feature, ['ai', pkg]);
      return {
        ai,
        languageModel: (modelId, { apiKey }) =>
          // The endpoint's baseURL is the official SDK's (no `/v1`); the AI SDK's includes it.
          createAnthropic({ apiKey: apiKey ?? NO_API_KEY, baseURL: `${trimSlash(endpoint.baseURL)}/v1` })(
            modelId,
          ),
      };
    }
    case 'openai-compatible': {
      const { createOpenAICompatible } = loadOptional<typeof CompatibleProviderModule>(pkg, feature, [
        'ai',
        pkg,
      ]);
      return {
        ai,
        languageModel: (modelId, { apiKey }) =>
          createOpenAICompatible({
            name: 'openaiCompatible',
            baseURL: endpoint.baseURL,
            // A server without auth gets no Authorization header at all.
            ...(apiKey !== undefined ? { apiKey } : {}),
            includeUsage: true,
          }).chatModel(modelId),
      };
    }
  }
}

/** The assistant message as it goes back into the conversation (no tool results: none ran). */
function assistantPart(part: Ai.ContentPart<Ai.ToolSet>): AssistantPart | null {
  const providerOptions = 'providerMetadata' in part ? part.providerMetadata : undefined;
  const meta = providerOptions ? { providerOptions } : {};
  switch (part.type) {
    case 'text':
      return { type: 'text', text: part.text, ...meta };
    case 'reasoning':
      // Reasoning goes back with its provider metadata (Anthropic checks a thinking block's signature).
      return { type: 'reasoning', text: part.text, ...meta };
    case 'tool-call':
      return {
        type: 'tool-call',
        toolCallId: part.toolCallId,
        toolName: part.toolName,
        input: part.input,
        ...meta,
      };
    default:
      return null;
  }
}

const aiSdkProvider: LlmProviderDefinition<'ai-sdk', ModelMessage, AiSdk> = {
  kind: 'ai-sdk',
  displayName: 'AI SDK',
  endpointProviders: ENDPOINT_PROVIDERS,
  sdk: loadAiSdk,
  wrapError: (sdk, err, secrets) => wrapAiSdkError('AI SDK', sdk.ai, err, secrets),
  adapter({ spec, env, endpoint, tools: descriptors, client, send, usage }, sdk) {
    const model = sdk.languageModel(spec.model, {
      endpoint,
      apiKey: endpoint.apiKeyEnv ? client.apiKey : undefined,
      env,
    });
    // No `execute`: generateText returns the proposed calls and runs nothing. No validator:
    // the runtime's zod check answers a bad argument, as for the other wires.
    const tools: Ai.ToolSet = Object.fromEntries(
      descriptors.map((t) => [
        t.name,
        sdk.ai.tool({
          description: t.description,
          inputSchema: sdk.ai.jsonSchema(toolParameters(t) as Parameters<typeof Ai.jsonSchema>[0]),
        }),
      ]),
    );
    return {
      provider: 'ai-sdk',
      userMessage: (text) => ({ role: 'user', content: text }),
      isAssistant: (message) => message.role === 'assistant',
      appendToolResult(messages, call: PendingCall, content, isError) {
        const part: ToolResultPart = {
          type: 'tool-result',
          toolCallId: call.id,
          toolName: call.tool,
          // error-text: Anthropic's `is_error`; Chat Completions has no flag (the text's `kind` says it).
          output: isError ? { type: 'error-text', value: content } : { type: 'text', value: content },
        };
        // All results of one reply go into one tool message (one user message for Anthropic).
        const last = messages[messages.length - 1];
        if (last && last.role === 'tool') last.content.push(part);
        else messages.push({ role: 'tool', content: [part] });
      },
      async request(messages, opts) {
        const result = await send((options) =>
          sdk.ai.generateText({
            model,
            messages: [...messages],
            ...(spec.system ? { system: spec.system } : {}),
            ...(descriptors.length > 0 ? { tools } : {}),
            ...(opts?.toolChoice === 'none' && descriptors.length > 0 ? { toolChoice: 'none' as const } : {}),
            maxOutputTokens: opts?.maxTokens ?? spec.maxTokens,
            // The AI SDK's own retries (LlmPlannerOptions.maxRetries): none by default, the plan activity retries.
            maxRetries: client.maxRetries,
            timeout: client.timeout,
            ...(options ? { abortSignal: options.signal } : {}),
          }),
        );
        const calls: PendingCall[] = [];
        const texts: string[] = [];
        const content: AssistantPart[] = [];
        for (const part of result.content) {
          // A provider-executed tool (a provider's server tool) is the provider's business, not a proposal.
          if (part.type === 'tool-call' && part.providerExecuted) continue;
          const kept = assistantPart(part);
          if (!kept) continue;
          content.push(kept);
          if (part.type === 'text') texts.push(part.text);
          // An input that is not JSON comes as its raw text: the runtime refuses it as invalid_args.
          if (part.type === 'tool-call')
            calls.push({ id: part.toolCallId, tool: part.toolName, args: part.input });
        }
        const u = result.usage;
        const cacheRead = u.inputTokenDetails?.cacheReadTokens ?? 0;
        const cacheWrite = u.inputTokenDetails?.cacheWriteTokens ?? 0;
        const finishReason = (result.finishReason as string | undefined) ?? null;
        return {
          message: { role: 'assistant', content },
          calls,
          // 'length': cut off at maxOutputTokens; 'content-filter', 'error', 'other', 'unknown' are not a normal end.
          finish: finishOf(finishReason, ['stop', 'tool-calls'], ['length']),
          finishReason,
          text: texts.join('\n'),
          usage: usage(result.response.modelId, {
            // inputTokens counts the cached ones too; they are billed at their own price.
            inputTokens:
              u.inputTokenDetails?.noCacheTokens ??
              Math.max(0, (u.inputTokens ?? 0) - cacheRead - cacheWrite),
            cacheReadTokens: cacheRead,
            cacheWriteTokens: cacheWrite,
            outputTokens: u.outputTokens ?? 0,
          }),
        };
      },
    };
  },
};

/**
 * Creates the AI SDK planner. Per turn it resolves the run's `planner.endpoint` against the
 * worker's endpoints (any provider), loads `ai` and that provider's package, reads the
 * endpoint's key and sends one `generateText` request. Failures are planner errors
 * (errors.ts) with scrubbed messages, a context-window refusal included (the engine retries
 * it once compacted tighter).
 */
export function createAiSdkPlanner(opts: AiSdkPlannerOptions = {}): Planner {
  return createLlmPlanner(aiSdkProvider, opts);
}
