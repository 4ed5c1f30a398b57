/**
 * The ledger's vocabulary: record states, the stored record, claim outcomes and the
 * {@link Ledger} interface both backends implement.
 */

/**
 * States of a ledger record.
 *
 * `CLAIMED` → `DISPATCHED` (intent written before the side effect) → `SUCCEEDED` |
 * `FAILED_FINAL` | `UNKNOWN` (the executor's lease expired after dispatch: nobody knows
 * whether the side effect happened; only an operator or a tool's reconcile settles it).
 */
export const LedgerState = {
  CLAIMED: 'CLAIMED',
  DISPATCHED: 'DISPATCHED',
  SUCCEEDED: 'SUCCEEDED',
  FAILED_FINAL: 'FAILED_FINAL',
  UNKNOWN: 'UNKNOWN',
} as const;
/** One of {@link LedgerState}. */
export type LedgerState = (typeof LedgerState)[keyof typeof LedgerState];
/** All ledger states, in lifecycle order. */
export const LEDGER_STATES = Object.values(LedgerState) as [LedgerState, ...LedgerState[]];

/** A failure as stored in the ledger (JSON-safe, replayed verbatim to duplicates). */
export interface StoredError {
  /** Error class name, e.g. `VendorRejected`. */
  name: string;
  /** Human-readable message. */
  message: string;
  /** Machine-readable code when the error had one (e.g. `card_declined`). */
  code?: string;
}

/** How an operator settled an UNKNOWN record: who, why and when. */
export interface LedgerResolution {
  /** What the operator decided happened. */
  as: 'succeeded' | 'failed';
  /** Who decided (user name, ticket system id). */
  actor: string;
  /** Why (evidence looked at, e.g. "vendor dashboard shows charge ch_123"). */
  reason: string;
  /** When, ISO 8601, in database time. */
  at: string;
  /** The state the record had before the resolution. */
  priorState: LedgerState;
}

/** One operation key's record, as stored. Times are ISO 8601 strings in database time. */
export interface LedgerRecord {
  /** The operation key (unique). */
  key: string;
  /** Tool name. */
  tool: string;
  /** Hash of the tool's canonical arguments; a duplicate with another hash is a conflict. */
  argsHash: string;
  /** Run (workflow id) that holds or held the claim. */
  runId: string;
  /** Executor identity (worker/activity attempt) that holds or held the claim. */
  owner: string;
  /** Current state. */
  state: LedgerState;
  /** Fencing token of the current claim; globally increasing, so a superseded executor's token is always smaller. */
  token: number;
  /** Lease expiry (database time); null once the record is settled. */
  leaseExpiresAt: string | null;
  /** Milliseconds until the lease expires, computed by the database at read time (negative = expired). */
  leaseRemainingMs: number | null;
  /** Stored result (JSON) of a SUCCEEDED record. */
  result: unknown;
  /** Stored failure of a FAILED_FINAL record, or the last transient failure. */
  error: StoredError | null;
  /** How many claims were granted for this key. */
  attempts: number;
  /** When the key was first claimed. */
  createdAt: string;
  /** Last change. */
  updatedAt: string;
  /** When the intent to perform the side effect was written. */
  dispatchedAt: string | null;
  /** When the record reached SUCCEEDED / FAILED_FINAL / UNKNOWN. */
  finishedAt: string | null;
  /** Operator resolution, if the record was settled by hand. */
  resolution: LedgerResolution | null;
}

/** What happens to a DISPATCHED record whose lease expired when someone claims it. */
export const ExpiredDispatchPolicy = {
  /** The default: the outcome is unknown, the record becomes UNKNOWN and nobody re-executes. */
  UNKNOWN: 'unknown',
  /**
   * The claimer takes the record over (still DISPATCHED, new token) because it can make
   * re-execution safe: the tool is vendor-idempotent, or it can reconcile the outcome.
   */
  TAKEOVER: 'takeover',
} as const;
/** One of {@link ExpiredDispatchPolicy}. */
export type ExpiredDispatchPolicy = (typeof ExpiredDispatchPolicy)[keyof typeof ExpiredDispatchPolicy];

