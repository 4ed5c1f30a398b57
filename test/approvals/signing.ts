/**
 * Test helpers for signed approvals: operators (alice may approve, bob may not, eve is
 * unknown), a signed grant as agentctl makes it, and an attacker's edit of a stored row.
 */
import { randomUUID } from 'node:crypto';
import { approvalSignedFields, type GrantInput } from '../../activities/approvals';
import { SqlLedger, type Ledger, type LedgerDatabase } from '../../activities/ledger';
import { OperatorRegistry } from '../../activities/operators/registry';
import { generateOperatorKey, signRequest, type OperatorKeyFile } from '../../activities/operators/sign';

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

/**
 * What someone with database access can do despite the triggers: delete the row and insert
 * it again with another fingerprint and/or a later expiry, keeping its signature.
 */
export async function tamper(
  ledger: Ledger,
  id: string,
  change: { fingerprint?: string; extendMs?: number },
): Promise<void> {
  if (!(ledger instanceof SqlLedger)) throw new Error('needs a SQL ledger');
  const db: LedgerDatabase = ledger.database();
  await db.unit('transaction', async (tx) => {
    const row = await tx.get<Record<string, unknown>>('SELECT * FROM approvals WHERE id = ?', [id]);
    if (!row) throw new Error(`no approval ${id}`);
    await tx.run('DELETE FROM approvals WHERE id = ?', [id]);
    const cols = Object.keys(row).filter((c) => c !== 'expires_at');
    const values = cols.map((c) => (c === 'fingerprint' && change.fingerprint ? change.fingerprint : row[c]));
    // A widened expiry: `extendMs` from now (database time); else the stored one as it was.
    const expires = change.extendMs ? `${db.now} + ${db.ms('?')}` : '?';
    await tx.run(
      `INSERT INTO approvals (${cols.join(', ')}, expires_at) VALUES (${cols.map(() => '?').join(', ')}, ${expires})`,
      [...values, change.extendMs ?? row.expires_at],
    );
  });
}
