/**
 * Default classification of thrown errors into docs/spec.md §2 result kinds.
 */
import { ZodError } from 'zod';
import { ResultCode, type ToolResult } from '../guard';
import { isTransientDatabaseError } from '../storage/ledger/transient-error';
import { FatalToolError, PreconditionToolError, RetryableToolError, ToolError } from './errors';

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EAI_AGAIN',
  'EPIPE',
  'ENOTFOUND',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_SOCKET',
]);

/** Default wait for a RETRYABLE without a server-given time. */
export const DEFAULT_RETRY_AFTER_MS = 1000;

function statusOf(err: unknown): number | undefined {
  const e = err as { status?: unknown; statusCode?: unknown; response?: { status?: unknown } };
  const s = e?.status ?? e?.statusCode ?? e?.response?.status;
  return typeof s === 'number' ? s : undefined;
}

function retryAfterOf(err: unknown): number | undefined {
  const e = err as {
    retryAfterMs?: unknown;
    headers?: Record<string, unknown> | { get?: (k: string) => unknown };
  };
  if (typeof e?.retryAfterMs === 'number') return e.retryAfterMs;
  const h = e?.headers as { get?: (k: string) => unknown } & Record<string, unknown>;
  const raw = typeof h?.get === 'function' ? h.get('retry-after') : h?.['retry-after'];
  const secs = typeof raw === 'string' || typeof raw === 'number' ? Number(raw) : NaN;
  return Number.isFinite(secs) ? secs * 1000 : undefined;
}

/** Short, single-line message of an error, safe for traces. */
export function messageOf(err: unknown): string {
  const m = err instanceof Error ? err.message : String(err);
  return m.length > 300 ? `${m.slice(0, 300)}…` : m;
}

/** Classifies a thrown error by the defaults of docs/spec.md §2. */
export function classifyError(err: unknown): ToolResult {
  if (err instanceof RetryableToolError) {
    return {
      kind: 'RETRYABLE',
      code: err.code,
      retryAfterMs: err.retryAfterMs ?? DEFAULT_RETRY_AFTER_MS,
      message: err.message,
    };
  }
  if (err instanceof PreconditionToolError) return { kind: 'PRECONDITION', code: err.code, unmet: err.unmet };
  if (err instanceof FatalToolError) return { kind: 'FATAL', code: err.code, message: err.message };
  if (err instanceof ZodError) {
    return { kind: 'PRECONDITION', code: ResultCode.INVALID_ARGS, unmet: formatZodError(err) };
  }
  if (err instanceof ToolError) return { kind: 'FATAL', code: err.code, message: err.message };
  const status = statusOf(err);
  if (status === 429 || (status !== undefined && status >= 500)) {
    return {
      kind: 'RETRYABLE',
      code: status === 429 ? 'rate_limited' : `http_${status}`,
      retryAfterMs: retryAfterOf(err) ?? DEFAULT_RETRY_AFTER_MS,
      message: messageOf(err),
    };
  }
  if (status === 401 || status === 403)
    return { kind: 'FATAL', code: ResultCode.PERMISSION_DENIED, message: messageOf(err) };
  if (status !== undefined && status >= 400) {
    return { kind: 'PRECONDITION', code: `http_${status}`, unmet: messageOf(err) };
  }
  const code = (err as { code?: unknown })?.code;
  if (typeof code === 'string' && NETWORK_CODES.has(code)) {
    return {
      kind: 'RETRYABLE',
      code: 'network',
      retryAfterMs: DEFAULT_RETRY_AFTER_MS,
      message: messageOf(err),
    };
  }
  // A busy, locked, restarting or unreachable database: nothing committed, try again (the
  // ledger's own list, so a tool and the ledger agree on what is transient).
  if (isTransientDatabaseError(err)) {
    return {
      kind: 'RETRYABLE',
      code: 'database_unavailable',
      retryAfterMs: DEFAULT_RETRY_AFTER_MS,
      message: messageOf(err),
    };
  }
  return { kind: 'FATAL', code: ResultCode.TOOL_ERROR, message: messageOf(err) };
}

/** One line naming each invalid field: `amount: Too small: expected number to be >0`. */
export function formatZodError(err: ZodError): string {
  return err.issues
    .map((i) => `${i.path.length ? i.path.map(String).join('.') : '(args)'}: ${i.message}`)
    .join('; ');
}
