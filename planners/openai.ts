/**
 * The OpenAI-compatible Chat Completions planner. Through a worker-configured endpoint
 * (endpoints.ts) the same code reaches OpenAI, vLLM (`http://host:8000/v1`), Ollama
 * (`http://host:11434/v1`) and any other server speaking `POST /v1/chat/completions`
 * with tools; a run names the endpoint, never a URL.
 *
 * The API key is read from the endpoint's `apiKeyEnv` (`OPENAI_API_KEY` for the built-in
 * `openai` endpoint) inside the activity on every turn; it is never part of the memory,
 * the turn or an error message.
 */
import type OpenAI from 'openai';
import { loadOptional } from '../common/optional-dep';
import type { Planner } from '../common/planner';
import { UnreadableReplyError } from './errors';
import { finishOf, toolParameters, type PendingCall } from './llm-common';
import { createLlmPlanner, type LlmPlannerOptions, type LlmProviderDefinition } from './llm-planner';

/** Env var holding the OpenAI (or compatible server's) API key. */
export const OPENAI_API_KEY_ENV = 'OPENAI_API_KEY';
/** Worker env var moving the built-in `openai` endpoint (a gateway, a test server); include `/v1`. */
export const OPENAI_BASE_URL_ENV = 'OPENAI_BASE_URL';

type MessageParam = OpenAI.Chat.Completions.ChatCompletionMessageParam;
type FunctionToolCall = OpenAI.Chat.Completions.ChatCompletionMessageFunctionToolCall;

/** Options of {@link createOpenAIPlanner}. */
export interface OpenAIPlannerOptions extends LlmPlannerOptions {
  /**
   * Which request field carries `maxTokens`. OpenAI's reasoning models accept only
   * `max_completion_tokens`; many compatible servers know only `max_tokens`. Default:
   * the endpoint's own `maxTokensParam`, else `max_completion_tokens` for the public OpenAI
   * API and `max_tokens` for any other base URL.
   */
  readonly maxTokensParam?: 'max_tokens' | 'max_completion_tokens';
}

/**
 * The args of a tool call. `arguments` is JSON text written by the model: `""` (some
 * local servers send it for argument-less tools) means `{}`; text that is not JSON is
 * passed on *as the raw string*, so the runtime's zod parse rejects it as PRECONDITION
 * `invalid_args` and the model is told so, instead of the planner guessing a repair.
 */
export function parseToolArguments(raw: string | undefined | null): unknown {
  if (raw === undefined || raw === null || raw.trim() === '') return {};
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return raw;
  }
}

