/**
 * Which ledger-database errors are an outage rather than an answer: the connection was
 * refused, reset or terminated, the pool timed out waiting for one, the server is shutting
 * down or not accepting connections, or a lock/serialisation conflict rolled the statement
 * back. Re-running a fenced ledger write after such an error is safe (the token guard makes
 * a write that already landed a no-op), so {@link executeOnce} retries its commit on them.
 */
import { isSqliteBusy } from '../sqlite-driver';

/** Node socket errors: the database could not be reached or the connection broke. */
const SOCKET_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
  'EAI_AGAIN',
]);

/** PostgreSQL SQLSTATEs after which nothing was applied and a retry may succeed. */
const PG_TRANSIENT_STATES: ReadonlySet<string> = new Set([
  '57P01', // admin_shutdown (pg_terminate_backend, a fast shutdown)
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now (starting up, shutting down, recovery)
  '57014', // query_canceled (statement_timeout): the statement rolled back
  '53300', // too_many_connections
  '40001', // serialization_failure
  '40P01', // deadlock_detected
]);

/** `pg`'s own errors carry no code; these messages mean the connection, not the statement, failed. */
const PG_CONNECTION_MESSAGES = [
  /connection terminated/i,
  /timeout exceeded when trying to connect/i,
  /not queryable/i,
] as const;

/**
 * True when `err` (or an error in its `cause` chain) says the ledger database was
 * unreachable or rolled the statement back for a reason a retry can outlive.
 */
export function isTransientDatabaseError(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    const message = e instanceof Error ? e.message : '';
    if (typeof code === 'string') {
      if (SOCKET_CODES.has(code) || PG_TRANSIENT_STATES.has(code)) return true;
      // Class 08: connection exception (08006 connection_failure, 08001, 08004…).
      if (/^08[0-9A-Z]{3}$/.test(code)) return true;
      // 55000 is broad; with this message it is `ALLOW_CONNECTIONS false` on the database.
      if (code === '55000' && /not currently accepting connections/i.test(message)) return true;
    }
    // SQLite: another connection holds the write lock past the busy timeout.
    if (isSqliteBusy(e)) return true;
    if (PG_CONNECTION_MESSAGES.some((m) => m.test(message))) return true;
  }
  return false;
}
