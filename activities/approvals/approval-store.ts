/**
 * The approval store: approvals bound to (run, stop, call fingerprint), used at most once,
 * expiring in database time, and an append-only audit of every request, approval, denial,
 * use and refusal. It lives in the ledger's database (tables from the ledger's migration 2,
 * activities/ledger/migrations.ts) and runs on the ledger's own connection through
 * {@link LedgerDatabase}, so the SQL below is written once for SQLite and PostgreSQL.
 *
 * The store never updates or deletes an audit row (the database refuses it too, by trigger);
 * the only changes to an approval are setting `used_at` once and `denied_at` once.
 *
 * A row may carry its approver's signature (migration 3). The store keeps it as given; a
 * store made {@link ApprovalStore.verifiedBy} a verifier (the worker's, over its operators)
 * trusts a row to authorise a call only when the verifier accepts it as stored.
 */
import { randomUUID } from 'node:crypto';
import { operatorAuthSchema, type OperatorAuth } from '../../common/operator-auth';
import { SqlLedger, type Ledger, type LedgerDatabase, type LedgerTx } from '../ledger';
import { ApprovalInputError, ApprovalStoreUnavailableError } from './errors';
import { APPROVAL_ID_PREFIX, DENIAL_ID_PREFIX } from './verify';
import type {
  ApprovalRecord,
  ApprovalVerifier,
  ApprovalState,
  ApprovalTarget,
  AuditAction,
  AuditEntry,
  ConsumeInput,
  ConsumeOutcome,
  Decider,
  DenyInput,
  GrantInput,
  RefusalWhy,
  SignedDecision,
  StopCheck,
} from './types';

/** The longest TTL an approval may have: the 7-day resume window (docs/spec.md §7). */
export const MAX_APPROVAL_TTL_MS = 7 * 24 * 3_600_000;
/** The TTL `agentctl approvals approve` uses without `--ttl`. */
export const DEFAULT_APPROVAL_TTL_MS = 15 * 60_000;

/** An `approvals` row as the driver returns it (times dialect-typed). */
interface ApprovalRow {
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
}

interface AuditRow {
  id: number | string;
  at: unknown;
  action: AuditAction;
  run_id: string;
  approval_id: string | null;
  actor: string;
  detail: string | null;
}

/** Options of {@link ApprovalStore.list}. */
export interface ListApprovalsOptions {
  readonly runId?: string;
  readonly limit?: number;
}

/** Options of {@link ApprovalStore.audit}. */
export interface AuditOptions {
  readonly runId?: string;
  readonly approvalId?: string;
  readonly limit?: number;
}

const text = (value: unknown, what: string, max = 2_000): string => {
  if (typeof value !== 'string' || value.trim() === '')
    throw new ApprovalInputError(`${what} must be a non-empty string`);
  if (value.length > max) throw new ApprovalInputError(`${what} is longer than ${max} characters`);
  return value;
};

