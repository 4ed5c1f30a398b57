/**
 * A local server speaking OpenAI Chat Completions (`POST /v1/chat/completions`, non-
 * streaming) with scripted replies, for driving the real `openai` client — the same
 * surface vLLM and Ollama expose.
 *
 * Like the real API it rejects a conversation that breaks the tool protocol (each
 * assistant `tool_calls` entry needs a `role: 'tool'` message with its id before the
 * next non-tool message), so a planner bug shows up as a 400.
 */
import {
  startScriptedServer,
  wrongKey,
  type HttpReply,
  type RunningServer,
  type Script,
} from './http-script';
import { openaiViolation } from './protocol';

/** A tool call the scripted model makes; `arguments` is sent verbatim (it is JSON *text*). */
export interface ScriptedOpenAIToolCall {
  readonly id?: string;
  readonly name: string;
  readonly arguments: string;
}

/** One scripted model reply. */
export interface ScriptedOpenAIReply {
  readonly content?: string | null;
  readonly tool_calls?: readonly ScriptedOpenAIToolCall[];
  /** Default: `tool_calls` when there are tool calls, else `stop`. */
  readonly finish_reason?: string;
  readonly usage?: {
    readonly prompt_tokens?: number;
    readonly completion_tokens?: number;
    readonly cached_tokens?: number;
  };
  /** The model id echoed back; default the requested one. */
  readonly model?: string;
  /** A billed reply the planner cannot read: no choices, or a choice without its message. */
  readonly unreadable?: 'no_choices' | 'no_message';
}

/** A scripted API error. */
export interface ScriptedOpenAIError {
  readonly error: {
    readonly status: number;
    readonly type: string;
    readonly message: string;
    readonly code?: string;
    readonly headers?: Record<string, string>;
  };
}

/** A scripted step. */
export type OpenAIStep = ScriptedOpenAIReply | ScriptedOpenAIError;

/** The script: a list consumed in order, or a function of the request number (0-based). */
export type OpenAIScript = Script<OpenAIStep>;

/** Options of {@link startOpenAIServer}. */
export interface OpenAIServerOptions {
  /** When set, requests without `Authorization: Bearer <apiKey>` get a 401. */
  readonly apiKey?: string;
  /** Each reply waits this long (a real model's pace: time to stop a run in between). */
  readonly delayMs?: number;
}

/** A running scripted Chat Completions server. */
export interface OpenAIServer extends RunningServer {
  /** `origin + '/v1'`: the SDK's `baseURL`. */
  readonly baseURL: string;
  /** Bodies of the accepted `POST /v1/chat/completions` requests, in order. */
  readonly completionRequests: () => Array<Record<string, unknown>>;
}

type Json = Record<string, unknown>;

function errorReply(
  status: number,
  type: string,
  message: string,
  code: string | null = null,
  headers?: Record<string, string>,
): HttpReply {
  return {
    status,
    body: { error: { message, type, param: null, code } },
    headers: { 'x-request-id': `req_test_${status}`, ...(headers ?? {}) },
  };
}

const protocolViolation = openaiViolation;

/** Starts the server. Use `baseURL` as the SDK's `baseURL`. */
export async function startOpenAIServer(
  script: OpenAIScript,
  options: OpenAIServerOptions = {},
): Promise<OpenAIServer> {
  let callCounter = 0;
  const server = await startScriptedServer(
    script,
    {
      refuse(req) {
        if (req.method !== 'POST' || req.path !== '/v1/chat/completions')
          return errorReply(404, 'invalid_request_error', `Unknown request URL: ${req.method} ${req.path}`);
        if (wrongKey(req.headers, options.apiKey)) {
          return errorReply(401, 'invalid_request_error', 'Incorrect API key provided.', 'invalid_api_key');
        }
        const body = req.body as Json | undefined;
        if (!body)
          return errorReply(
            400,
            'invalid_request_error',
            'We could not parse the JSON body of your request.',
          );
        const violation = protocolViolation(body);
        return violation ? errorReply(400, 'invalid_request_error', violation) : null;
      },
      exhausted: (index) => errorReply(500, 'server_error', `script exhausted after ${index} replies`),
      answer(step, index, body) {
        if ('error' in step)
          return errorReply(
            step.error.status,
            step.error.type,
            step.error.message,
            step.error.code ?? null,
            step.error.headers,
          );
        const toolCalls = (step.tool_calls ?? []).map((tc) => ({
          id: tc.id ?? `call_${String(++callCounter).padStart(4, '0')}`,
          type: 'function',
          function: { name: tc.name, arguments: tc.arguments },
        }));
        const prompt = step.usage?.prompt_tokens ?? 10;
        const completion = step.usage?.completion_tokens ?? 5;
        return {
          status: 200,
          headers: { 'x-request-id': `req_${index}` },
          body: {
            id: `chatcmpl-${String(index).padStart(4, '0')}`,
            object: 'chat.completion',
            created: 1_700_000_000 + index,
            model: step.model ?? body.model,
            choices:
              step.unreadable === 'no_choices'
                ? []
                : [
                    {
                      index: 0,
                      message:
                        step.unreadable === 'no_message'
                          ? null
                          : {
                              role: 'assistant',
                              content: step.content ?? null,
                              refusal: null,
                              ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
                            },
                      logprobs: null,
                      finish_reason: step.finish_reason ?? (toolCalls.length > 0 ? 'tool_calls' : 'stop'),
                    },
                  ],
            usage: {
              prompt_tokens: prompt,
              completion_tokens: completion,
              total_tokens: prompt + completion,
              prompt_tokens_details: { cached_tokens: step.usage?.cached_tokens ?? 0 },
            },
          },
        };
      },
    },
    options.delayMs ? { delayMs: options.delayMs } : {},
  );
  return { ...server, baseURL: `${server.origin}/v1`, completionRequests: server.accepted };
}
