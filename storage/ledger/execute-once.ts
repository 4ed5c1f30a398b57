/**
 * The one way a write tool runs: claim → dispatch → side effect → commit, with the lease
 * renewed while the side effect runs, and every ledger answer turned into an outcome the
 * tool activity maps to a result kind (docs/spec.md §2). No path executes a side effect twice for
 * one key unless the tool declared re-execution safe (`vendorIdempotent`).
 */
import { LedgerConflictError, StaleTokenError } from './errors';
import { toStoredError } from './stored-error';
import { startHeartbeat } from './lease-heartbeat';
import { commitWithRetry, type CommitRetry } from './commit-retry';

export type { CommitRetry } from './commit-retry';
import {
  ExpiredDispatchPolicy,
  LedgerState,
  type ClaimInput,
  type Ledger,
  type LedgerRecord,
  type LedgerTx,
  type StoredError,
} from './types';

/** What a tool's reconcile lookup found out about an operation whose executor died after dispatch. */
export type ReconcileAnswer =
  | { status: 'succeeded'; result: unknown }
  | { status: 'failed'; error: unknown }
  /** The vendor has no trace of it: the side effect did not happen, so executing now is safe. */
  | { status: 'not_found' }
  | { status: 'unknown' };

/** How a thrown side-effect error affects the ledger. */
export const SideEffectErrorClass = {
  /** Permanent (e.g. card declined): stored as FAILED_FINAL and replayed to duplicates. */
  FINAL: 'final',
  /** Transient and known not to have happened (connection refused, 429): the claim is released. */
  NOT_PERFORMED: 'not_performed',
  /** Transient, and it may have happened (timeout): the intent stays, the next claim follows the expired-dispatch rule. */
  UNKNOWN_OUTCOME: 'unknown_outcome',
} as const;
/** One of {@link SideEffectErrorClass}. */
export type SideEffectErrorClass = (typeof SideEffectErrorClass)[keyof typeof SideEffectErrorClass];

/**
 * Options of {@link executeOnce} and {@link executeOnceAtomic}: the claim (key = the tool's
 * `operationKey(args)`, argsHash = `sha256ArgsHash(tool, canonicalArgs)`, owner =
 * `${workerIdentity}/${activityId}/${attempt}`, leaseMs = renewed every `leaseMs / 3` while
 * the side effect runs), and what the tool can do about an executor that died after dispatch —
 * which decides the claim's expired-dispatch policy.
 */
export interface ExecuteOnceOptions extends Omit<ClaimInput, 'expiredDispatch'> {
  /** The tool forwards the key to the vendor, so re-executing after an unknown outcome is safe. */
  vendorIdempotent?: boolean;
  /** Asks the vendor what happened to `key`; used instead of UNKNOWN after an executor died post-dispatch. */
  reconcile?: (key: string) => Promise<ReconcileAnswer>;
  /** Classifies a thrown side-effect error; default: {@link SideEffectErrorClass.UNKNOWN_OUTCOME} (safe). */
  classifyError?: (error: unknown) => SideEffectErrorClass;
  /** Called when the lease could not be renewed (another executor owns the key now). */
  onLeaseLost?: (error: unknown) => void;
  /**
   * Called before each retry of a commit that failed for a transient reason after the side
   * effect succeeded (see {@link CommitRetry}); e.g. to heartbeat the activity or count retries.
   */
  onCommitRetry?: (retry: CommitRetry) => void;
  /**
   * More writes for the transaction that stores SUCCEEDED after the side effect ran now (the
   * runtime's tool counter and the run's progress fact, in the ledger's database): the one
   * commit carries them instead of a transaction each. Runs only on that path; the caller
   * knows it ran when the outcome is `executed`.
   */
  inCommit?: (tx: LedgerTx) => Promise<void> | void;
}

/** Passed to the side effect. */
export interface SideEffectContext {
  /** The operation key; forward it to the vendor as its idempotency key when it supports one. */
  key: string;
  /** The fencing token of this execution. */
  token: number;
  /** Aborted when the lease is lost; a side effect that has not started its write yet should stop. */
  signal: AbortSignal;
  /** True when a previous executor died after dispatch and this is a vendor-idempotent re-execution. */
  reExecution: boolean;
}