/** Thrown inside a consume to roll its use back: the used row does not verify. */
class Unverified extends Error {
  constructor(readonly detail: string) {
    super(detail);
    this.name = 'Unverified';
  }
}

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
    const expires = signed ? this.at('?') : `${now} + ${this.db.ms('?')}`;
    const until = input.signed ? input.signed.expiresAtMs : Math.ceil(ttl);
    return this.db.unit('transaction', async (tx) => {
      await tx.run(
        `INSERT INTO approvals (id, run_id, stop_ref, tool, fingerprint, args_hash, approver, reason, created_at, expires_at,
         signed_by, signed_at_ms, signature)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ${now}, ${expires}, ?, ?, ?)`,
        [
          id,
          t.runId,
          t.stopRef,
          t.tool,
          t.fingerprint,
          t.argsHash,
          d.actor,
          d.reason,
          until,
          ...signatureColumns(signed?.auth),
        ],
      );
      const record = (await this.byId(tx, id)) as ApprovalRecord;
      await this.append(
        tx,
        'approved',
        t.runId,
        id,
        d.actor,
        `${t.fingerprint} at ${t.stopRef}: ${d.reason}`,
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
        [
          id,
          t.runId,
          t.stopRef,
          t.tool,
          t.fingerprint,
          t.argsHash,
          d.actor,
          d.reason,
          ...signatureColumns(signed?.auth),
        ],
      );
      const ids = withdrawn.map((r) => r.id);
      const extra = ids.length > 0 ? ` (withdrew ${ids.join(', ')})` : '';
      await this.append(
        tx,
        'denied',
        t.runId,
        id,
        d.actor,
        `${t.fingerprint} at ${t.stopRef}: ${d.reason}${extra}`,
      );
      return { denial: (await this.byId(tx, id)) as ApprovalRecord, withdrawn: ids };
    });
  }

  /** Audits that a run asks for an approval of a call (the plan activity found none usable). */
  async request(runId: string, actor: string, detail: string): Promise<void> {
    await this.db.unit('write', (tx) => this.append(tx, 'requested', runId, null, actor, detail));
  }

  /** Audits a refusal that names no approval (a call of an approval-gated tool without one). */
  async refuse(runId: string, actor: string, detail: string): Promise<void> {
    await this.db.unit('write', (tx) => this.append(tx, 'refused', runId, null, actor, detail));
  }

  /**
   * The newest approval that may authorise this call in this run now (unused, unexpired,
   * not denied; its args hash, when stored, equal to `argsHash`; accepted by the verifier),
   * or null.
   */
  async findUsable(
    runId: string,
    fingerprint: string,
    argsHash: string | null,
  ): Promise<ApprovalRecord | null> {
    return this.db.unit('read', async (tx) => {
      const rows = await tx.all<ApprovalRow>(
        `${this.select()} WHERE run_id = ? AND fingerprint = ? AND (args_hash IS NULL OR args_hash = ?)
         AND used_at IS NULL AND denied_at IS NULL AND expires_at > ${this.db.now}
         ORDER BY created_at DESC, id${this.verify ? '' : ' LIMIT 1'}`,
        [runId, fingerprint, argsHash ?? ''],
      );
      // An unverifiable row (unsigned, forged, edited) is passed over, never offered.
      return rows.map((r) => this.decode(r)).find((a) => this.problemOf(a) === null) ?? null;
    });
  }

  /**
   * Uses the approval for this call, at most once, in one statement that checks everything
   * it is bound to, then verifies the row it used (as locked by that statement); a row the
   * verifier refuses is not used (the transaction rolls back). Audits `consumed` or, with the
   * reason, `refused`.
   */
  async consume(input: ConsumeInput): Promise<ConsumeOutcome> {
    try {
      return await this.consumeUnit(input);
    } catch (err) {
      if (!(err instanceof Unverified)) throw err;
      const message = `approval ${input.approvalId} does not verify: ${err.detail}`;
      await this.db.unit('write', (tx) =>
        this.append(tx, 'refused', input.runId, input.approvalId, input.by, `unverified: ${message}`),
      );
      return { ok: false, why: 'unverified', message };
    }
  }

  private async consumeUnit(input: ConsumeInput): Promise<ConsumeOutcome> {
    const id = text(input.approvalId, 'approval id', 200);
    const by = text(input.by, 'consumer', 500);
    const argsHash = input.argsHash ?? '';
    const now = this.db.now;
    // A retry of the very activity that used it may use it again (nothing else may).
    const unused = input.retry ? '(used_at IS NULL OR used_by_activity = ?)' : 'used_at IS NULL';
    return this.db.unit('transaction', async (tx) => {
      const used = await tx.all<{ id: string; used_at: unknown }>(
        `UPDATE approvals SET used_at = COALESCE(used_at, ${now}), used_by_activity = ?
         WHERE id = ? AND run_id = ? AND fingerprint = ? AND (args_hash IS NULL OR args_hash = ?)
         AND ${unused} AND denied_at IS NULL AND expires_at > ${now} RETURNING id`,
        [by, id, input.runId, input.fingerprint, argsHash, ...(input.retry ? [by] : [])],
      );
      if (used.length > 0) {
        const approval = (await this.byId(tx, id)) as ApprovalRecord;
        const problem = this.problemOf(approval);
        if (problem !== null) throw new Unverified(problem);
        await this.append(
          tx,
          'consumed',
          input.runId,
          id,
          by,
          `${input.fingerprint}${input.retry ? ' (activity retry)' : ''}`,
        );
        return { ok: true, approval };
      }
      const refusal = explain(await this.byId(tx, id), input);
      await this.append(tx, 'refused', input.runId, id, by, `${refusal.why}: ${refusal.message}`);
      return { ok: false, ...refusal };
    });
  }

  /**
   * Whether a valid approval lifts the stop `stopRef` of `runId` blocked on `fingerprint`
   * (the `approval` lift rule); when none does, says why (none, denied, expired, used).
   */
  async checkStop(runId: string, fingerprint: string, stopRef: string): Promise<StopCheck> {
    return this.db.unit('read', async (tx) => {
      const rows = (
        await tx.all<ApprovalRow>(
          `${this.select()} WHERE run_id = ? AND fingerprint = ? ORDER BY created_at DESC, id`,
          [runId, fingerprint],
        )
      ).map((r) => this.decode(r));
      const atStop = rows.filter((r) => r.stopRef === stopRef);
      const candidates = atStop.filter((r) => r.state === 'valid');
      const valid = candidates.find((r) => this.problemOf(r) === null);
      if (valid) return { ok: true, approval: valid };
      const first = candidates[0];
      if (first) {
        return {
          ok: false,
          why: 'unverified',
          message: `approval ${first.id} does not verify: ${this.problemOf(first)}${candidates.length > 1 ? ` (nor do ${candidates.length - 1} more)` : ''}`,
        };
      }
      const latest = atStop[0];
      if (latest) {
        return {
          ok: false,
          why: latest.state as RefusalWhy,
          message: `the latest approval ${latest.id} for this stop is ${latest.state}`,
        };
      }
      if (rows[0]) {
        return {
          ok: false,
          why: 'other_stop',
          message: `approval ${rows[0].id} was granted for ${rows[0].stopRef}, not for ${stopRef}`,
        };
      }
      return { ok: false, why: 'none', message: `no approval for ${fingerprint} at ${stopRef}` };
    });
  }

  /** One approval (or denial) by id, or null. */
  get(id: string): Promise<ApprovalRecord | null> {
    return this.db.unit('read', (tx) => this.byId(tx, id));
  }

  /** Approvals and denials, newest first. */
  list(options: ListApprovalsOptions = {}): Promise<ApprovalRecord[]> {
    const limit = Math.max(1, Math.floor(options.limit ?? 100));
    const where = options.runId === undefined ? '' : ' WHERE run_id = ?';
    return this.db.unit('read', async (tx) =>
      (
        await tx.all<ApprovalRow>(`${this.select()}${where} ORDER BY created_at DESC, id LIMIT ?`, [
          ...(options.runId === undefined ? [] : [options.runId]),
          limit,
        ])
      ).map((r) => this.decode(r)),
    );
  }

  /** Audit rows in the order they were appended. */
  audit(options: AuditOptions = {}): Promise<AuditEntry[]> {
    const where: string[] = [];
    const params: unknown[] = [];
    if (options.runId !== undefined) {
      where.push('run_id = ?');
      params.push(options.runId);
    }
    if (options.approvalId !== undefined) {
      where.push('approval_id = ?');
      params.push(options.approvalId);
    }
    const limit = Math.max(1, Math.floor(options.limit ?? 1000));
    const sql = `SELECT * FROM approval_audit${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY id LIMIT ?`;
    return this.db.unit('read', async (tx) =>
      (await tx.all<AuditRow>(sql, [...params, limit])).map((r) => ({
        id: Number(r.id),
        at: this.db.isoTime(r.at) as string,
        action: r.action,
        runId: r.run_id,
        approvalId: r.approval_id,
        actor: r.actor,
        detail: r.detail,
      })),
    );
  }

  // ---- Inside units ------------------------------------------------------------------

  /** The only way an audit row is written: an INSERT (there is no UPDATE or DELETE path). */
  private async append(
    tx: LedgerTx,
    action: AuditAction,
    runId: string,
    approvalId: string | null,
    actor: string,
    detail: string | null,
  ): Promise<void> {
    await tx.run(
      `INSERT INTO approval_audit (at, action, run_id, approval_id, actor, detail) VALUES (${this.db.now}, ?, ?, ?, ?, ?)`,
      [action, runId, approvalId, actor, detail],
    );
  }

  /** Null when the row may authorise a call (no verifier, or the verifier accepts it), else why not. */
  private problemOf(a: ApprovalRecord): string | null {
    return this.verify ? this.verify(a) : null;
  }

  /** SQL for the absolute time `param` (ms since the epoch), stored exactly. */
  private at(param: string): string {
    return this.db.backend === 'postgres' ? `to_timestamp(${param}::double precision / 1000)` : param;
  }

  private select(): string {
    return `SELECT *, CASE WHEN expires_at <= ${this.db.now} THEN 1 ELSE 0 END AS expired FROM approvals`;
  }

  private async byId(tx: LedgerTx, id: string): Promise<ApprovalRecord | null> {
    const row = await tx.get<ApprovalRow>(`${this.select()} WHERE id = ?`, [id]);
    return row ? this.decode(row) : null;
  }

  private decode(r: ApprovalRow): ApprovalRecord {
    const usedAt = this.db.isoTime(r.used_at);
    const deniedAt = this.db.isoTime(r.denied_at);
    const expired = Number(r.expired) === 1 || r.expired === true;
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
      createdAt: this.db.isoTime(r.created_at) as string,
      expiresAt: this.db.isoTime(r.expires_at) as string,
      usedAt,
      usedByActivity: r.used_by_activity,
      deniedAt,
      state,
      auth:
        r.signature !== null && r.signed_by !== null && r.signed_at_ms !== null
          ? { operator: r.signed_by, issuedAtMs: Number(r.signed_at_ms), signature: r.signature }
          : null,
    };
  }
}

