/**
 * The approval store: approvals bound to (run, stop, call digest), used at most once,
 * expiring in database time, and an append-only audit of every request, approval, denial,
 * use and refusal. It lives in the ledger's database (tables from the ledger's migration 2,
 * storage/migrations.ts) and runs on the ledger's own connection through
 * {@link LedgerDatabase}, so the SQL below is written once for SQLite and PostgreSQL.
 *
 * The store never updates or deletes an audit row (the database refuses it too, by trigger);
 * the only changes to an approval are setting `used_at` once and `denied_at` once. A use is a
 * row of its own in the append-only `approval_uses` (migration 5), keyed by the approval and
 * unique per (run, stop, call): deleting and re-inserting an approvals row (refused by trigger
 * too) cannot make it unused, and of several approvals for one stop and call at most one is
 * ever used.
 *
 * An approval is usable only at the stop it was granted for: {@link ApprovalStore.findUsable}
 * and {@link ApprovalStore.consume} take the stop the run is lifting (`stopRef`) and match it.
 *
 * A row may carry its approver's signature (migration 3). The store keeps it as given; a
 * store made {@link ApprovalStore.verifiedBy} a verifier (the worker's, over its operators)
 * trusts a row to authorise a call only when the verifier accepts it as stored.
 *
 * Two parts live in files of their own: the use of an approval (consume.ts, the at-most-once
 * transaction) and the audit's one INSERT and one read (audit-log.ts).
 */
import { randomUUID } from 'node:crypto';
import { SqlLedger, type Ledger, type LedgerDatabase } from '../ledger';
import { ApprovalInputError, ApprovalStoreUnavailableError } from './errors';
import { APPROVAL_ID_PREFIX, DENIAL_ID_PREFIX } from './verify';
import { appendAudit, readAudit } from './audit-log';
import { consumeApproval } from './consume';
import {
  absoluteTime,
  approvalById,
  decodeApproval,
  decider,
  decisionColumns,
  selectApprovals,
  stopVerdict,
  signatureColumns,
  signedDecision,
  target,
  UNUSED_AT_STOP,
  type ApprovalRow,
} from './rows';
import type {
  ApprovalRecord,
  AuditOptions,
  ListApprovalsOptions,
  UsableQuery,
  ApprovalVerifier,
  AuditEntry,
  ConsumeInput,
  ConsumeOutcome,
  DenyInput,
  GrantInput,
  RefusalWhy,
  StopCheck,
} from './types';

/** The longest TTL an approval may have: the 7-day resume window (docs/spec.md §7). */
export const MAX_APPROVAL_TTL_MS = 7 * 24 * 3_600_000;
/** The TTL `agentctl approvals approve` uses without `--ttl`. */
export const DEFAULT_APPROVAL_TTL_MS = 15 * 60_000;

/** The approval store over a ledger's database. */
export class ApprovalStore {
  /**
   * @param verify when given, only rows it accepts may authorise a call (findUsable,
   *   consume, checkStop); without one every stored row is trusted as stored
   */
  constructor(
    private readonly db: LedgerDatabase,
    private readonly verify?: ApprovalVerifier,
  ) {}

  /** The same store, trusting a row only when `verify` accepts it (the worker's operators). */
  verifiedBy(verify: ApprovalVerifier): ApprovalStore {
    return new ApprovalStore(this.db, verify);
  }

  /** True when this store verifies rows (it has the operators); false: it cannot tell, the worker decides. */
  get verifies(): boolean {
    return this.verify !== undefined;
  }

  /** The store beside `ledger`, on its connection; throws when the ledger is not a SQL ledger. */
  static over(ledger: Ledger): ApprovalStore {
    if (!(ledger instanceof SqlLedger)) {
      throw new ApprovalStoreUnavailableError(
        `approvals need the SQL ledger's database (sqlite: or postgres:), not a ${ledger.backend} ledger`,
      );
    }
    return new ApprovalStore(ledger.database());
  }

