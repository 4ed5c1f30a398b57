/**
 * The approval audit (`approval_audit`): the one place a row is written, an INSERT stamped in
 * database time, and the one read of the rows in the order they were appended. Kept apart from
 * the store (approval-store.ts) so that the append-only rule is visible in one short file:
 * every grant, denial, request, use and refusal of the store appends through
 * {@link appendAudit}, and nothing here updates or deletes a row (the database refuses both by
 * trigger too, storage/migrations.ts).
 */
import type { LedgerDatabase, LedgerTx } from '../ledger';
import { decodeAudit, type AuditRow } from './rows';
import type { AuditAction, AuditEntry, AuditOptions } from './types';

/** Appends one audit row inside the unit `tx` (the only way an audit row is written). */
export async function appendAudit(
  db: LedgerDatabase,
  tx: LedgerTx,
  action: AuditAction,
  runId: string,
  approvalId: string | null,
  actor: string,
  detail: string | null,
): Promise<void> {
  await tx.run(
    `INSERT INTO approval_audit (at, action, run_id, approval_id, actor, detail) VALUES (${db.now}, ?, ?, ?, ?, ?)`,
    [action, runId, approvalId, actor, detail],
  );
}

/** Audit rows in the order they were appended (at most `limit`, default 1000). */
export function readAudit(db: LedgerDatabase, options: AuditOptions = {}): Promise<AuditEntry[]> {
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
  return db.unit('read', async (tx) =>
    (await tx.all<AuditRow>(sql, [...params, limit])).map((r) => decodeAudit(db, r)),
  );
}