/** The signed decision, checked: its id has the row kind's prefix, its signer is the actor. */
function signedDecision(s: SignedDecision, prefix: string, d: Decider): SignedDecision {
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
function signatureColumns(auth: OperatorAuth | undefined): [string | null, number | null, string | null] {
  return auth ? [auth.operator, auth.issuedAtMs, auth.signature] : [null, null, null];
}

function target(t: ApprovalTarget): Required<ApprovalTarget> & { argsHash: string | null } {
  return {
    runId: text(t.runId, 'run id', 500),
    stopRef: text(t.stopRef, 'stop reference', 200),
    tool: text(t.tool, 'tool', 200),
    fingerprint: text(t.fingerprint, 'fingerprint', 500),
    argsHash: t.argsHash ?? null,
  };
}

function decider(d: Decider): Decider {
  return { actor: text(d.actor, 'actor', 200), reason: text(d.reason, 'reason') };
}

/** Why `consume` found nothing to use, from the row the id names (if any). */
function explain(row: ApprovalRecord | null, input: ConsumeInput): { why: RefusalWhy; message: string } {
  const id = input.approvalId;
  if (!row) return { why: 'none', message: `no approval ${id}` };
  if (row.runId !== input.runId)
    return { why: 'other_run', message: `approval ${id} is for run ${row.runId}, not ${input.runId}` };
  if (
    row.fingerprint !== input.fingerprint ||
    (row.argsHash !== null && row.argsHash !== (input.argsHash ?? null))
  ) {
    return {
      why: 'other_call',
      message: `approval ${id} authorises ${row.fingerprint}, not ${input.fingerprint}`,
    };
  }
  if (row.state === 'denied')
    return { why: 'denied', message: `approval ${id} was denied at ${row.deniedAt}` };
  if (row.state === 'used')
    return { why: 'used', message: `approval ${id} was used at ${row.usedAt} by ${row.usedByActivity}` };
  return { why: 'expired', message: `approval ${id} expired at ${row.expiresAt}` };
}
