/**
 * Signed approvals (docs/security.md "Signed approvals"): the exact fields an operator signs
 * when approving or denying a call, and the worker's check of a stored row against its
 * operators. The signer (agentctl) and the verifier (the worker) both build the fields here,
 * so they agree byte for byte; the verifier builds them from the row as stored, so any edit
 * of a signed column (digest, fingerprint, stop, reason, approver, expiry, id) breaks the signature.
 */
import type { SignedFields } from '../../common/operator-auth';
import type { OperatorRegistry } from '../../operators/registry';
import type { ApprovalVerifier } from './types';

/** Ids of approval rows (the signer picks one before signing). */
export const APPROVAL_ID_PREFIX = 'apr_';
/** Ids of denial rows. */
export const DENIAL_ID_PREFIX = 'den_';

/** What a signed approval or denial is: its row id, decider, call, stop and (approvals) expiry. */
export interface ApprovalDecision {
  /** The row id; the signature's `requestId`, so one signature authorises exactly one row. */
  readonly id: string;
  readonly actor: string;
  readonly reason: string;
  readonly fingerprint: string;
  /**
   * The call's digest (`sha256:<64 hex>`): what the signature binds the decision to. Null only
   * for a row stored before approvals named it (such a row authorises nothing).
   */
  readonly argsHash: string | null;
  readonly stopRef: string;
  /** Approvals only: until when it may be used (ms since the epoch). */
  readonly expiresAtMs?: number;
}

/** The fields an approval (or denial) signature covers. */
export function approvalSignedFields(d: ApprovalDecision): SignedFields {
  return {
    requestId: d.id,
    actor: d.actor,
    reason: d.reason,
    fingerprint: d.fingerprint,
    ...(d.argsHash !== null ? { argsHash: d.argsHash } : {}),
    stopRef: d.stopRef,
    ...(d.expiresAtMs !== undefined ? { expiresAtMs: d.expiresAtMs } : {}),
  };
}

/**
 * The worker's verifier over its operators. In open mode (no operators file) every row is
 * trusted as stored, signed or not, as before signatures existed. Otherwise an approval is
 * trusted only when its signature is a configured operator's `approve` signature over exactly
 * the stored fields, the operator is the row's approver and has the `approve` role, and the
 * signed expiry has not passed (the signing time itself may be old: an approval may wait for
 * hours). A denial row never authorises anything, so it is not checked here (its signature is
 * kept for the audit; a forged denial could only keep a run stopped).
 */
export function approvalVerifier(operators: OperatorRegistry): ApprovalVerifier {
  return (a) => {
    if (operators.isOpen || a.id.startsWith(DENIAL_ID_PREFIX)) return null;
    const verdict = operators.check({
      action: 'approve',
      workflowId: a.runId,
      fields: approvalSignedFields({
        id: a.id,
        actor: a.approver,
        reason: a.reason,
        fingerprint: a.fingerprint,
        argsHash: a.argsHash,
        stopRef: a.stopRef,
        expiresAtMs: Date.parse(a.expiresAt),
      }),
      auth: a.auth,
      freshness: 'signed-expiry',
    });
    return verdict.ok ? null : verdict.detail;
  };
}