/** Passed to an atomic write's work ({@link executeOnceAtomic}): the key, the token, and whether it re-runs a lost dispatch. */
export type AtomicWorkContext = Pick<SideEffectContext, 'key' | 'token' | 'reExecution'>;

/** What {@link executeOnce} did. `executed` is the only kind in which the side effect ran. */
export type ExecuteOutcome<T> =
  | { kind: 'executed'; key: string; result: T }
  /** Zero tool calls: the stored result (from the ledger, or settled by reconcile). */
  | { kind: 'cached'; key: string; result: unknown; source: 'ledger' | 'reconcile' }
  /** Another executor holds a live lease: retryable after `retryAfterMs`, never a second execution. */
  | { kind: 'in_progress'; key: string; retryAfterMs: number }
  /** An executor died after dispatch; nobody knows whether it happened: NEEDS_HUMAN with this key. */
  | { kind: 'unknown'; key: string; record: LedgerRecord | null }
  /** A permanent failure, freshly stored (`replayed: false`) or replayed from the ledger. */
  | { kind: 'failed_final'; key: string; error: StoredError; replayed: boolean }
  /** A transient failure; a later attempt may run (or, after dispatch, follows the expired-dispatch rule). */
  | { kind: 'failed_retryable'; key: string; error: StoredError }
  /** Same key, other arguments: non-retryable, nothing executed, stored record unchanged. */
  | { kind: 'conflict'; key: string; error: LedgerConflictError };

type Settled = Exclude<ExecuteOutcome<never>, { kind: 'executed' }>;

/**
 * Runs `sideEffect` at most once per `key` (exactly once once it reports success) across
 * retries, crashes, re-plans and racing workers. See docs/ledger.md for the state machine.
 */
export async function executeOnce<T>(
  ledger: Ledger,
  options: ExecuteOnceOptions,
  sideEffect: (ctx: SideEffectContext) => Promise<T>,
): Promise<ExecuteOutcome<T>> {
  const { key } = options;
  // Sent before the claim: the lease the database grants ends no earlier than this + leaseMs.
  const claimSentAt = performance.now();
  const claimed = await claimOrSettle(ledger, options);
  if ('kind' in claimed) return claimed;
  const { token, takenOverFrom } = claimed;

  let reExecution = false;
  if (takenOverFrom === LedgerState.DISPATCHED) {
    const settled = await settleDeadDispatch(ledger, options, token);
    if (settled) return settled;
    reExecution = true;
  }

  try {
    await ledger.dispatch(key, token);
  } catch (err) {
    if (err instanceof StaleTokenError) return afterStale(ledger, key);
    throw err;
  }

  const heartbeat = startHeartbeat(ledger, options, token, claimSentAt);
  let value: T;
  try {
    value = await sideEffect({ key, token, signal: heartbeat.signal, reExecution });
  } catch (err) {
    heartbeat.stop();
    return recordFailure(ledger, options, token, err);
  }

  // The side effect happened: the heartbeat keeps renewing the lease while the commit retries.
  try {
    await commitWithRetry(ledger, options, token, value, heartbeat);
  } catch (err) {
    if (err instanceof StaleTokenError) return afterStale(ledger, key);
    throw err;
  } finally {
    heartbeat.stop();
  }
  return { kind: 'executed', key, result: value };
}

/**
 * Like {@link executeOnce}, for side effects that live in the ledger's own database (the demo
 * world's tables): `work` runs inside the commit transaction, so the business write and the
 * SUCCEEDED record are stored together or not at all, and a crash can never leave it UNKNOWN.
 * A key nobody has claimed (the common case) is claimed in that same transaction too
 * ({@link Ledger.claimCommitWith}): one durable write per call.
 */
