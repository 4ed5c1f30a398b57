/**
 * Signed raises of a tenant's spend cap: the fields an operator signs (`agentctl spend raise`)
 * and the worker's check of a stored raise against its operators. Signer and verifier both
 * build the fields here, from the same values, so they agree byte for byte; the verifier
 * builds them from the row as stored, so an edit of the cap, window, tenant, actor or reason
 * breaks the signature.
 */
import type { SignedFields } from '../../common/operator-auth';
import type { OperatorRegistry } from '../../operators/registry';
import type { RaiseRecord, RaiseVerifier } from './spend-store';

/** What a raise signature is bound to in place of a run id: the tenant. */
export function raiseSubject(tenant: string): string {
  return `tenant:${tenant}`;
}

/** The fields a raise signature covers. */
export function raiseSignedFields(r: {
  id: string;
  actor: string;
  reason: string;
  maxUsd: number;
  windowMs: number;
}): SignedFields {
  return {
    requestId: r.id,
    actor: r.actor,
    reason: r.reason,
    raise: { maxUsd: r.maxUsd, windowMs: r.windowMs },
  };
}

/**
 * The worker's verifier of raises over its operators. Open mode (no operators file): every
 * raise is trusted as stored. Otherwise a raise is in force only when it carries a configured
 * operator's `raise_spend` signature over exactly the stored fields, the operator is the
 * raise's actor, and one of the operator's roles allows a cap that high (`raiseSpendUsd`).
 */
export function raiseVerifier(operators: OperatorRegistry): RaiseVerifier {
  return (r: RaiseRecord) => {
    if (operators.isOpen) return null;
    const verdict = operators.check({
      action: 'raise_spend',
      workflowId: raiseSubject(r.tenant),
      fields: raiseSignedFields(r),
      auth: r.auth,
      freshness: 'stored',
    });
    return verdict.ok ? null : verdict.detail;
  };
}
