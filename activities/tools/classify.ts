/**
 * Default classification of thrown errors into docs/spec.md §2 result kinds.
 */
import { ZodError } from 'zod';
import { ResultCode, type ToolResult } from '../../guard';
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

/**
 * A database that is busy, restarting or unreachable: SQLite's busy/locked codes and
 * PostgreSQL's connection (08…), shutdown/starting (57P01–57P03), too-many-connections
 * (53300), serialization (40001) and deadlock (40P01) SQLSTATEs. Nothing was done — the
 * statement did not commit — so the call may be tried again; it is never a final failure.
 */
const TRANSIENT_DB_CODES = new Set([
  'SQLITE_BUSY',
  'SQLITE_BUSY_SNAPSHOT',
  'SQLITE_BUSY_RECOVERY',
  'SQLITE_LOCKED',
  '57P01',
  '57P02',
  '57P03',
  '53300',
  '40001',
  '40P01',
]);
const isTransientDb = (code: string): boolean => TRANSIENT_DB_CODES.has(code) || /^08[0-9A-Z]{3}$/.test(code);

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
  // node-postgres reports a connection lost mid-query without a code.
  const lost = err instanceof Error && /^Connection terminated|is not queryable/.test(err.message);
  if ((typeof code === 'string' && isTransientDb(code)) || lost) {
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