export async function executeOnceAtomic<T>(
  ledger: Ledger,
  options: ExecuteOnceOptions,
  work: (tx: LedgerTx, ctx: AtomicWorkContext) => Promise<T> | T,
): Promise<ExecuteOutcome<T>> {
  const { key } = options;
  if (ledger.claimCommitWith) {
    const fast = await claimCommitAtOnce(ledger, options, work);
    if (fast) return fast;
  }
  const claimed = await claimOrSettle(ledger, options);
  if ('kind' in claimed) return claimed;
  const { token, takenOverFrom } = claimed;
  let reExecution = false;
  if (takenOverFrom === LedgerState.DISPATCHED) {
    // Only a non-atomic executor dispatches; treat a mix of paths like any dead dispatch.
    const settled = await settleDeadDispatch(ledger, options, token);
    if (settled) return settled;
    reExecution = true;
  }
  try {
    const value = await ledger.commitWith(key, token, async (tx) => {
      const v = await work(tx, { key, token, reExecution });
      await options.inCommit?.(tx);
      return v;
    });
    return { kind: 'executed', key, result: value };
  } catch (err) {
    if (err instanceof StaleTokenError) return afterStale(ledger, key);
    // The transaction rolled back, so nothing happened: a transient error releases the claim.
    const cls = options.classifyError?.(err) ?? SideEffectErrorClass.NOT_PERFORMED;
    return recordFailure(ledger, { ...options, classifyError: () => cls }, token, err, true);
  }
}

/**
 * {@link executeOnceAtomic}'s common case, a key nobody has claimed: claim, business write and
 * SUCCEEDED in one transaction. Null when the key has a record (the caller takes the claim →
 * commitWith path, which decides what the record means). `work` threw: the transaction rolled
 * back, so nothing happened and no claim remains (as a released one); a FINAL failure is then
 * claimed and stored like the two-step path does, so every duplicate is answered with it.
 */
async function claimCommitAtOnce<T>(
  ledger: Ledger,
  o: ExecuteOnceOptions,
  work: (tx: LedgerTx, ctx: AtomicWorkContext) => Promise<T> | T,
): Promise<ExecuteOutcome<T> | null> {
  const { key } = o;
  let thrown: { err: unknown } | null = null;
  try {
    const done = await ledger.claimCommitWith!(claimInput(o), async (tx, token) => {
      let value: T;
      try {
        value = await work(tx, { key, token, reExecution: false });
      } catch (err) {
        thrown = { err };
        throw err;
      }
      await o.inCommit?.(tx);
      return value;
    });
    return done ? { kind: 'executed', key, result: done.value } : null;
  } catch (err) {
    // Not the business write's failure (the database refused the claim): as a failed claim.
    if (thrown === null) throw err;
    const failure = (thrown as { err: unknown }).err;
    const cls = o.classifyError?.(failure) ?? SideEffectErrorClass.NOT_PERFORMED;
    if (cls !== SideEffectErrorClass.FINAL)
      return { kind: 'failed_retryable', key, error: toStoredError(failure) };
    const claimed = await claimOrSettle(ledger, o);
    if ('kind' in claimed) return claimed;
    return recordFailure(ledger, { ...o, classifyError: () => cls }, claimed.token, failure, true);
  }
}

/** The claim `o` describes. */
function claimInput(o: ExecuteOnceOptions): ClaimInput {
  return {
    key: o.key,
    tool: o.tool,
    argsHash: o.argsHash,
    ...(o.legacyArgsHash !== undefined ? { legacyArgsHash: o.legacyArgsHash } : {}),
    runId: o.runId,
    owner: o.owner,
    leaseMs: o.leaseMs,
    expiredDispatch:
      o.vendorIdempotent || o.reconcile ? ExpiredDispatchPolicy.TAKEOVER : ExpiredDispatchPolicy.UNKNOWN,
  };
}