/** Input of {@link Ledger.claim}. */
export interface ClaimInput {
  /** Operation key (never a random id: the same business operation must produce the same key). */
  key: string;
  /** Tool name. */
  tool: string;
  /** Hash of the canonical arguments: `sha256:<hex>` (storage/ledger/args-hash.ts). */
  argsHash: string;
  /**
   * The hash a record of this call had before args hashes were SHA-256 (the guard's
   * fingerprint). A stored row whose hash is not SHA-256-shaped and equals it is the same
   * operation, not a conflict; a SHA-256 row is compared with `argsHash` only.
   */
  legacyArgsHash?: string;
  /** Run (workflow id). */
  runId: string;
  /** Executor identity, for operators (e.g. `worker-3/activity-17/attempt-2`). */
  owner: string;
  /** Lease length; renew it with {@link Ledger.renew} while the side effect runs. */
  leaseMs: number;
  /** Policy for an expired DISPATCHED record; default {@link ExpiredDispatchPolicy.UNKNOWN}. */
  expiredDispatch?: ExpiredDispatchPolicy;
}

/** Outcome of {@link Ledger.claim}. Only `claimed` allows the caller to execute. */
export type ClaimOutcome =
  | {
      kind: 'claimed';
      /** Fencing token: pass it to dispatch/commit/fail/renew. */
      token: number;
      /**
       * Null for a fresh claim. `CLAIMED`: a previous executor died before dispatch (safe to
       * execute). `DISPATCHED`: a previous executor died after dispatch and the claimer asked
       * for takeover — reconcile or re-execute vendor-idempotently, never blindly.
       */
      takenOverFrom: null | typeof LedgerState.CLAIMED | typeof LedgerState.DISPATCHED;
    }
  | { kind: 'succeeded'; result: unknown }
  | { kind: 'failed_final'; error: StoredError }
  | {
      kind: 'in_progress';
      /** Database-computed time until the holder's lease expires (at least 1). */
      retryAfterMs: number;
    }
  | { kind: 'unknown'; record: LedgerRecord };

/** Input of {@link Ledger.resolve}. */
export interface ResolveInput {
  /** What the operator established happened. */
  as: 'succeeded' | 'failed';
  /** Who decides. Required, non-empty. */
  actor: string;
  /** Why. Required, non-empty. */
  reason: string;
  /** Result to replay to duplicates when `as` is `succeeded` (default null). */
  result?: unknown;
}

/** Options of {@link Ledger.fail}. */
export interface FailOptions {
  /**
   * True: the failure is permanent; it is stored as FAILED_FINAL and replayed to duplicates.
   * False: transient. Before dispatch the claim is released so a later attempt executes;
   * after dispatch the lease is released but the record stays DISPATCHED (the side effect
   * may have happened), so the next claim follows the expired-dispatch policy.
   */
  final: boolean;
  /**
   * For a non-final failure after dispatch: true when the tool knows the side effect did not
   * happen (connection refused, HTTP 429 before processing). The claim is then released as
   * if never dispatched. Leave it unset when in doubt — a wrong `true` allows a duplicate.
   */
  notPerformed?: boolean;
}

/**
 * A small portable SQL interface for business writes inside the ledger's transaction.
 * Use `?` placeholders on both backends (translated to `$1…` for PostgreSQL).
 */
export interface LedgerTx {
  /** Runs a statement; returns the number of rows changed. */
  run(sql: string, params?: readonly unknown[]): Promise<{ changes: number }>;
  /** Runs a query; returns all rows. */
  all<T = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<T[]>;
  /** Runs a query; returns the first row or undefined. */
  get<T = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<T | undefined>;
}

/** Filter of {@link Ledger.list}. */
export interface ListOptions {
  /** Only records in this state. */
  state?: LedgerState;
  /** Only records of this run (its workflow id): every operation a long run completed. */
  runId?: string;
  /** At most this many (default 100), newest first. */
  limit?: number;
}

/** Which backend a ledger uses. */
export type LedgerBackend = 'sqlite' | 'postgres';

/**
 * The completed-operation ledger: makes "no duplicate side effect" true for at-least-once
 * activities. All lease arithmetic happens in database time. Implementations:
 * `SqliteLedger`, `PostgresLedger`; open one with `openLedger(url)`.
 */
