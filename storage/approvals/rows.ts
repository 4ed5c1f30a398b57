/**
 * The approval store's rows and pure helpers: the row shapes as the drivers return them, the
 * one SELECT every read uses, decoding, input checks and why a use was refused. Written once
 * for SQLite and PostgreSQL over {@link LedgerDatabase} (storage/approvals/approval-store.ts).
 */
import { operatorAuthSchema, type OperatorAuth } from '../../common/operator-auth';
import type { LedgerDatabase, LedgerTx } from '../ledger';
import { ApprovalInputError } from './errors';
import type {
  ApprovalRecord,
  ApprovalState,
  ApprovalTarget,
  AuditAction,
  AuditEntry,
  ConsumeInput,
  Decider,
  RefusalWhy,
  SignedDecision,
} from './types';

/** An `approvals` row as the driver returns it (times dialect-typed). */
export interface ApprovalRow {
  id: string;
  run_id: string;
  stop_ref: string;
  tool: string;
  fingerprint: string;
  args_hash: string | null;
  approver: string;
  reason: string;
  created_at: unknown;
  expires_at: unknown;
  used_at: unknown;
  used_by_activity: string | null;
  denied_at: unknown;
  signed_by: string | null;
  signed_at_ms: number | string | null;
  signature: string | null;
  /** Computed in the same statement from database time. */
  expired: number | string | boolean;
  /** The approval's row in `approval_uses`, if it was used (the one truth about a use). */
  use_at: unknown;
  use_by: string | null;
  /** Another approval of the same run, stop and call was used: this one never will be. */
  superseded: number | string | boolean;
}

export interface AuditRow {
  id: number | string;
  at: unknown;
  action: AuditAction;
  run_id: string;
  approval_id: string | null;
  actor: string;
  detail: string | null;
}

export const text = (value: unknown, what: string, max = 2_000): string => {
  if (typeof value !== 'string' || value.trim() === '')
    throw new ApprovalInputError(`${what} must be a non-empty string`);
  if (value.length > max) throw new ApprovalInputError(`${what} is longer than ${max} characters`);
  return value;
};

/** An audit row as the store answers it. */
export function decodeAudit(db: LedgerDatabase, r: AuditRow): AuditEntry {
  return {
    id: Number(r.id),
    at: db.isoTime(r.at) as string,
    action: r.action,
    runId: r.run_id,
    approvalId: r.approval_id,
    actor: r.actor,
    detail: r.detail,
  };
}

/** SQL for the absolute time `param` (ms since the epoch), stored exactly. */
export function absoluteTime(db: LedgerDatabase, param: string): string {
  return db.backend === 'postgres' ? `to_timestamp(${param}::double precision / 1000)` : param;
}

/** The SELECT over `approvals` every read uses: the row, its expiry, its use and whether it was superseded. */
export function selectApprovals(db: LedgerDatabase): string {
  return `SELECT *, CASE WHEN expires_at <= ${db.now} THEN 1 ELSE 0 END AS expired,
    (SELECT u.used_at FROM approval_uses u WHERE u.approval_id = approvals.id) AS use_at,
    (SELECT u.used_by_activity FROM approval_uses u WHERE u.approval_id = approvals.id) AS use_by,
    CASE WHEN ${UNUSED_AT_STOP} THEN 0 ELSE 1 END AS superseded
    FROM approvals`;
}

/** One approval (or denial) by id inside the unit `tx`, decoded, or null. */
export async function approvalById(
  db: LedgerDatabase,
  tx: LedgerTx,
  id: string,
): Promise<ApprovalRecord | null> {
  const row = await tx.get<ApprovalRow>(`${selectApprovals(db)} WHERE id = ?`, [id]);
  return row ? decodeApproval(db, row) : null;
}

