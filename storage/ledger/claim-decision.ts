/**
 * The claim rules of docs/spec.md §8, shared by both backends so they cannot drift apart.
 * Pure: the backend reads the row (lease remaining computed by the database) inside its
 * transaction, asks this function what to do, and applies the answer in the same transaction.
 */
import { sameArgsHash } from './args-hash';
import { LedgerConflictError } from './errors';
import { ExpiredDispatchPolicy, LedgerState, type ClaimInput } from './types';

/** The few columns of a stored row the decision needs. */
export interface ClaimRowView {
  key: string;
  tool: string;
  argsHash: string;
  /** The run holding the key (for a conflict's report); absent in views that do not read it. */
  runId?: string;
  state: LedgerState;
  /** Database-computed; null when the record has no lease (settled). */
  leaseRemainingMs: number | null;
}

/** What the backend must do for a claim. */
export type ClaimAction =
  | { do: 'insert' }
  | { do: 'replay_succeeded' }
  | { do: 'replay_failed' }
  | { do: 'report_unknown' }
  | { do: 'in_progress'; retryAfterMs: number }
  | { do: 'takeover'; from: typeof LedgerState.CLAIMED | typeof LedgerState.DISPATCHED }
  | { do: 'mark_unknown' };

/**
 * Decides a claim against the stored row. The args hashes must agree (a pre-upgrade row
 * may agree through `legacyArgsHash`, see {@link sameArgsHash}). Throws {@link LedgerConflictError} when the key
 * belongs to another operation — before any write, so the stored record is unchanged.
 */
export function decideClaim(row: ClaimRowView | undefined, input: ClaimInput): ClaimAction {
  if (!row) return { do: 'insert' };
  if (row.tool !== input.tool || !sameArgsHash(row.argsHash, input.argsHash, input.legacyArgsHash)) {
    throw new LedgerConflictError({
      key: input.key,
      storedTool: row.tool,
      requestedTool: input.tool,
      storedArgsHash: row.argsHash,
      requestedArgsHash: input.argsHash,
      storedRunId: row.runId ?? null,
    });
  }
  switch (row.state) {
    case LedgerState.SUCCEEDED:
      return { do: 'replay_succeeded' };
    case LedgerState.FAILED_FINAL:
      return { do: 'replay_failed' };
    case LedgerState.UNKNOWN:
      // Sticky: only an operator (or a reconcile that already ran) may settle it.
      return { do: 'report_unknown' };
    case LedgerState.CLAIMED:
    case LedgerState.DISPATCHED: {
      const remaining = row.leaseRemainingMs ?? 0;
      if (remaining > 0) return { do: 'in_progress', retryAfterMs: Math.max(1, Math.ceil(remaining)) };
      if (row.state === LedgerState.CLAIMED) return { do: 'takeover', from: LedgerState.CLAIMED };
      return (input.expiredDispatch ?? ExpiredDispatchPolicy.UNKNOWN) === ExpiredDispatchPolicy.TAKEOVER
        ? { do: 'takeover', from: LedgerState.DISPATCHED }
        : { do: 'mark_unknown' };
    }
  }
}

/** Validates claim input early, with messages an integrator can act on. */
export function assertClaimInput(input: ClaimInput): void {
  for (const field of ['key', 'tool', 'argsHash', 'runId', 'owner'] as const) {
    if (typeof input[field] !== 'string' || input[field].length === 0) {
      throw new TypeError(`ledger claim: "${field}" must be a non-empty string`);
    }
  }
  if (
    input.legacyArgsHash !== undefined &&
    (typeof input.legacyArgsHash !== 'string' || input.legacyArgsHash === '')
  )
    throw new TypeError('ledger claim: "legacyArgsHash" must be a non-empty string when given');
  assertLeaseMs(input.leaseMs);
}

/** A lease must be a positive, finite number of milliseconds. */
export function assertLeaseMs(leaseMs: number): void {
  if (!Number.isFinite(leaseMs) || leaseMs <= 0) {
    throw new TypeError(`ledger lease must be a positive number of milliseconds, got ${leaseMs}`);
  }
}
