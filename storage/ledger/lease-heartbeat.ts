/**
 * The lease renewal loop of one execution of {@link executeOnce}: renews the claim's lease
 * every `leaseMs / 3` while the side effect runs, and says until when the lease is provably ours.
 */
import { StaleTokenError } from './errors';
import type { ExecuteOnceOptions } from './execute-once';
import type { Ledger } from './types';

/** The lease renewal loop of one execution. */
export interface Heartbeat {
  /** Aborted when the lease is lost (a renewal was rejected for a stale token). */
  signal: AbortSignal;
  /**
   * Local monotonic time (`performance.now()`) until which the lease is certainly ours: the
   * send time of the last successful renewal (or of the claim) plus `leaseMs`. The database
   * set the expiry after we sent the statement, so its expiry is never earlier than this.
   */
  provenUntil(): number;
  /** While true, no renewal starts and a renewal's stale answer is not taken for a lost lease. */
  committing(on: boolean): void;
  stop(): void;
}

export function startHeartbeat(
  ledger: Ledger,
  o: ExecuteOnceOptions,
  token: number,
  claimSentAt: number,
): Heartbeat {
  const controller = new AbortController();
  let inFlight = false;
  let renewedFrom = claimSentAt;
  let committing = false;
  const timer = setInterval(
    () => {
      if (inFlight || committing || controller.signal.aborted) return;
      inFlight = true;
      const sentAt = performance.now();
      ledger
        .renew(o.key, token, o.leaseMs)
        .then(() => {
          renewedFrom = Math.max(renewedFrom, sentAt);
        })
        .catch((err: unknown) => {
          // A renewal that fails for another reason (network blip) is retried on the next tick.
          if (err instanceof StaleTokenError && !committing) {
            controller.abort(err);
            o.onLeaseLost?.(err);
          }
        })
        .finally(() => {
          inFlight = false;
        });
    },
    Math.max(10, Math.floor(o.leaseMs / 3)),
  );
  timer.unref();
  return {
    signal: controller.signal,
    provenUntil: () => renewedFrom + o.leaseMs,
    committing: (on) => {
      committing = on;
    },
    stop: () => {
      committing = true;
      clearInterval(timer);
    },
  };
}