  /**
   * Stores an approval of `input`'s call at its stop, usable once within `ttlMs` (database
   * time) or, when signed, until the signed expiry, and audits it.
   */
  async grant(input: GrantInput): Promise<ApprovalRecord> {
    const t = target(input);
    const d = decider(input);
    const signed = input.signed ? signedDecision(input.signed, APPROVAL_ID_PREFIX, d) : null;
    if (input.signed && !Number.isInteger(input.signed.expiresAtMs))
      throw new ApprovalInputError('signed approval: expiresAtMs must be an integer (ms since the epoch)');
    // Signed: the TTL is the span the operator signed, from the signing time to the expiry.
    const ttl = signed && input.signed ? input.signed.expiresAtMs - signed.auth.issuedAtMs : input.ttlMs;
    if (!Number.isFinite(ttl) || ttl <= 0 || ttl > MAX_APPROVAL_TTL_MS) {
      throw new ApprovalInputError(`approval TTL must be > 0 and at most 7 days, got ${ttl} ms`);
    }
    const id = signed?.id ?? `${APPROVAL_ID_PREFIX}${randomUUID()}`;
    const now = this.db.now;
    // A signed expiry is stored exactly as signed, so the verifier can rebuild what was signed.
    const expires = signed ? absoluteTime(this.db, '?') : `${now} + ${this.db.ms('?')}`;
    const until = input.signed ? input.signed.expiresAtMs : Math.ceil(ttl);
    return this.db.unit('transaction', async (tx) => {
      await tx.run(
        `INSERT INTO approvals (id, run_id, stop_ref, tool, fingerprint, args_hash, approver, reason, created_at, expires_at,
         signed_by, signed_at_ms, signature)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ${now}, ${expires}, ?, ?, ?)`,
        [...decisionColumns(id, t, d), until, ...signatureColumns(signed?.auth)],
      );
      const record = (await approvalById(this.db, tx, id)) as ApprovalRecord;
      // Stored either way (the row is evidence), but audited for what it is: a store that can
      // tell (it has the operators) records an approval it would not trust as refused, and one
      // it accepts as approved; a store that cannot tell records it as submitted only.
      const problem = this.problemOf(record);
      await appendAudit(
        this.db,
        tx,
        problem !== null ? 'refused' : this.verify ? 'approved' : 'submitted',
        t.runId,
        id,
        d.actor,
        problem === null
          ? `${t.tool} ${t.argsHash} at ${t.stopRef}: ${d.reason}${this.verify ? '' : ' (not verified here: the worker verifies it when it is used)'}`
          : `untrusted: ${problem} (stored, never usable: ${t.tool} ${t.argsHash} at ${t.stopRef})`,
      );
      return record;
    });
  }

  /**
   * Denies the call at its stop: withdraws every unused approval of that call in the run,
   * stores a denial row, and audits it. The run stays stopped.
   */
  async deny(input: DenyInput): Promise<{ denial: ApprovalRecord; withdrawn: string[] }> {
    const t = target(input);
    const d = decider(input);
    const signed = input.signed ? signedDecision(input.signed, DENIAL_ID_PREFIX, d) : null;
    const id = signed?.id ?? `${DENIAL_ID_PREFIX}${randomUUID()}`;
    const now = this.db.now;
    return this.db.unit('transaction', async (tx) => {
      const withdrawn = await tx.all<{ id: string }>(
        `UPDATE approvals SET denied_at = ${now} WHERE run_id = ? AND fingerprint = ?
         AND used_at IS NULL AND denied_at IS NULL RETURNING id`,
        [t.runId, t.fingerprint],
      );
      await tx.run(
        `INSERT INTO approvals (id, run_id, stop_ref, tool, fingerprint, args_hash, approver, reason, created_at, expires_at, denied_at,
         signed_by, signed_at_ms, signature)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ${now}, ${now}, ${now}, ?, ?, ?)`,
        [...decisionColumns(id, t, d), ...signatureColumns(signed?.auth)],
      );
      const ids = withdrawn.map((r) => r.id);
      const extra = ids.length > 0 ? ` (withdrew ${ids.join(', ')})` : '';
      await appendAudit(
        this.db,
        tx,
        'denied',
        t.runId,
        id,
        d.actor,
        `${t.tool} ${t.argsHash} at ${t.stopRef}: ${d.reason}${extra}`,
      );
      return { denial: (await approvalById(this.db, tx, id)) as ApprovalRecord, withdrawn: ids };
    });
  }

  /** Audits that a run asks for an approval of a call (the plan activity found none usable). */
  async request(runId: string, actor: string, detail: string): Promise<void> {
    await this.db.unit('write', (tx) => appendAudit(this.db, tx, 'requested', runId, null, actor, detail));
  }

  /** Audits a refusal that names no approval (a call of an approval-gated tool without one). */
  async refuse(runId: string, actor: string, detail: string): Promise<void> {
    await this.db.unit('write', (tx) => appendAudit(this.db, tx, 'refused', runId, null, actor, detail));
  }

  /**
   * Audits an operator request a run refused before any approval was read (a resume or stop not
   * authorised, a duplicate, a veto: core/gate.ts), naming the newest open approval of the stop
   * it was about when there is one, so that approval's record shows the refusal.
   */
  async refuseRequest(runId: string, stopRef: string | null, actor: string, detail: string): Promise<void> {
    await this.db.unit('write', async (tx) => {
      const open =
        stopRef === null
          ? undefined
          : await tx.get<{ id: string }>(
              `SELECT id FROM approvals WHERE run_id = ? AND stop_ref = ? AND used_at IS NULL AND denied_at IS NULL
               ORDER BY created_at DESC, id LIMIT 1`,
              [runId, stopRef],
            );
      await appendAudit(this.db, tx, 'refused', runId, open?.id ?? null, actor, detail);
    });
  }

