/**
 * A local server speaking the Anthropic Messages API (`POST /v1/messages`, non-
 * streaming) with scripted replies, for driving the real `@anthropic-ai/sdk` client.
 *
 * Like the real API it rejects a conversation that breaks the tool protocol (every
 * `tool_use` needs a `tool_result` in the very next user message, roles alternate),
 * so a planner bug shows up as a 400, not as a silently passing test.
 */
import {
  startScriptedServer,
  wrongKey,
  type HttpReply,
  type RunningServer,
  type Script,
} from '../../../testing/http-script';
import { anthropicViolation } from '../../../testing/protocol';

/** A content block the scripted model replies with. */
export type ScriptedAnthropicBlock =
  | { readonly type: 'text'; readonly text: string }
  | { readonly type: 'tool_use'; readonly id?: string; readonly name: string; readonly input: unknown };

/** One scripted model reply. */
export interface ScriptedAnthropicReply {
  readonly content: readonly ScriptedAnthropicBlock[];
  /** Default: `tool_use` when the content has a tool_use block, else `end_turn`. */
  readonly stop_reason?: string;
  readonly usage?: {
    readonly input_tokens?: number;
    readonly output_tokens?: number;
    readonly cache_read_input_tokens?: number;
    readonly cache_creation_input_tokens?: number;
  };
  /** The model id echoed back; default the requested one. */
  readonly model?: string;
  /** A billed reply the planner cannot read: `content` is sent as null (issue 30). */
  readonly unreadable?: true;
}

/** A scripted API error. */
export interface ScriptedAnthropicError {
  readonly error: {
    readonly status: number;
    readonly type: string;
    readonly message: string;
    readonly headers?: Record<string, string>;
  };
}

/** A scripted step: a reply or an error. */
export type AnthropicStep = ScriptedAnthropicReply | ScriptedAnthropicError;

/** The script: a list consumed in order, or a function of the request number (0-based). */
export type AnthropicScript = Script<AnthropicStep>;

/** Options of {@link startAnthropicServer}. */
export interface AnthropicServerOptions {
  /** When set, requests without this key (x-api-key or Bearer) get a 401. */
  readonly apiKey?: string;
  /**
   * Text blocks carry `citations: null` (default, as `@anthropic-ai/sdk` types them and as
   * gateways such as OpenRouter send them) or no `citations` field at all: `@ai-sdk/anthropic`
   * refuses the `null` form (docs/planners.md, "AI SDK planner").
   */
  readonly nullCitations?: boolean;
}

/** A running scripted Anthropic server. */
export interface AnthropicServer extends RunningServer {
  /** Bodies of the accepted `POST /v1/messages` requests, in order. */
  readonly messageRequests: () => Array<Record<string, unknown>>;
}

type Json = Record<string, unknown>;

function errorReply(
  status: number,
  type: string,
  message: string,
  headers?: Record<string, string>,
): HttpReply {
  return {
    status,
    body: { type: 'error', error: { type, message }, request_id: `req_test_${status}` },
    headers: { 'request-id': `req_test_${status}`, ...(headers ?? {}) },
  };
}

const protocolViolation = anthropicViolation;

/** Starts the server. Use `origin` as the SDK's `baseURL`. */
export async function startAnthropicServer(
  script: AnthropicScript,
  options: AnthropicServerOptions = {},
): Promise<AnthropicServer> {
  let toolUseCounter = 0;
  const server = await startScriptedServer(script, {
    refuse(req) {
      if (req.method !== 'POST' || req.path !== '/v1/messages')
        return errorReply(404, 'not_found_error', `no route ${req.method} ${req.path}`);
      if (wrongKey(req.headers, options.apiKey)) {
        return errorReply(401, 'authentication_error', 'invalid x-api-key');
      }
      if (!req.headers['anthropic-version'])
        return errorReply(400, 'invalid_request_error', 'anthropic-version: header is required');
      const body = req.body as Json | undefined;
      if (!body) return errorReply(400, 'invalid_request_error', 'body: invalid JSON');
      const violation = protocolViolation(body);
      return violation ? errorReply(400, 'invalid_request_error', violation) : null;
    },
    exhausted: (index) => errorReply(500, 'api_error', `script exhausted after ${index} replies`),
    answer(step, index, body) {
      if ('error' in step)
        return errorReply(step.error.status, step.error.type, step.error.message, step.error.headers);
      const content = step.content.map((b) =>
        b.type === 'tool_use'
          ? { ...b, id: b.id ?? `toolu_${String(++toolUseCounter).padStart(4, '0')}` }
          : options.nullCitations === false
            ? { ...b }
            : { ...b, citations: null },
      );
      const hasToolUse = content.some((b) => b.type === 'tool_use');
      return {
        status: 200,
        headers: { 'request-id': `req_${index}` },
        body: {
          id: `msg_${String(index).padStart(4, '0')}`,
          type: 'message',
          role: 'assistant',
          model: step.model ?? body.model,
          content: step.unreadable ? null : content,
          stop_reason: step.stop_reason ?? (hasToolUse ? 'tool_use' : 'end_turn'),
          stop_sequence: null,
          usage: {
            input_tokens: step.usage?.input_tokens ?? 10,
            output_tokens: step.usage?.output_tokens ?? 5,
            cache_creation_input_tokens: step.usage?.cache_creation_input_tokens ?? 0,
            cache_read_input_tokens: step.usage?.cache_read_input_tokens ?? 0,
            service_tier: 'standard',
          },
        },
      };
    },
  });
  return { ...server, messageRequests: server.accepted };
}
