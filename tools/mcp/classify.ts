/**
 * MCP results and errors → the five result kinds of docs/spec.md §2. The whole mapping
 * lives here:
 *
 * | what came back                                                   | kind         | code               | retry/unmet            |
 * | ---------------------------------------------------------------- | ------------ | ------------------ | ---------------------- |
 * | result, `isError` absent/false                                   | SUCCESS      | —                  | data: see {@link resultData} |
 * | `isError: true` whose structuredContent is a §2 non-SUCCESS result | that kind  | its code           | its own                |
 * | `isError: true`, text `MCP error -32602: Tool … not found`       | PRECONDITION | `unknown_tool`     | the text               |
 * | `isError: true`, text `MCP error -32602: …` (server-side arg check) | PRECONDITION | `invalid_args`  | the text               |
 * | `isError: true`, otherwise                                       | `onError` override, default FATAL | `tool_error` | the text   |
 * | JSON-RPC error -32602 (invalid params)                           | PRECONDITION | `invalid_args` / `unknown_tool` when "not found" | the message |
 * | JSON-RPC error -32601 (method not found)                         | PRECONDITION | `unknown_tool`     | the message            |
 * | JSON-RPC error -32001 (request timeout)                          | RETRYABLE    | `mcp_timeout`      | server's `retryAfterMs` |
 * | JSON-RPC error -32000 (connection closed), any transport failure (dead server, refused connection, HTTP 404 session lost, 429, 5xx) | RETRYABLE | `mcp_unavailable` | server's `retryAfterMs` |
 * | HTTP 401 / 403 from a Streamable HTTP server                     | FATAL        | `permission_denied` | —                     |
 * | any other JSON-RPC error, anything else thrown                   | FATAL        | `tool_error`       | —                      |
 *
 * Transport failures reach this module as {@link McpUnavailableError} (client-pool.ts wraps
 * them), whose `sent` flag tells the MCP tool whether a write may have happened.
 *
 * The McpServer of the official SDK answers an unknown tool and its own argument check
 * with an `isError` result carrying the JSON-RPC text, not with a JSON-RPC error; both
 * forms map the same way.
 */
import { ResultCode, toolResultSchema, type ToolResult } from '../../guard';
import { DEFAULT_RETRY_AFTER_MS, messageOf } from '../classify';
import { McpUnavailableError } from './errors';
import { mcpSdk } from './sdk';

/** Codes this module gives besides the spec's. */
export const McpResultCode = {
  /** The server is down, restarting or unreachable, or the connection broke. */
  UNAVAILABLE: 'mcp_unavailable',
  /** The server did not answer within the call's timeout. */
  TIMEOUT: 'mcp_timeout',
} as const;

/** Upper bound of the text kept from a result (it lands in workflow history). */
export const MAX_RESULT_CHARS = 16_000;

/** How an `isError` result is classified when it says nothing more precise. */
export type OnError = 'RETRYABLE' | 'PRECONDITION' | 'FATAL';

/** The parts of a CallToolResult this module reads. */
export interface McpCallResult {
  readonly content?: readonly unknown[];
  readonly structuredContent?: unknown;
  readonly isError?: boolean;
  readonly toolResult?: unknown;
}

function truncate(text: string, max = MAX_RESULT_CHARS): string {
  return text.length > max ? `${text.slice(0, max)}…[truncated ${text.length - max} chars]` : text;
}

/** One content block as JSON-safe data; binary payloads are described, never copied. */
function contentText(block: unknown): string {
  const b = block as { type?: unknown; text?: unknown; mimeType?: unknown; data?: unknown; uri?: unknown };
  switch (b?.type) {
    case 'text':
      return typeof b.text === 'string' ? b.text : '';
    case 'image':
    case 'audio':
      return `[${b.type} ${String(b.mimeType ?? '')}, ${typeof b.data === 'string' ? b.data.length : 0} base64 chars]`;
    case 'resource_link':
      return `[resource ${String(b.uri ?? '')}]`;
    case 'resource': {
      const r = (block as { resource?: { uri?: unknown; text?: unknown } }).resource;
      return typeof r?.text === 'string' ? r.text : `[resource ${String(r?.uri ?? '')}]`;
    }
    default:
      return '';
  }
}

