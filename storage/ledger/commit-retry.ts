/**
 * The commit of a write whose side effect already ran, retried through a database blip while
 * the lease is provably the executor's: the one place a side effect's record may be written
 * more than once, made safe by the fencing token (a retry after someone took over is refused,
 * never applied; an earlier attempt that landed with its answer lost is recognised as ours).
 * Part of executeOnce (execute-once.ts), apart because it is its own small protocol.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { StaleTokenError } from './errors';
import { isTransientDatabaseError } from './transient-error';
import type { Heartbeat } from './lease-heartbeat';
import type { ExecuteOnceOptions } from './execute-once';
import { LedgerState, type Ledger } from './types';

/** One retry of a lost commit: the side effect ran, the ledger did not answer the commit. */
export interface CommitRetry {
  /** The commit attempt that failed (1 = the first commit). */
  attempt: number;
  /** Why it failed (a transient database error, see `isTransientDatabaseError`). */
  error: unknown;
  /** How long until the next attempt. */
  delayMs: number;
  /** How much longer the lease is provably ours (no other executor can have taken over before). */
  leaseLeftMs: number;
}

/** First pause between commit retries; doubled each time up to {@link COMMIT_RETRY_MAX_DELAY_MS}. */
const COMMIT_RETRY_BASE_DELAY_MS = 100;
const COMMIT_RETRY_MAX_DELAY_MS = 2_000;
/**
 * However often the lease is renewed meanwhile, a commit is retried for at most this many
 * lease lengths: a database that renews leases but keeps refusing one commit is not an outage.
 */
const COMMIT_RETRY_MAX_LEASES = 3;

/**
 * Stores the result of a side effect that succeeded. A commit that fails for a transient
 * reason (the database is unreachable, restarting, terminated our connection) is retried with
 * the SAME fencing token, with backoff, for as long as the lease is provably ours: until the
 * last successful renewal (or the claim) was sent plus `leaseMs`, less a tenth for safety, and
 * never longer than {@link COMMIT_RETRY_MAX_LEASES} leases. Before that deadline no other
 * executor can have claimed the key, so the retry commits what really happened; after it,
 * the error is thrown and the record stays DISPATCHED (the next claim follows the
 * expired-dispatch rule: UNKNOWN unless reconcile or vendor idempotency settles it).
 * The token guard keeps every retry safe: a retry after someone took over is rejected
 * ({@link StaleTokenError}), never applied.
 */
export async function commitWithRetry(
  ledger: Ledger,
  o: Pick<ExecuteOnceOptions, 'key' | 'leaseMs' | 'inCommit' | 'onCommitRetry'>,
  token: number,
  value: unknown,
  lease: Heartbeat,
): Promise<void> {
  let firstFailureAt: number | null = null;
  for (let attempt = 1; ; attempt++) {
    try {
      // Renewals pause while a commit is in flight: one landing after it would read as a lost lease.
      lease.committing(true);
      await (o.inCommit
        ? ledger.commit(o.key, token, value, o.inCommit)
        : ledger.commit(o.key, token, value));
      return;
    } catch (err) {
      if (err instanceof StaleTokenError) {
        // An earlier attempt landed and only its answer was lost: the record is ours, committed.
        if (attempt > 1 && (await committedByUs(ledger, o.key, token))) return;
        throw err;
      }
      if (!isTransientDatabaseError(err)) throw err;
      const now = performance.now();
      firstFailureAt ??= now;
      const deadline = Math.min(
        lease.provenUntil() - o.leaseMs / 10,
        firstFailureAt + COMMIT_RETRY_MAX_LEASES * o.leaseMs,
      );
      const delayMs = Math.min(COMMIT_RETRY_MAX_DELAY_MS, COMMIT_RETRY_BASE_DELAY_MS * 2 ** (attempt - 1));
      // The next attempt must start while the lease is still provably ours.
      if (now + delayMs >= deadline) throw err;
      o.onCommitRetry?.({ attempt, error: err, delayMs, leaseLeftMs: Math.round(deadline - now) });
      lease.committing(false);
      await sleep(delayMs);
    }
  }
}

/** True when `key` is SUCCEEDED under `token` by a commit (not an operator's resolution). */
async function committedByUs(ledger: Ledger, key: string, token: number): Promise<boolean> {
  const r = await ledger.get(key);
  return r !== null && r.state === LedgerState.SUCCEEDED && r.token === token && r.resolution === null;
}