  /**
   * The newest approval that may authorise this call now: granted for this run, this call and
   * the stop the run is lifting (`stopRef`), unused, with no other approval of that stop and
   * call used, unexpired, not denied, its args hash (when stored) equal to `argsHash`, and
   * accepted by the verifier; or null. A row passed over as untrusted is audited `refused`.
   */
  async findUsable(q: UsableQuery): Promise<ApprovalRecord | null> {
    if (q.stopRef === null) return null;
    const rows = await this.db.unit('read', async (tx) =>
      (
        await tx.all<ApprovalRow>(
          `${selectApprovals(this.db)} WHERE run_id = ? AND stop_ref = ? AND fingerprint = ? AND args_hash = ?
           AND used_at IS NULL AND denied_at IS NULL AND expires_at > ${this.db.now} AND ${UNUSED_AT_STOP}
           ORDER BY created_at DESC, id${this.verify ? '' : ' LIMIT 1'}`,
          [q.runId, q.stopRef, q.fingerprint, q.argsHash],
        )
      ).map((r) => decodeApproval(this.db, r)),
    );
    const usable = rows.find((a) => this.problemOf(a) === null) ?? null;
    // Every untrusted row looked at before the usable one (or all, when none is) was refused.
    const passed = usable ? rows.slice(0, rows.indexOf(usable)) : rows;
    for (const a of passed) {
      await this.db.unit('write', (tx) =>
        appendAudit(this.db, tx, 'refused', q.runId, a.id, q.by, `unverified: ${this.problemOf(a)}`),
      );
    }
    return usable;
  }

  /**
   * Uses the approval for this call at the stop being lifted, at most once: one transaction
   * checks everything it is bound to (run, stop, call, args hash, unused, not denied,
   * unexpired), records the use in `approval_uses` (whose keys refuse a second use of it, and a
   * use of a second approval of the same stop and call), then verifies the row as locked; any
   * refusal rolls the use back. Audits `consumed` (and each other approval of that stop and
   * call as `refused`: it expires unused) or, with the reason, `refused`.
   */
  consume(input: ConsumeInput): Promise<ConsumeOutcome> {
    return consumeApproval(this.db, input, (a) => this.problemOf(a));
  }

  /**
   * Whether a valid approval lifts the stop `stopRef` of `runId` blocked on `call` (its
   * fingerprint and digest: the `approval` lift rule); when none does, says why (none, denied,
   * expired, used, other_call for an approval of another call).
   */
  async checkStop(
    runId: string,
    call: { readonly fingerprint: string; readonly argsHash: string },
    stopRef: string,
    by?: string,
  ): Promise<StopCheck> {
    const check = await this.stopCheck(runId, call, stopRef);
    if (!check.ok && by !== undefined) {
      // A refused resume is part of the record: which approval (if any) and why.
      const named = 'approvalId' in check ? (check.approvalId ?? null) : null;
      await this.db.unit('write', (tx) =>
        appendAudit(
          this.db,
          tx,
          'refused',
          runId,
          named,
          by,
          `resume refused (${check.why}): ${check.message}`,
        ),
      );
    }
    if (check.ok) return check;
    return { ok: false, why: check.why, message: check.message };
  }

  private async stopCheck(
    runId: string,
    call: { readonly fingerprint: string; readonly argsHash: string },
    stopRef: string,
  ): Promise<StopCheck | { ok: false; why: RefusalWhy; message: string; approvalId?: string }> {
    const fingerprint = call.fingerprint;
    return this.db.unit('read', async (tx) => {
      const rows = (
        await tx.all<ApprovalRow>(
          `${selectApprovals(this.db)} WHERE run_id = ? AND fingerprint = ? ORDER BY created_at DESC, id`,
          [runId, fingerprint],
        )
      ).map((r) => decodeApproval(this.db, r));
      return stopVerdict(rows, call, stopRef, (a) => this.problemOf(a));
    });
  }

  /** One approval (or denial) by id, or null. */
  get(id: string): Promise<ApprovalRecord | null> {
    return this.db.unit('read', (tx) => approvalById(this.db, tx, id));
  }

  /** Approvals and denials, newest first. */
  list(options: ListApprovalsOptions = {}): Promise<ApprovalRecord[]> {
    const limit = Math.max(1, Math.floor(options.limit ?? 100));
    const where = options.runId === undefined ? '' : ' WHERE run_id = ?';
    return this.db.unit('read', async (tx) =>
      (
        await tx.all<ApprovalRow>(
          `${selectApprovals(this.db)}${where} ORDER BY created_at DESC, id LIMIT ?`,
          [...(options.runId === undefined ? [] : [options.runId]), limit],
        )
      ).map((r) => decodeApproval(this.db, r)),
    );
  }

  /** Audit rows in the order they were appended. */
  audit(options: AuditOptions = {}): Promise<AuditEntry[]> {
    return readAudit(this.db, options);
  }

  /** Null when the row may authorise a call (no verifier, or the verifier accepts it), else why not. */
  problemOf(a: ApprovalRecord): string | null {
    return this.verify ? this.verify(a) : null;
  }
}