/** The text of a result's content blocks, joined by newlines. */
export function resultText(result: McpCallResult): string {
  return (result.content ?? [])
    .map(contentText)
    .filter((t) => t.length > 0)
    .join('\n');
}

/**
 * A SUCCESS result's `data`: the structuredContent when present, else the content's text
 * joined — bounded to {@link MAX_RESULT_CHARS} (a structuredContent too large becomes
 * `{ truncated: true, preview }`), since it is stored in workflow history and the ledger.
 */
export function resultData(result: McpCallResult): unknown {
  if (result.structuredContent !== undefined && result.structuredContent !== null) {
    const json = JSON.stringify(result.structuredContent);
    if (json.length <= MAX_RESULT_CHARS) return JSON.parse(json) as unknown;
    return { truncated: true, preview: truncate(json) };
  }
  if (result.toolResult !== undefined) return result.toolResult;
  return truncate(resultText(result));
}

const JSON_RPC_TEXT = /^MCP error (-?\d+): /;

function invalidParams(message: string): ToolResult {
  return /\btool\b.*\bnot found\b/i.test(message)
    ? { kind: 'PRECONDITION', code: ResultCode.UNKNOWN_TOOL, unmet: message }
    : { kind: 'PRECONDITION', code: ResultCode.INVALID_ARGS, unmet: message };
}

/** Classifies a CallToolResult (see the table above). */
export function classifyMcpResult(
  result: McpCallResult,
  options: { onError?: OnError; retryAfterMs?: number } = {},
): ToolResult {
  if (result.isError !== true) return { kind: 'SUCCESS', data: resultData(result) };
  const structured = toolResultSchema.safeParse(result.structuredContent);
  if (structured.success && structured.data.kind !== 'SUCCESS') return structured.data;
  const text = truncate(resultText(result) || 'the tool reported an error', 2000);
  const rpc = JSON_RPC_TEXT.exec(text);
  if (rpc && Number(rpc[1]) === mcpSdk().ErrorCode.InvalidParams) return invalidParams(text);
  switch (options.onError ?? 'FATAL') {
    case 'RETRYABLE':
      return {
        kind: 'RETRYABLE',
        code: ResultCode.TOOL_ERROR,
        retryAfterMs: options.retryAfterMs ?? DEFAULT_RETRY_AFTER_MS,
        message: text,
      };
    case 'PRECONDITION':
      return { kind: 'PRECONDITION', code: ResultCode.TOOL_ERROR, unmet: text };
    case 'FATAL':
      return { kind: 'FATAL', code: ResultCode.TOOL_ERROR, message: text };
  }
}

/** Classifies an error thrown by a call (see the table above). */
export function classifyMcpError(err: unknown, options: { retryAfterMs?: number } = {}): ToolResult {
  const retryAfterMs = options.retryAfterMs ?? DEFAULT_RETRY_AFTER_MS;
  const retryable = (code: string): ToolResult => ({
    kind: 'RETRYABLE',
    code,
    retryAfterMs,
    message: messageOf(err),
  });
  const { ErrorCode, McpError, StreamableHTTPError } = mcpSdk();
  if (err instanceof McpUnavailableError) {
    const cause = err.cause;
    if (cause instanceof StreamableHTTPError && (cause.code === 401 || cause.code === 403))
      return { kind: 'FATAL', code: ResultCode.PERMISSION_DENIED, message: messageOf(err) };
    if (cause instanceof McpError && cause.code === ErrorCode.RequestTimeout)
      return retryable(McpResultCode.TIMEOUT);
    return retryable(McpResultCode.UNAVAILABLE);
  }
  if (err instanceof McpError) {
    switch (err.code) {
      case ErrorCode.InvalidParams:
        return invalidParams(err.message);
      case ErrorCode.MethodNotFound:
        return { kind: 'PRECONDITION', code: ResultCode.UNKNOWN_TOOL, unmet: err.message };
      case ErrorCode.RequestTimeout:
        return retryable(McpResultCode.TIMEOUT);
      case ErrorCode.ConnectionClosed:
        return retryable(McpResultCode.UNAVAILABLE);
      default:
        return { kind: 'FATAL', code: ResultCode.TOOL_ERROR, message: messageOf(err) };
    }
  }
  return { kind: 'FATAL', code: ResultCode.TOOL_ERROR, message: messageOf(err) };
}
