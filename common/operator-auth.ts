/**
 * Operator authority on the wire (docs/spec.md §7.3): a resume, stop or approval may
 * carry the operator's Ed25519 signature over exactly the fields that authorise it. The
 * workflow never verifies it itself (it holds no keys): an activity checks the signature
 * against the operators the WORKER is configured with, and their roles. Sandbox-safe.
 */
import { z } from 'zod';
import { canonicalJson } from '../guard/canonical';

/** The signature block of a request. */
export const operatorAuthSchema = z
  .object({
    /** The operator id, as listed in the worker's operators file. */
    operator: z.string().min(1, 'auth.operator is required'),
    /** When the request was signed (ms since the epoch); a stale signature is refused. */
    issuedAtMs: z.number().int().nonnegative(),
    /** base64 Ed25519 signature of {@link signedPayload}. */
    signature: z.string().min(1, 'auth.signature is required'),
  })
  .strict();
/** The signature block of a request. */
export type OperatorAuth = z.output<typeof operatorAuthSchema>;

/** What an operator may ask a run. */
export type OperatorAction = 'resume' | 'stop' | 'approve' | 'deny' | 'raise_spend';

/** The request fields a signature covers (everything that changes what the request does). */
export interface SignedFields {
  readonly requestId: string;
  readonly actor: string;
  readonly reason: string;
  readonly precondition?: string;
  readonly raise?: Record<string, number | undefined>;
  /** For resumes: the operator's note to the model (what the model is told is signed too). */
  readonly note?: string;
  /** For approvals: the fingerprint of the call approved, and the stop it is bound to. */
  readonly fingerprint?: string;
  /**
   * For approvals: the digest of the exact call approved (`sha256:<64 hex>` of its tool and
   * canonical args). The fingerprint alone is a 64-bit repeat counter, not a security boundary.
   */
  readonly argsHash?: string;
  readonly stopRef?: string;
  /**
   * For approvals: until when the approval may be used (ms since the epoch). Signed so that
   * nobody with database access can widen it; present only in approval signatures.
   */
  readonly expiresAtMs?: number;
}

/**
 * The exact text an operator signs: the action, the run, the request fields and the time,
 * as canonical JSON (keys sorted, so signer and verifier agree byte for byte). Binding the
 * run id and the action means a signature can never be replayed against another run or
 * turned from a resume into something else.
 */
export function signedPayload(
  action: OperatorAction,
  workflowId: string,
  fields: SignedFields,
  issuedAtMs: number,
): string {
  return canonicalJson({
    v: 1,
    action,
    workflowId,
    issuedAtMs,
    requestId: fields.requestId,
    actor: fields.actor,
    reason: fields.reason,
    precondition: fields.precondition ?? '',
    raise: fields.raise ?? {},
    fingerprint: fields.fingerprint ?? null,
    stopRef: fields.stopRef ?? null,
    // Only when present: resume and stop signatures made before it existed keep verifying.
    ...(fields.expiresAtMs !== undefined ? { expiresAtMs: fields.expiresAtMs } : {}),
    ...(fields.argsHash !== undefined ? { argsHash: fields.argsHash } : {}),
    ...(fields.note !== undefined ? { note: fields.note } : {}),
  });
}