/** An approvals row as the store answers it (times ISO 8601, its state derived). */
export function decodeApproval(db: LedgerDatabase, r: ApprovalRow): ApprovalRecord {
  const usedAt = db.isoTime(r.used_at) ?? db.isoTime(r.use_at);
  const deniedAt = db.isoTime(r.denied_at);
  // Superseded: another approval of its stop and call was used, so it expires unused.
  const expired = truthy(r.expired) || (usedAt === null && truthy(r.superseded));
  const state: ApprovalState = deniedAt ? 'denied' : usedAt ? 'used' : expired ? 'expired' : 'valid';
  return {
    id: r.id,
    runId: r.run_id,
    stopRef: r.stop_ref,
    tool: r.tool,
    fingerprint: r.fingerprint,
    argsHash: r.args_hash,
    approver: r.approver,
    reason: r.reason,
    createdAt: db.isoTime(r.created_at) as string,
    expiresAt: db.isoTime(r.expires_at) as string,
    usedAt,
    usedByActivity: r.used_by_activity ?? r.use_by,
    deniedAt,
    state,
    auth:
      r.signature !== null && r.signed_by !== null && r.signed_at_ms !== null
        ? { operator: r.signed_by, issuedAtMs: Number(r.signed_at_ms), signature: r.signature }
        : null,
  };
}

/** No approval of this row's run, stop and call has been used (SQL over an `approvals` row). */
export const UNUSED_AT_STOP = `NOT EXISTS (SELECT 1 FROM approval_uses s WHERE s.run_id = approvals.run_id
  AND s.stop_ref = approvals.stop_ref AND s.fingerprint = approvals.fingerprint)`;

/** A boolean as SQLite (0/1) or PostgreSQL (true/false) returns it. */
const truthy = (v: number | string | boolean): boolean => v === true || Number(v) === 1;

