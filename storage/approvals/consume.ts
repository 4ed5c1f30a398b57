/**
 * Using an approval (`ApprovalStore.consume`): the at-most-once path a worker takes when an
 * approved call is about to run. It is the store's one multi-step transaction with a rollback
 * by design (a refusal thrown inside the unit undoes the use), and the rules it enforces are
 * the ones docs/security.md lists, so it reads on its own, apart from granting, denying and
 * listing (approval-store.ts): one transaction checks everything the approval is bound to,
 * records the use in `approval_uses` (whose keys refuse a second use of it, and a use of a
 * second approval of the same stop and call), then verifies the row as locked.
 */
import type { LedgerDatabase } from '../ledger';
import { appendAudit } from './audit-log';
import { approvalById, explain, text } from './rows';
import type { ApprovalRecord, ConsumeInput, ConsumeOutcome, RefusalWhy } from './types';

/** Thrown inside a consume to roll its use back: the use is refused, with why. */
class Refused extends Error {
  constructor(
    readonly why: RefusalWhy,
    readonly detail: string,
  ) {
    super(detail);
    this.name = 'Refused';
  }
}

/**
 * Uses the approval `input` names, at most once; a refusal rolls the use back and is audited
 * `refused` with the reason. `problemOf` is the store's verifier (null: the row may authorise).
 */
export async function consumeApproval(
  db: LedgerDatabase,
  input: ConsumeInput,
  problemOf: (a: ApprovalRecord) => string | null,
): Promise<ConsumeOutcome> {
  try {
    return await consumeUnit(db, input, problemOf);
  } catch (err) {
    if (!(err instanceof Refused)) throw err;
    const message =
      err.why === 'unverified' ? `approval ${input.approvalId} does not verify: ${err.detail}` : err.detail;
    await db.unit('write', (tx) =>
      appendAudit(db, tx, 'refused', input.runId, input.approvalId, input.by, `${err.why}: ${message}`),
    );
    return { ok: false, why: err.why, message };
  }
}

async function consumeUnit(
  db: LedgerDatabase,
  input: ConsumeInput,
  problemOf: (a: ApprovalRecord) => string | null,
): Promise<ConsumeOutcome> {
  const id = text(input.approvalId, 'approval id', 200);
  const by = text(input.by, 'consumer', 500);
  const stopRef = input.stopRef ?? null;
  const argsHash = input.argsHash;
  const now = db.now;
  // A retry of the very activity that used it may use it again (nothing else may).
  const unused = input.retry ? '(used_at IS NULL OR used_by_activity = ?)' : 'used_at IS NULL';
  return db.unit('transaction', async (tx) => {
    if (stopRef === null) {
      throw new Refused('other_stop', `approval ${id} may be used only while its stop is lifted; no stop is`);
    }
    const used = await tx.all<{ id: string }>(
      `UPDATE approvals SET used_at = COALESCE(used_at, ${now}), used_by_activity = ?
       WHERE id = ? AND run_id = ? AND stop_ref = ? AND fingerprint = ? AND args_hash = ?
       AND ${unused} AND denied_at IS NULL AND expires_at > ${now} RETURNING id`,
      [by, id, input.runId, stopRef, input.fingerprint, argsHash, ...(input.retry ? [by] : [])],
    );
    if (used.length === 0) {
      const refusal = explain(await approvalById(db, tx, id), { ...input, stopRef });
      throw new Refused(refusal.why, refusal.message);
    }
    const recorded = await tx.all<{ approval_id: string }>(
      `INSERT INTO approval_uses (approval_id, run_id, stop_ref, fingerprint, used_by_activity, used_at)
       VALUES (?, ?, ?, ?, ?, ${now}) ON CONFLICT DO NOTHING RETURNING approval_id`,
      [id, input.runId, stopRef, input.fingerprint, by],
    );
    if (recorded.length === 0) {
      const prior = await tx.get<{ approval_id: string; used_by_activity: string }>(
        `SELECT approval_id, used_by_activity FROM approval_uses
         WHERE approval_id = ? OR (run_id = ? AND stop_ref = ? AND fingerprint = ?) ORDER BY approval_id = ? DESC`,
        [id, input.runId, stopRef, input.fingerprint, id],
      );
      const mine = prior?.approval_id === id && input.retry === true && prior.used_by_activity === by;
      if (!mine) {
        throw new Refused(
          'used',
          prior?.approval_id === id
            ? `approval ${id} was used by ${prior.used_by_activity}`
            : `approval ${prior?.approval_id ?? '?'} was already used for ${input.fingerprint} at ${stopRef}; ${id} expires unused`,
        );
      }
    }
    const approval = (await approvalById(db, tx, id)) as ApprovalRecord;
    const problem = problemOf(approval);
    if (problem !== null) throw new Refused('unverified', problem);
    await appendAudit(
      db,
      tx,
      'consumed',
      input.runId,
      id,
      by,
      `${input.argsHash} (${input.fingerprint}) at ${stopRef}${input.retry ? ' (activity retry)' : ''}`,
    );
    // The other approvals of this stop and call can never be used now: say so.
    const others = await tx.all<{ id: string }>(
      `SELECT id FROM approvals WHERE run_id = ? AND stop_ref = ? AND fingerprint = ? AND id <> ?
       AND used_at IS NULL AND denied_at IS NULL ORDER BY created_at, id`,
      [input.runId, stopRef, input.fingerprint, id],
    );
    for (const o of others) {
      await appendAudit(
        db,
        tx,
        'refused',
        input.runId,
        o.id,
        by,
        `superseded: approval ${id} was used for ${input.fingerprint} at ${stopRef}; ${o.id} expires unused`,
      );
    }
    return { ok: true, approval };
  });
}
