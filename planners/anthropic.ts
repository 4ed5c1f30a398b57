/**
 * The Anthropic Messages planner: each turn the model sees the goal, the tools and
 * every earlier `tool_use` → `tool_result` pair, and proposes the next tool call.
 * The call is only a proposal: the runtime's loop guard decides whether it runs.
 *
 * The API key is read from the endpoint's `apiKeyEnv` (`ANTHROPIC_API_KEY` for the
 * built-in `anthropic` endpoint) inside the activity on every turn; it is never part of
 * the memory, the turn or an error message. The base URL is the worker-configured
 * endpoint's (endpoints.ts): a run names an endpoint, never a URL.
 */
import type Anthropic from '@anthropic-ai/sdk';
import { loadOptional } from '../common/optional-dep';
import type { Planner } from '../common/planner';
import { UnreadableReplyError } from './errors';
import { finishOf, toolParameters, type PendingCall } from './llm-common';
import { createLlmPlanner, type LlmPlannerOptions, type LlmProviderDefinition } from './llm-planner';

/** Env var holding the Anthropic API key. */
export const ANTHROPIC_API_KEY_ENV = 'ANTHROPIC_API_KEY';
/** Worker env var moving the built-in `anthropic` endpoint (a proxy, a gateway, a test server). */
export const ANTHROPIC_BASE_URL_ENV = 'ANTHROPIC_BASE_URL';

type MessageParam = Anthropic.MessageParam;
type ContentBlockParam = Anthropic.ContentBlockParam;

/** Options of {@link createAnthropicPlanner}. */
export type AnthropicPlannerOptions = LlmPlannerOptions;

/**
 * A response block as it goes back into the conversation. Text and tool_use blocks
 * are rebuilt from their input fields only (responses carry extra output-only fields);
 * thinking blocks keep their signature, which the API checks.
 */
function toParam(block: Anthropic.ContentBlock): ContentBlockParam {
  switch (block.type) {
    case 'text':
      return { type: 'text', text: block.text };
    case 'tool_use':
      return { type: 'tool_use', id: block.id, name: block.name, input: block.input };
    case 'thinking':
      return { type: 'thinking', thinking: block.thinking, signature: block.signature };
    case 'redacted_thinking':
      return { type: 'redacted_thinking', data: block.data };
    default:
      // Server-tool blocks are accepted back as the API sent them.
      return JSON.parse(JSON.stringify(block)) as ContentBlockParam;
  }
}

const anthropicProvider: LlmProviderDefinition<'anthropic', MessageParam, typeof Anthropic> = {
  kind: 'anthropic',
  displayName: 'Anthropic',
  sdk: () =>
    loadOptional<{ default: typeof Anthropic }>('@anthropic-ai/sdk', 'the Anthropic planner').default,
  adapter({ spec, endpoint, tools: descriptors, client: clientOptions, send, usage }, AnthropicSdk) {
    const client = new AnthropicSdk({ ...clientOptions, baseURL: endpoint.baseURL });
    const tools: Anthropic.Tool[] = descriptors.map((tool) => ({
      name: tool.name,
      description: tool.description,
      input_schema: toolParameters(tool) as Anthropic.Tool.InputSchema,
    }));
    return {
      provider: 'anthropic',
      userMessage: (text) => ({ role: 'user', content: text }),
      isAssistant: (message) => message.role === 'assistant',
      appendUserText(messages, text) {
        // Roles alternate: text after tool results joins their user message.
        const last = messages[messages.length - 1];
        if (last && last.role === 'user' && Array.isArray(last.content))
          last.content.push({ type: 'text', text });
        else if (last && last.role === 'user')
          messages[messages.length - 1] = { role: 'user', content: `${String(last.content)}\n\n${text}` };
        else messages.push({ role: 'user', content: text });
      },
      appendToolResult(messages, call: PendingCall, content, isError) {
        const block: Anthropic.ToolResultBlockParam = { type: 'tool_result', tool_use_id: call.id, content };
        if (isError) block.is_error = true;
        // All results of one reply go into the single user message that follows it.
        const last = messages[messages.length - 1];
        if (last && last.role === 'user' && Array.isArray(last.content)) last.content.push(block);
        else messages.push({ role: 'user', content: [block] });
      },
      async request(messages, opts) {
        const reply = await send((options) =>
          client.messages.create(
            {
              model: spec.model,
              max_tokens: opts?.maxTokens ?? spec.maxTokens,
              messages: [...messages],
              ...(spec.system ? { system: spec.system } : {}),
              ...(tools.length > 0 ? { tools } : {}),
              ...(opts?.toolChoice === 'none' && tools.length > 0
                ? { tool_choice: { type: 'none' as const } }
                : {}),
            },
            options,
          ),
        );
        const u = reply.usage;
        const billed = usage(reply.model, {
          inputTokens: u?.input_tokens ?? 0,
          outputTokens: u?.output_tokens ?? 0,
          cacheReadTokens: u?.cache_read_input_tokens ?? 0,
          cacheWriteTokens: u?.cache_creation_input_tokens ?? 0,
        });
        // Billed, so a reply that cannot be read still counts: its usage goes with the error.
        if (!Array.isArray(reply.content))
          throw new UnreadableReplyError('the Messages reply has no content list', billed);
        const calls: PendingCall[] = [];
        const texts: string[] = [];
        for (const block of reply.content) {
          if (block.type === 'tool_use') calls.push({ id: block.id, tool: block.name, args: block.input });
          else if (block.type === 'text') texts.push(block.text);
        }
        const finishReason = (reply.stop_reason as string | null | undefined) ?? null;
        return {
          message: { role: 'assistant', content: reply.content.map(toParam) },
          calls,
          // `max_tokens`: cut off (a tool_use in it may be incomplete); `refusal`, `pause_turn` and
          // reasons this wire does not know are not a normal end.
          finish: finishOf(finishReason, ['end_turn', 'tool_use', 'stop_sequence'], ['max_tokens']),
          finishReason,
          text: texts.join('\n'),
          usage: billed,
        };
      },
    };
  },
};

/**
 * Creates the Anthropic planner. Per turn it resolves the run's `planner.endpoint`
 * (default `anthropic`: `ANTHROPIC_BASE_URL`, else the public API) against the worker's
 * endpoints and reads that endpoint's key (`ANTHROPIC_API_KEY` for the built-in one).
 * Failures are planner errors (errors.ts) with scrubbed messages.
 */
export function createAnthropicPlanner(opts: AnthropicPlannerOptions = {}): Planner {
  return createLlmPlanner(anthropicProvider, opts);
}