/** The signed decision, checked: its id has the row kind's prefix, its signer is the actor. */
export function signedDecision(s: SignedDecision, prefix: string, d: Decider): SignedDecision {
  const id = text(s.id, 'signed id', 200);
  if (!id.startsWith(prefix)) throw new ApprovalInputError(`signed id must start with ${prefix}, got ${id}`);
  const parsed = operatorAuthSchema.safeParse(s.auth);
  if (!parsed.success)
    throw new ApprovalInputError(`signature: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
  if (parsed.data.operator !== d.actor)
    throw new ApprovalInputError(`actor ${d.actor} is not the signing operator ${parsed.data.operator}`);
  return { id, auth: parsed.data };
}

/** `signed_by, signed_at_ms, signature` of a row (all null when unsigned). */
export function signatureColumns(
  auth: OperatorAuth | undefined,
): [string | null, number | null, string | null] {
  return auth ? [auth.operator, auth.issuedAtMs, auth.signature] : [null, null, null];
}

/** `id, run_id, stop_ref, tool, fingerprint, args_hash, approver, reason` of a decision row. */
export function decisionColumns(
  id: string,
  t: ReturnType<typeof target>,
  d: Decider,
): [string, string, string, string, string, string | null, string, string] {
  return [id, t.runId, t.stopRef, t.tool, t.fingerprint, t.argsHash, d.actor, d.reason];
}

/** A call digest as the worker computes it (`sha256ArgsHash`, storage/ledger/args-hash.ts). */
const CALL_DIGEST = /^sha256:[0-9a-f]{64}$/;

/** `digest` checked: `sha256:` and 64 lowercase hex digits, else an ApprovalInputError. */
export function callDigest(digest: unknown): string {
  if (typeof digest !== 'string' || !CALL_DIGEST.test(digest))
    throw new ApprovalInputError(
      `an approval must name the exact call by its digest (sha256:<64 hex>, the StopReport's ` +
        `blocked_call.args_digest), got ${digest === undefined || digest === null ? 'none' : JSON.stringify(String(digest).slice(0, 80))}`,
    );
  return digest;
}

/** The short form of a digest for messages: `sha256:` and its first 16 hex digits. */
export const shortDigest = (d: string | null | undefined): string => (d ? `${d.slice(0, 23)}…` : 'no digest');

export function target(t: ApprovalTarget): Required<ApprovalTarget> {
  return {
    runId: text(t.runId, 'run id', 500),
    stopRef: text(t.stopRef, 'stop reference', 200),
    tool: text(t.tool, 'tool', 200),
    fingerprint: text(t.fingerprint, 'fingerprint', 500),
    argsHash: callDigest(t.argsHash),
  };
}

export function decider(d: Decider): Decider {
  return { actor: text(d.actor, 'actor', 200), reason: text(d.reason, 'reason') };
}

/** Why `consume` found nothing to use, from the row the id names (if any). */
export function explain(
  row: ApprovalRecord | null,
  input: ConsumeInput,
): { why: RefusalWhy; message: string } {
  const id = input.approvalId;
  if (!row) return { why: 'none', message: `no approval ${id}` };
  if (row.runId !== input.runId)
    return { why: 'other_run', message: `approval ${id} is for run ${row.runId}, not ${input.runId}` };
  if (row.stopRef !== input.stopRef)
    return {
      why: 'other_stop',
      message: `approval ${id} was granted for the stop ${row.stopRef}, not for ${input.stopRef ?? 'this call'}`,
    };
  if (row.argsHash === null)
    return {
      why: 'other_call',
      message: `approval ${id} names no call digest (stored before approvals were bound to the exact call): it authorises nothing`,
    };
  if (row.fingerprint !== input.fingerprint || row.argsHash !== input.argsHash) {
    return {
      why: 'other_call',
      message:
        `approval ${id} authorises ${row.tool} ${row.argsHash}, not the call ${input.argsHash}: ` +
        `a call with other args needs its own approval`,
    };
  }
  if (row.state === 'denied')
    return { why: 'denied', message: `approval ${id} was denied at ${row.deniedAt}` };
  if (row.state === 'used')
    return { why: 'used', message: `approval ${id} was used at ${row.usedAt} by ${row.usedByActivity}` };
  return { why: 'expired', message: `approval ${id} expired at ${row.expiresAt}` };
}

/** A refused stop check, naming the approval it looked at when there was one. */
export type StopRefusal = { ok: false; why: RefusalWhy; message: string; approvalId?: string };

/**
 * Whether one of `rows` (the run's approvals of this call, newest first) lifts the stop
 * `stopRef`: a valid one the verifier accepts; else why not (unverified, its latest state,
 * granted for another stop, none).
 */
export function stopVerdict(
  all: readonly ApprovalRecord[],
  call: { readonly fingerprint: string; readonly argsHash: string },
  stopRef: string,
  problemOf: (a: ApprovalRecord) => string | null,
): { ok: true; approval: ApprovalRecord } | StopRefusal {
  const fingerprint = call.fingerprint;
  // Only an approval of exactly this call (its digest) counts; one of a look-alike never does.
  const rows = all.filter((r) => r.argsHash === call.argsHash);
  const other = all.find((r) => r.stopRef === stopRef && r.argsHash !== call.argsHash);
  if (rows.length === 0 && other) {
    return {
      ok: false,
      why: 'other_call',
      approvalId: other.id,
      message:
        other.argsHash === null
          ? `approval ${other.id} names no call digest (stored before approvals were bound to the exact call): it authorises nothing`
          : `approval ${other.id} authorises the call ${other.argsHash}, not the blocked call ${call.argsHash}`,
    };
  }
  const atStop = rows.filter((r) => r.stopRef === stopRef);
  const candidates = atStop.filter((r) => r.state === 'valid');
  const valid = candidates.find((r) => problemOf(r) === null);
  if (valid) return { ok: true, approval: valid };
  const first = candidates[0];
  if (first) {
    return {
      ok: false,
      why: 'unverified',
      approvalId: first.id,
      message: `approval ${first.id} does not verify: ${problemOf(first)}${candidates.length > 1 ? ` (nor do ${candidates.length - 1} more)` : ''}`,
    };
  }
  const latest = atStop[0];
  if (latest) {
    return {
      ok: false,
      why: latest.state as RefusalWhy,
      approvalId: latest.id,
      message: `the latest approval ${latest.id} for this stop is ${latest.state}`,
    };
  }
  if (rows[0]) {
    return {
      ok: false,
      why: 'other_stop',
      approvalId: rows[0].id,
      message: `approval ${rows[0].id} was granted for ${rows[0].stopRef}, not for ${stopRef}`,
    };
  }
  return { ok: false, why: 'none', message: `no approval for ${fingerprint} at ${stopRef}` };
}
