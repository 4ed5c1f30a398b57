/**
 * Test helpers for signed approvals: operators (alice may approve, bob may not, eve is
 * unknown), a signed grant and a signed spend raise as agentctl makes them, and an attacker's
 * edit of a stored row.
 */
import { randomUUID } from 'node:crypto';
import { approvalSignedFields, type GrantInput } from '../../storage/approvals';
import { SqlLedger, type Ledger, type LedgerDatabase } from '../../storage/ledger';
import { OperatorRegistry } from '../../operators/registry';
import { raiseSignedFields, raiseSubject, type RaiseInput } from '../../storage/spend';
import { generateOperatorKey, signRequest, type OperatorKeyFile } from '../../operators/sign';

/** May approve and lift any stop. */
export const alice = generateOperatorKey('alice');
/** Listed, but their role may not approve (it may lift any stop). */
export const bob = generateOperatorKey('bob');
/** Not in the operators file. */
export const eve = generateOperatorKey('eve');
/** Claims to be alice, with a key of their own. */
export const mallory = generateOperatorKey('alice');

/** The worker's operators: alice (approver), bob (no approve role). */
export function testOperators(now?: () => number): OperatorRegistry {
  return OperatorRegistry.fromFile(
    {
      operators: {
        alice: { publicKey: alice.publicKey, roles: ['approver'] },
        bob: { publicKey: bob.publicKey, roles: ['oncall'] },
      },
      roles: { approver: { lift: ['*'], approve: true }, oncall: { lift: ['*'], stop: true } },
    },
    now,
  );
}

/** `grant` signed by `key` the way `agentctl approvals approve --key` signs it. */
export function signedGrant(
  key: OperatorKeyFile,
  g: Omit<GrantInput, 'actor' | 'signed'>,
  issuedAtMs = Date.now(),
): GrantInput {
  const id = `apr_${randomUUID()}`;
  const expiresAtMs = issuedAtMs + g.ttlMs;
  const fields = approvalSignedFields({ ...g, id, actor: key.operator, expiresAtMs });
  return {
    ...g,
    actor: key.operator,
    signed: { id, expiresAtMs, auth: signRequest(key, 'approve', g.runId, fields, issuedAtMs) },
  };
}

/** A raise of `tenant`'s spend cap signed by `key` the way `agentctl spend raise --key` signs it. */
export function signedSpendRaise(
  key: OperatorKeyFile,
  tenant: string,
  maxUsd: number,
  reason = 'month end',
  windowMs = 3_600_000,
): RaiseInput {
  const id = `spr_${randomUUID()}`;
  const actor = key.operator;
  return {
    id,
    tenant,
    maxUsd,
    windowMs,
    actor,
    reason,
    auth: signRequest(
      key,
      'raise_spend',
      raiseSubject(tenant),
      raiseSignedFields({ id, actor, reason, maxUsd, windowMs }),
    ),
  };
}

/**
 * What the database's owner can do despite the triggers: suspend the trigger that refuses a
 * DELETE of an approval, delete the row and insert it again with another fingerprint, a later
 * expiry and/or `used_at` cleared, keeping its signature. (An attacker with plain write access
 * cannot: the DELETE is refused, see approval-store.test.ts.)
 */
export async function tamper(
  ledger: Ledger,
  id: string,
  change: { fingerprint?: string; extendMs?: number; unuse?: boolean },
): Promise<void> {
  if (!(ledger instanceof SqlLedger)) throw new Error('needs a SQL ledger');
  const db: LedgerDatabase = ledger.database();
  const pg = db.backend === 'postgres';
  await db.unit('transaction', async (tx) => {
    const row = await tx.get<Record<string, unknown>>('SELECT * FROM approvals WHERE id = ?', [id]);
    if (!row) throw new Error(`no approval ${id}`);
    await tx.run(
      pg ? 'ALTER TABLE approvals DISABLE TRIGGER approvals_no_delete' : 'DROP TRIGGER approvals_no_delete',
    );
    await tx.run('DELETE FROM approvals WHERE id = ?', [id]);
    await tx.run(
      pg
        ? 'ALTER TABLE approvals ENABLE TRIGGER approvals_no_delete'
        : `CREATE TRIGGER approvals_no_delete BEFORE DELETE ON approvals
           BEGIN SELECT RAISE(ABORT, 'approvals are append-only: a row is never deleted'); END`,
    );
    const cols = Object.keys(row).filter((c) => c !== 'expires_at');
    const values = cols.map((c) => {
      if (c === 'fingerprint' && change.fingerprint) return change.fingerprint;
      if (change.unuse && (c === 'used_at' || c === 'used_by_activity')) return null;
      return row[c];
    });
    // A widened expiry: `extendMs` from now (database time); else the stored one as it was.
    const expires = change.extendMs ? `${db.now} + ${db.ms('?')}` : '?';
    await tx.run(
      `INSERT INTO approvals (${cols.join(', ')}, expires_at) VALUES (${cols.map(() => '?').join(', ')}, ${expires})`,
      [...values, change.extendMs ?? row.expires_at],
    );
  });
}