async function claimOrSettle(
  ledger: Ledger,
  o: ExecuteOnceOptions,
): Promise<Settled | { token: number; takenOverFrom: null | LedgerState }> {
  try {
    const c = await ledger.claim(claimInput(o));
    switch (c.kind) {
      case 'claimed':
        return { token: c.token, takenOverFrom: c.takenOverFrom };
      case 'succeeded':
        return { kind: 'cached', key: o.key, result: c.result, source: 'ledger' };
      case 'failed_final':
        return { kind: 'failed_final', key: o.key, error: c.error, replayed: true };
      case 'in_progress':
        return { kind: 'in_progress', key: o.key, retryAfterMs: c.retryAfterMs };
      case 'unknown':
        return { kind: 'unknown', key: o.key, record: c.record };
    }
  } catch (err) {
    if (err instanceof LedgerConflictError) return { kind: 'conflict', key: o.key, error: err };
    throw err;
  }
}

/**
 * A previous executor died after dispatch and we hold the takeover claim. Returns the settled
 * outcome, or null when executing is safe (vendor-idempotent, or the vendor never saw it).
 */
async function settleDeadDispatch(
  ledger: Ledger,
  o: ExecuteOnceOptions,
  token: number,
): Promise<Settled | null> {
  if (o.reconcile) {
    let answer: ReconcileAnswer;
    try {
      answer = await o.reconcile(o.key);
    } catch (err) {
      answer = { status: 'unknown' };
      if (!o.vendorIdempotent)
        return markUnknown(ledger, o.key, token, `reconcile failed: ${toStoredError(err).message}`);
    }
    try {
      switch (answer.status) {
        case 'succeeded':
          await ledger.commit(o.key, token, answer.result);
          return { kind: 'cached', key: o.key, result: answer.result ?? null, source: 'reconcile' };
        case 'failed':
          await ledger.fail(o.key, token, answer.error, { final: true });
          return { kind: 'failed_final', key: o.key, error: toStoredError(answer.error), replayed: true };
        case 'not_found':
          return null;
        case 'unknown':
          if (o.vendorIdempotent) return null;
          return markUnknown(
            ledger,
            o.key,
            token,
            'reconcile could not tell whether the side effect happened',
          );
      }
    } catch (err) {
      if (err instanceof StaleTokenError) return afterStale(ledger, o.key);
      throw err;
    }
  }
  return o.vendorIdempotent ? null : markUnknown(ledger, o.key, token, 'executor died after dispatch');
}

async function markUnknown(ledger: Ledger, key: string, token: number, note: string): Promise<Settled> {
  try {
    await ledger.markUnknown(key, token, note);
  } catch (err) {
    if (err instanceof StaleTokenError) return afterStale(ledger, key);
    throw err;
  }
  return { kind: 'unknown', key, record: await ledger.get(key) };
}

async function recordFailure(
  ledger: Ledger,
  o: ExecuteOnceOptions,
  token: number,
  err: unknown,
  rolledBack = false,
): Promise<Settled> {
  const error = toStoredError(err);
  const cls = o.classifyError?.(err) ?? SideEffectErrorClass.UNKNOWN_OUTCOME;
  try {
    if (cls === SideEffectErrorClass.FINAL) {
      await ledger.fail(o.key, token, err, { final: true });
      return { kind: 'failed_final', key: o.key, error, replayed: false };
    }
    await ledger.fail(o.key, token, err, {
      final: false,
      notPerformed: rolledBack || cls === SideEffectErrorClass.NOT_PERFORMED,
    });
    return { kind: 'failed_retryable', key: o.key, error };
  } catch (e) {
    if (e instanceof StaleTokenError) return afterStale(ledger, o.key);
    throw e;
  }
}

/** Our token lost ownership; report what the record says now instead of guessing. */
async function afterStale(ledger: Ledger, key: string): Promise<Settled> {
  const r = await ledger.get(key);
  if (r?.state === LedgerState.SUCCEEDED) return { kind: 'cached', key, result: r.result, source: 'ledger' };
  if (r?.state === LedgerState.FAILED_FINAL && r.error) {
    return { kind: 'failed_final', key, error: r.error, replayed: true };
  }
  if (
    r &&
    (r.state === LedgerState.CLAIMED || r.state === LedgerState.DISPATCHED) &&
    (r.leaseRemainingMs ?? 0) > 0
  ) {
    return { kind: 'in_progress', key, retryAfterMs: Math.ceil(r.leaseRemainingMs ?? 1) };
  }
  return { kind: 'unknown', key, record: r };
}