export interface Ledger {
  /** Which backend this is. */
  readonly backend: LedgerBackend;
  /** Applies pending versioned migrations; safe to call concurrently from several workers. */
  migrate(): Promise<void>;
  /**
   * Claims `key`. Throws `LedgerConflictError` when the key is stored with other args or tool
   * (the stored record is unchanged).
   */
  claim(input: ClaimInput): Promise<ClaimOutcome>;
  /** Writes the intent (CLAIMED → DISPATCHED) right before the side effect. Stale token → `StaleTokenError`. */
  dispatch(key: string, token: number): Promise<void>;
  /**
   * Stores the result (→ SUCCEEDED). Stale token → `StaleTokenError`. With `also`, its writes
   * (the runtime's tool counter, the run's progress fact) run in the same transaction, after
   * the token was checked: one durable commit instead of several.
   */
  commit(
    key: string,
    token: number,
    result: unknown,
    also?: (tx: LedgerTx) => Promise<void> | void,
  ): Promise<void>;
  /**
   * Runs `work` and the commit in one database transaction: either the business write and
   * SUCCEEDED are both stored, or neither. The token is checked before `work` runs.
   */
  commitWith<T>(key: string, token: number, work: (tx: LedgerTx) => Promise<T> | T): Promise<T>;
  /**
   * The claim, `work` and the commit in ONE database transaction, for a key nobody has
   * claimed yet (the common case of a business write that lives in the ledger's database):
   * one durable write instead of two. Answers null, having changed nothing, when `key` has a
   * record already: the caller then takes the {@link claim} → {@link commitWith} path, which
   * decides what that record means. A throw from `work` rolls everything back (no record
   * remains, as a released claim) and is rethrown. Throws `TypeError` on a malformed input.
   * (A SQL ledger has it.)
   */
  claimCommitWith?<T>(
    input: ClaimInput,
    work: (tx: LedgerTx, token: number) => Promise<T> | T,
  ): Promise<{ token: number; value: T } | null>;
  /** Records a failure; see {@link FailOptions}. Stale token → `StaleTokenError`. */
  fail(key: string, token: number, error: unknown, options: FailOptions): Promise<void>;
  /** Marks a DISPATCHED record UNKNOWN on purpose (e.g. reconcile could not tell). */
  markUnknown(key: string, token: number, note: string): Promise<void>;
  /** Extends the lease (heartbeat) from database now. Stale token → `StaleTokenError`. */
  renew(key: string, token: number, leaseMs: number): Promise<void>;
  /** The record for `key`, or null. */
  get(key: string): Promise<LedgerRecord | null>;
  /** Records, newest first. */
  list(options?: ListOptions): Promise<LedgerRecord[]>;
  /**
   * Settles an UNKNOWN record (or a DISPATCHED one whose lease expired) by operator decision,
   * storing who, why and when. Returns the updated record.
   */
  resolve(key: string, input: ResolveInput): Promise<LedgerRecord>;
  /**
   * Deletes SUCCEEDED / FAILED_FINAL records finished more than `ttlMs` ago; never live or
   * UNKNOWN ones. With `runIds`, only records of those runs (the reaper passes the runs it
   * found closed). Answers the number deleted.
   */
  reap(ttlMs: number, options?: ReapOptions): Promise<number>;
  /**
   * The runs that own records {@link reap} would delete, or rows {@link reapRunData} would
   * (a run with no ledger records at all, a read-only one, is found by those), ordered by
   * run id, at most `limit` (default 100) after `after`: the reaper checks each is closed
   * before reaping it.
   */
  reapableRuns(ttlMs: number, options?: ReapableRunsOptions): Promise<string[]>;
  /**
   * Deletes what else the ledger's database keeps of these runs — the planner's
   * conversation, its idempotent turns and the payload store's rows — for each run whose
   * newest such row was written more than `ttlMs` ago (database time). The reaper passes
   * only runs it found closed. Answers the rows deleted. (A SQL ledger has it.)
   */
  reapRunData?(ttlMs: number, runIds: readonly string[]): Promise<number>;
  /** Releases the connection(s). */
  close(): Promise<void>;
}

/** Options of {@link Ledger.reap}. */
export interface ReapOptions {
  /** Only records of these runs; an empty list deletes nothing. */
  runIds?: readonly string[];
}

/** Options of {@link Ledger.reapableRuns}. */
export interface ReapableRunsOptions {
  /** Only run ids greater than this (keyset paging). */
  after?: string;
  /** At most this many (default 100). */
  limit?: number;
}

/**
 * Default retention of settled records: 30 days — longer than the default resume window
 * (7 days), so a run that stops, waits and resumes finds its completed writes still there.
 */
export const DEFAULT_REAP_TTL_MS = 30 * 24 * 60 * 60 * 1000;