function openaiProvider(
  opts: OpenAIPlannerOptions,
): LlmProviderDefinition<'openai', MessageParam, typeof OpenAI> {
  return {
    kind: 'openai',
    displayName: 'OpenAI',
    sdk: () => loadOptional<{ default: typeof OpenAI }>('openai', 'the OpenAI planner').default,
    adapter({ spec, env, endpoint, tools: descriptors, client: clientOptions, send, usage }, OpenAISdk) {
      const maxTokensParam =
        opts.maxTokensParam ??
        endpoint.maxTokensParam ??
        (endpoint.official ? 'max_completion_tokens' : 'max_tokens');
      // Organization and project come from our env too, so an injected `env` is the
      // whole configuration and the worker's process env cannot leak in. They belong to
      // the OpenAI account of OPENAI_API_KEY, so only the endpoints using that key get them.
      const ownAccount = endpoint.apiKeyEnv === OPENAI_API_KEY_ENV;
      const client = new OpenAISdk({
        ...clientOptions,
        baseURL: endpoint.baseURL,
        organization: (ownAccount && env.OPENAI_ORG_ID) || null,
        project: (ownAccount && env.OPENAI_PROJECT_ID) || null,
      });
      const tools: OpenAI.Chat.Completions.ChatCompletionFunctionTool[] = descriptors.map((tool) => ({
        type: 'function',
        function: { name: tool.name, description: tool.description, parameters: toolParameters(tool) },
      }));
      return {
        provider: 'openai',
        userMessage: (text) => ({ role: 'user', content: text }),
        isAssistant: (message) => message.role === 'assistant',
        // Chat Completions has no error flag on tool messages: the `kind` in the text says it.
        appendToolResult(messages, call: PendingCall, content) {
          messages.push({ role: 'tool', tool_call_id: call.id, content });
        },
        async request(messages, options) {
          const maxTokens = options?.maxTokens ?? spec.maxTokens;
          const body: OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming = {
            model: spec.model,
            messages: spec.system ? [{ role: 'system', content: spec.system }, ...messages] : [...messages],
            ...(tools.length > 0 ? { tools } : {}),
          };
          if (options?.toolChoice === 'none' && tools.length > 0) body.tool_choice = 'none';
          if (maxTokensParam === 'max_tokens') body.max_tokens = maxTokens;
          else body.max_completion_tokens = maxTokens;
          const reply = await send((options) => client.chat.completions.create(body, options));
          const u = reply.usage;
          const cached = u?.prompt_tokens_details?.cached_tokens ?? 0;
          const prompt = u?.prompt_tokens ?? 0;
          const billed = usage(reply.model, {
            // prompt_tokens includes the cached ones; they are billed at their own price.
            inputTokens: Math.max(0, prompt - cached),
            cacheReadTokens: Math.min(cached, prompt),
            outputTokens: u?.completion_tokens ?? 0,
          });
          // Billed, so a reply that cannot be read still counts: its usage goes with the error.
          const choice = reply.choices?.[0];
          if (!choice) throw new UnreadableReplyError('the chat completion has no choices', billed);
          const msg = choice.message;
          if (!msg) throw new UnreadableReplyError('the chat completion choice has no message', billed);
          if ((msg.tool_calls ?? []).some((tc) => tc.type === 'function' && !tc.function))
            throw new UnreadableReplyError('a tool call of the chat completion has no function', billed);
          // Servers that omit tool-call ids still need one to pair each result with its call.
          const toolCalls = (msg.tool_calls ?? [])
            .filter((tc): tc is FunctionToolCall => tc.type === 'function')
            .map((tc, i) => ({ ...tc, id: tc.id || `call_${messages.length}_${i}` }));
          const calls: PendingCall[] = toolCalls.map((tc) => ({
            id: tc.id,
            tool: tc.function.name,
            args: parseToolArguments(tc.function.arguments),
          }));
          const assistant: OpenAI.Chat.Completions.ChatCompletionAssistantMessageParam = {
            role: 'assistant',
            content: msg.content ?? null,
          };
          if (toolCalls.length > 0) {
            assistant.tool_calls = toolCalls.map((tc) => ({
              id: tc.id,
              type: 'function',
              function: { name: tc.function.name, arguments: tc.function.arguments },
            }));
          }
          // `length`: cut off at max_tokens (a tool call in it may be cut too); `content_filter` and
          // any reason this wire does not know are neither a normal end nor runnable as final.
          const finishReason = (choice.finish_reason as string | null | undefined) ?? null;
          return {
            message: assistant,
            calls,
            finish: finishOf(finishReason, ['stop', 'tool_calls', 'function_call'], ['length']),
            finishReason,
            text: msg.content ?? msg.refusal ?? '',
            usage: billed,
          };
        },
      };
    },
  };
}

/**
 * Creates the OpenAI-compatible planner. Per turn it resolves the run's
 * `planner.endpoint` (default `openai`: `OPENAI_BASE_URL`, else the public API) against
 * the worker's endpoints and reads that endpoint's key (`OPENAI_API_KEY` for the built-in one).
 * Failures are planner errors (errors.ts) with scrubbed messages.
 */
export function createOpenAIPlanner(opts: OpenAIPlannerOptions = {}): Planner {
  return createLlmPlanner(openaiProvider(opts), opts);
}
