/** The records of the approval store: approvals, their states, and the audit trail. */
import type { OperatorAuth } from '../../common/operator-auth';

/**
 * What the append-only audit records. `submitted`: an approval stored by a client that could
 * not verify it (no operators file): evidence of a request, not of an approval; the worker
 * decides when it is used (`consumed`) or refused (`refused`). `approved`: stored by a store
 * whose verifier (the operators) accepted it. Rows written before migration 10 used `approved`
 * for both (docs/security.md "The audit").
 */
export const AUDIT_ACTIONS = ['requested', 'submitted', 'approved', 'denied', 'consumed', 'refused'] as const;
/** One of {@link AUDIT_ACTIONS}. */
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/**
 * Where an approval stands now: `valid` (may authorise its call once), `used`, `expired`
 * (its TTL passed unused) or `denied` (a denial row, or an approval withdrawn by a denial).
 */
export type ApprovalState = 'valid' | 'used' | 'expired' | 'denied';

/** One stored approval (or denial): bound to a run, one of its stops and one call. */
export interface ApprovalRecord {
  readonly id: string;
  readonly runId: string;
  /** The stop it was granted for: the StopReport's `last_safe_checkpoint` (`checkpoint-<steps>`). */
  readonly stopRef: string;
  readonly tool: string;
  /** The blocked call's fingerprint (docs/spec.md §1): the call this approval authorises. */
  readonly fingerprint: string;
  /**
   * The call's digest, `sha256:<64 hex>` of its tool and canonical args (docs/security.md
   * "What an approval binds"): the exact call it authorises. Null only on rows stored before
   * approvals were bound to the digest; such a row never authorises anything.
   */
  readonly argsHash: string | null;
  /** Who approved (or denied): today the operator's `--actor`, later a verified identity. */
  readonly approver: string;
  readonly reason: string;
  readonly createdAt: string;
  readonly expiresAt: string;
  readonly usedAt: string | null;
  /** Which activity execution used it (`<runId>/<activityId>`). */
  readonly usedByActivity: string | null;
  readonly deniedAt: string | null;
  readonly state: ApprovalState;
  /**
   * The approver's signature over the decision (docs/security.md "Signed approvals"), or null
   * when it was stored unsigned. Verified by the worker wherever the approval is used.
   */
  readonly auth: OperatorAuth | null;
}

/** One row of the append-only audit. */
export interface AuditEntry {
  readonly id: number;
  readonly at: string;
  readonly action: AuditAction;
  readonly runId: string;
  readonly approvalId: string | null;
  readonly actor: string;
  readonly detail: string | null;
}

/** The call and the stop an approval or a denial is for. */
export interface ApprovalTarget {
  readonly runId: string;
  readonly stopRef: string;
  readonly tool: string;
  /** The guard's fingerprint of the call (repeat counting; not a security boundary). */
  readonly fingerprint: string;
  /**
   * The call's digest (`sha256:<64 hex>`, the StopReport's `blocked_call.args_digest`): the
   * exact call an approval authorises. Required: an approval without one is refused.
   */
  readonly argsHash: string;
}

/** Who decides and why: with a signature, `actor` is the signing operator. */
export interface Decider {
  readonly actor: string;
  readonly reason: string;
}

/**
 * A decision the operator signed before it was stored: the row id the signature names (so it
 * authorises exactly one row) and the signature. See {@link approvalSignedFields}.
 */
export interface SignedDecision {
  /** The row's id (`apr_…` for an approval, `den_…` for a denial), chosen by the signer. */
  readonly id: string;
  readonly auth: OperatorAuth;
}

/** A signed approval: its signature covers the expiry too, which is stored as signed. */
export interface SignedGrant extends SignedDecision {
  /** Until when the approval may be used (ms since the epoch); becomes `expires_at`. */
  readonly expiresAtMs: number;
}

/** Input of {@link ApprovalStore.grant}. */
export interface GrantInput extends ApprovalTarget, Decider {
  /** How long the approval stays usable (database time), milliseconds; unsigned grants only. */
  readonly ttlMs: number;
  /** The operator's signature; then the signed expiry replaces `ttlMs`. */
  readonly signed?: SignedGrant;
}

/** Input of {@link ApprovalStore.deny}. */
export interface DenyInput extends ApprovalTarget, Decider {
  readonly signed?: SignedDecision;
}

/** Input of {@link ApprovalStore.consume}. */
export interface ConsumeInput {
  readonly approvalId: string;
  readonly runId: string;
  readonly fingerprint: string;
  /** The digest of the call about to run, computed by the worker from its args. */
  readonly argsHash: string;
  /**
   * The stop the run is lifting (its `last_safe_checkpoint`), as the workflow sends it: the
   * approval is used only when it was granted for exactly this stop. Null or absent: refused.
   */
  readonly stopRef?: string | null;
  /** The consuming activity execution, `<runId>/<activityId>`. */
  readonly by: string;
  /**
   * True on a Temporal retry of the same activity (attempt > 1): an approval this very
   * activity used already is accepted again, so a crash between use and run does not
   * strand the call. A different activity (a replay) is always refused.
   */
  readonly retry?: boolean;
}

/** Why an approval could not be used (or does not lift a stop). */
export type RefusalWhy =
  | 'none'
  | 'other_run'
  | 'other_call'
  | 'other_stop'
  | 'used'
  | 'expired'
  | 'denied'
  /** Its signature does not verify against the worker's operators (unsigned, forged, edited, no role). */
  | 'unverified';

/**
 * Whether the worker trusts an approval row as stored (its signature, signer and role): null
 * when it does, else why not. Built from the worker's operators by {@link approvalVerifier}.
 */
export type ApprovalVerifier = (approval: ApprovalRecord) => string | null;

/** What {@link ApprovalStore.consume} answers. */
export type ConsumeOutcome =
  | { readonly ok: true; readonly approval: ApprovalRecord }
  | { readonly ok: false; readonly why: RefusalWhy; readonly message: string };

/** What {@link ApprovalStore.checkStop} answers: does a valid approval lift this stop? */
export type StopCheck =
  | { readonly ok: true; readonly approval: ApprovalRecord }
  | { readonly ok: false; readonly why: RefusalWhy; readonly message: string };

/** Options of `ApprovalStore.list`. */
export interface ListApprovalsOptions {
  readonly runId?: string;
  readonly limit?: number;
}

/** Options of `ApprovalStore.audit`. */
export interface AuditOptions {
  readonly runId?: string;
  readonly approvalId?: string;
  readonly limit?: number;
}

/** Where `ApprovalStore.findUsable` looks: this run's call, at the stop being lifted. */
export interface UsableQuery {
  readonly runId: string;
  readonly fingerprint: string;
  /** The call's digest: only an approval of exactly this call is usable. */
  readonly argsHash: string;
  /** The stop the run is lifting (its `last_safe_checkpoint`); null: none, so nothing is usable. */
  readonly stopRef: string | null;
  /** Who asks (audited on a row passed over as untrusted). */
  readonly by: string;
}
