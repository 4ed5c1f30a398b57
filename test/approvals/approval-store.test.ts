/**
 * The approval store on both real backends (SQLite file, PostgreSQL schema): an approval is
 * used at most once, only by its run and its call, never after it expired or was denied,
 * and every action lands in an audit the database itself refuses to change.
 */
import {
  ApprovalInputError,
  ApprovalStore,
  approvalVerifier,
  type GrantInput,
} from '../../storage/approvals';
import type { Ledger, SqlLedger } from '../../storage/ledger';
import { backendNames, createTestDb, type TestDb } from '../ledger/helpers/backends';
import { alice, bob, eve, mallory, signedGrant, tamper, testOperators } from './signing';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** The digest of the call the tests approve (issue 31: an approval names it). */
const D = `sha256:${'a'.repeat(64)}`;
/** Another call's digest. */
const D2 = `sha256:${'b'.repeat(64)}`;

describe.each(backendNames)('approval store on %s', (backend) => {
  let db: TestDb;
  let ledger: Ledger;
  let store: ApprovalStore;
  /** The store as a worker with an operators file uses it. */
  let verified: ApprovalStore;
  let n = 0;
  /** A fresh run id per test, so tests never see each other's rows. */
  let run: string;

  beforeAll(async () => {
    db = await createTestDb(backend);
    ledger = await db.open();
    store = ApprovalStore.over(ledger);
    verified = store.verifiedBy(approvalVerifier(testOperators()));
  });
  afterAll(async () => {
    await db?.cleanup();
  });
  beforeEach(() => {
    run = `run-${++n}`;
  });

  const grantOf = (over: Partial<GrantInput> = {}): GrantInput => ({
    runId: run,
    stopRef: 'checkpoint-3',
    tool: 'transfer_funds',
    fingerprint: 'transfer_funds:00000000000000aa',
    argsHash: D,
    actor: 'alice',
    reason: 'ticket 42',
    ttlMs: 60_000,
    ...over,
  });
  const use = (
    approvalId: string,
    over: { runId?: string; fingerprint?: string; argsHash?: string; by?: string; stopRef?: string } = {},
  ) =>
    store.consume({
      approvalId,
      runId: over.runId ?? run,
      fingerprint: over.fingerprint ?? 'transfer_funds:00000000000000aa',
      argsHash: over.argsHash ?? D,
      stopRef: over.stopRef ?? 'checkpoint-3',
      by: over.by ?? `${run}/5`,
    });
  /** This run's call at the stop the tests grant for (`checkpoint-3`), as the plan activity asks. */
  const at = (fingerprint: string, argsHash: string | null, stopRef: string | null = 'checkpoint-3') => ({
    runId: run,
    fingerprint,
    argsHash: argsHash ?? D,
    stopRef,
    by: 'worker-1',
  });
  const actions = async () => (await store.audit({ runId: run })).map((e) => e.action);

  it('grants a valid approval bound to the run, stop and call, and audits it', async () => {
    const a = await store.grant(grantOf());
    expect(a).toMatchObject({
      runId: run,
      stopRef: 'checkpoint-3',
      state: 'valid',
      approver: 'alice',
      usedAt: null,
    });
    expect(a.id).toMatch(/^apr_/);
    expect(Date.parse(a.expiresAt) - Date.parse(a.createdAt)).toBe(60_000);
    expect(await store.findUsable(at(a.fingerprint, null))).toMatchObject({ id: a.id });
    expect(
      await store.checkStop(run, { fingerprint: a.fingerprint, argsHash: D }, 'checkpoint-3'),
    ).toMatchObject({ ok: true });
    // This store has no operators: it cannot verify, so the audit says submitted (issue 31).
    expect(await actions()).toEqual(['submitted']);
  });

  it('is consumed once; a second use is refused and audited', async () => {
    const a = await store.grant(grantOf());
    const first = await use(a.id);
    expect(first).toMatchObject({ ok: true, approval: { state: 'used', usedByActivity: `${run}/5` } });
    const second = await use(a.id, { by: `${run}/9` });
    expect(second).toMatchObject({ ok: false, why: 'used' });
    expect((await store.get(a.id))?.usedByActivity).toBe(`${run}/5`);
    expect(await store.findUsable(at(a.fingerprint, null))).toBeNull();
    expect(
      await store.checkStop(run, { fingerprint: a.fingerprint, argsHash: D }, 'checkpoint-3'),
    ).toMatchObject({
      ok: false,
      why: 'used',
    });
    expect(await actions()).toEqual(['submitted', 'consumed', 'refused']);
  });

  it('a retry of the same activity may use it again; a replay by another activity may not', async () => {
    const a = await store.grant(grantOf());
    expect(await use(a.id)).toMatchObject({ ok: true });
    const retry = await store.consume({
      approvalId: a.id,
      runId: run,
      fingerprint: a.fingerprint,
      argsHash: D,
      stopRef: 'checkpoint-3',
      by: `${run}/5`,
      retry: true,
    });
    expect(retry).toMatchObject({ ok: true });
    const replay = await store.consume({
      approvalId: a.id,
      runId: run,
      fingerprint: a.fingerprint,
      argsHash: D,
      stopRef: 'checkpoint-3',
      by: `${run}/6`,
      retry: true,
    });
    expect(replay).toMatchObject({ ok: false, why: 'used' });
  });

  it('refuses an expired approval', async () => {
    const a = await store.grant(grantOf({ ttlMs: 1 }));
    await sleep(30);
    expect((await store.get(a.id))?.state).toBe('expired');
    expect(await store.findUsable(at(a.fingerprint, null))).toBeNull();
    expect(
      await store.checkStop(run, { fingerprint: a.fingerprint, argsHash: D }, 'checkpoint-3'),
    ).toMatchObject({
      ok: false,
      why: 'expired',
    });
    expect(await use(a.id)).toMatchObject({ ok: false, why: 'expired' });
    expect((await store.get(a.id))?.usedAt).toBeNull();
  });

  it('refuses another call, another run, an unknown id, and another stop', async () => {
    const a = await store.grant(grantOf());
    expect(await use(a.id, { fingerprint: 'transfer_funds:00000000000000bb' })).toMatchObject({
      ok: false,
      why: 'other_call',
    });
    expect(await use(a.id, { runId: `${run}-other` })).toMatchObject({ ok: false, why: 'other_run' });
    expect(await use('apr_nope')).toMatchObject({ ok: false, why: 'none' });
    expect(
      await store.checkStop(run, { fingerprint: a.fingerprint, argsHash: D }, 'checkpoint-9'),
    ).toMatchObject({
      ok: false,
      why: 'other_stop',
    });
    expect(await store.findUsable(at('transfer_funds:00000000000000bb', null))).toBeNull();
    // None of the refusals used it up.
    expect(await use(a.id)).toMatchObject({ ok: true });
  });

  it('binds the args hash when the approver gave one', async () => {
    const a = await store.grant(grantOf({ argsHash: D }));
    expect(await store.findUsable(at(a.fingerprint, D2))).toBeNull();
    const wrong = await store.consume({
      approvalId: a.id,
      runId: run,
      fingerprint: a.fingerprint,
      argsHash: D2,
      stopRef: 'checkpoint-3',
      by: 'x',
    });
    expect(wrong).toMatchObject({ ok: false, why: 'other_call' });
    expect(await store.findUsable(at(a.fingerprint, D))).toMatchObject({ id: a.id });
    // Rows stored before approvals were bound to the digest (args_hash null) authorise nothing.
    const legacy = `apr_legacy-${run}`;
    await (ledger as SqlLedger<unknown>).database().unit('write', (tx) =>
      tx.run(
        `INSERT INTO approvals (id, run_id, stop_ref, tool, fingerprint, args_hash, approver, reason, created_at, expires_at)
         VALUES (?, ?, 'checkpoint-3', 'transfer_funds', 'transfer_funds:00000000000000cc', NULL, 'alice', 'old', ${(ledger as SqlLedger<unknown>).database().now}, ${(ledger as SqlLedger<unknown>).database().now} + ${(ledger as SqlLedger<unknown>).database().ms('60000')})`,
        [legacy, run],
      ),
    );
    expect(await store.findUsable(at('transfer_funds:00000000000000cc', D))).toBeNull();
    expect(await use(legacy, { fingerprint: 'transfer_funds:00000000000000cc' })).toMatchObject({
      ok: false,
      why: 'other_call',
    });
    expect(
      await store.checkStop(
        run,
        { fingerprint: 'transfer_funds:00000000000000cc', argsHash: D },
        'checkpoint-3',
      ),
    ).toMatchObject({ ok: false, why: 'other_call' });
  });

  it('a denial withdraws pending approvals of the call, is refused, and audits it', async () => {
    const a = await store.grant(grantOf());
    const { denial, withdrawn } = await store.deny({
      ...grantOf(),
      actor: 'bob',
      reason: 'not this account',
    });
    expect(withdrawn).toEqual([a.id]);
    expect(denial).toMatchObject({ state: 'denied', approver: 'bob' });
    expect((await store.get(a.id))?.state).toBe('denied');
    expect(await store.findUsable(at(a.fingerprint, null))).toBeNull();
    expect(
      await store.checkStop(run, { fingerprint: a.fingerprint, argsHash: D }, 'checkpoint-3'),
    ).toMatchObject({
      ok: false,
      why: 'denied',
    });
    expect(await use(a.id)).toMatchObject({ ok: false, why: 'denied' });
    expect(await use(denial.id)).toMatchObject({ ok: false, why: 'denied' });
    expect(await actions()).toEqual(['submitted', 'denied', 'refused', 'refused']);
  });

  it('audits requests and refusals without an approval, and lists by run', async () => {
    await store.request(run, 'worker-1', 'transfer_funds:00000000000000aa transfer_funds {}');
    await store.refuse(run, `${run}/2`, 'called without an approval');
    const a = await store.grant(grantOf());
    const entries = await store.audit({ runId: run });
    expect(entries.map((e) => [e.action, e.approvalId])).toEqual([
      ['requested', null],
      ['refused', null],
      ['submitted', a.id],
    ]);
    expect(await store.list({ runId: run })).toEqual([expect.objectContaining({ id: a.id })]);
  });

  // Database errors are matched by message: node:sqlite makes its errors in Node's own realm,
  // not this jest file's, so they are no `Error` of this file and `rejects.toThrow` would
  // report "did not throw".
  it('the database refuses to change or delete audit rows and an approval binding', async () => {
    const a = await store.grant(grantOf());
    await expect(db.exec("UPDATE approval_audit SET actor = 'mallory'")).rejects.toHaveProperty(
      'message',
      expect.stringMatching(/append-only/),
    );
    await expect(db.exec('DELETE FROM approval_audit')).rejects.toHaveProperty(
      'message',
      expect.stringMatching(/append-only/),
    );
    await expect(
      db.exec("UPDATE approvals SET fingerprint = 'x' WHERE id = ?", [a.id]),
    ).rejects.toHaveProperty('message', expect.stringMatching(/immutable/));
    expect(await use(a.id)).toMatchObject({ ok: true });
    await expect(db.exec('UPDATE approvals SET used_at = NULL WHERE id = ?', [a.id])).rejects.toHaveProperty(
      'message',
      expect.stringMatching(/immutable/),
    );
    expect((await store.audit({ runId: run })).map((e) => e.actor)).toEqual(['alice', `${run}/5`]);
  });

  describe('issue 21: bound to its stop, used once in fact, audited truthfully', () => {
    const FP = 'transfer_funds:00000000000000aa';

    it('is offered and used only at the stop it was granted for', async () => {
      const a = await store.grant(grantOf());
      expect(await store.findUsable(at(FP, null, null))).toBeNull();
      expect(await store.findUsable(at(FP, null, 'checkpoint-4'))).toBeNull();
      expect(await use(a.id, { stopRef: 'checkpoint-4' })).toMatchObject({ ok: false, why: 'other_stop' });
      const none = await store.consume({
        approvalId: a.id,
        runId: run,
        fingerprint: FP,
        argsHash: D,
        by: `${run}/7`,
      });
      expect(none).toMatchObject({ ok: false, why: 'other_stop' });
      expect((await store.get(a.id))?.usedAt).toBeNull();
      expect(await use(a.id)).toMatchObject({ ok: true });
    });

    it('of two approvals for one stop and call at most one is used; the other expires unused, audited', async () => {
      const a = await store.grant(grantOf());
      const b = await store.grant(grantOf({ reason: 'approved twice' }));
      const first = await use(b.id);
      expect(first).toMatchObject({ ok: true });
      expect(await use(a.id, { by: `${run}/8` })).toMatchObject({
        ok: false,
        why: 'used',
        message: expect.stringContaining(`${b.id} was already used`),
      });
      expect((await store.get(a.id))?.state).toBe('expired');
      expect((await store.get(a.id))?.usedAt).toBeNull();
      expect(await store.findUsable(at(FP, null))).toBeNull();
      expect(await store.checkStop(run, { fingerprint: FP, argsHash: D }, 'checkpoint-3')).toMatchObject({
        ok: false,
      });
      const audit = await store.audit({ runId: run });
      expect(audit.map((e) => [e.action, e.approvalId])).toEqual([
        ['submitted', a.id],
        ['submitted', b.id],
        ['consumed', b.id],
        ['refused', a.id],
        ['refused', a.id],
      ]);
      expect(audit[3]?.detail).toMatch(/^superseded: .*expires unused/);
    });

    it('the database refuses to delete an approval or to undo a use (DELETE, UPDATE, TRUNCATE)', async () => {
      const a = await store.grant(grantOf());
      expect(await use(a.id)).toMatchObject({ ok: true });
      const refused = (sql: string, params: unknown[] = []) =>
        expect(db.exec(sql, params)).rejects.toHaveProperty('message', expect.stringMatching(/append-only/));
      await refused('DELETE FROM approvals WHERE id = ?', [a.id]);
      await refused('DELETE FROM approval_uses WHERE approval_id = ?', [a.id]);
      await refused("UPDATE approval_uses SET used_by_activity = 'x' WHERE approval_id = ?", [a.id]);
      if (backend === 'postgres') {
        await refused('TRUNCATE approvals');
        await refused('TRUNCATE approval_uses');
      }
      expect((await store.get(a.id))?.state).toBe('used');
    });

    it("even the database's owner re-inserting a used row unused does not make it usable", async () => {
      const a = await store.grant(grantOf());
      expect(await use(a.id)).toMatchObject({ ok: true });
      await tamper(ledger, a.id, { unuse: true });
      const raw = await db.exec('SELECT used_at FROM approvals WHERE id = ?', [a.id]);
      expect(raw[0]?.used_at ?? null).toBeNull();
      expect((await store.get(a.id))?.state).toBe('used');
      expect(await store.findUsable(at(FP, null))).toBeNull();
      expect(await use(a.id, { by: `${run}/9` })).toMatchObject({ ok: false, why: 'used' });
      expect(await store.checkStop(run, { fingerprint: FP, argsHash: D }, 'checkpoint-3')).toMatchObject({
        ok: false,
        why: 'used',
      });
    });

    it('audits an untrusted approval as refused when stored, and a refused resume with the approval and why', async () => {
      const unsigned = await verified.grant({ ...grantOf(), actor: 'alice' });
      const noRole = await verified.grant(
        signedGrant(bob.keyFile, {
          runId: run,
          stopRef: 'checkpoint-3',
          tool: 'transfer_funds',
          fingerprint: FP,
          argsHash: D,
          reason: 'bob tries',
          ttlMs: 60_000,
        }),
      );
      const stop = await verified.checkStop(
        run,
        { fingerprint: FP, argsHash: D },
        'checkpoint-3',
        `${run}/verify`,
      );
      expect(stop).toMatchObject({ ok: false, why: 'unverified' });
      const audit = await store.audit({ runId: run });
      expect(audit.map((e) => [e.action, e.approvalId]).slice(0, 2)).toEqual([
        ['refused', unsigned.id],
        ['refused', noRole.id],
      ]);
      expect(audit).toHaveLength(3);
      expect([unsigned.id, noRole.id]).toContain(audit[2]?.approvalId);
      expect(audit[0]?.detail).toMatch(/^untrusted: unsigned approve refused/);
      expect(audit[1]?.detail).toMatch(/^untrusted: .*may not approve/);
      expect(audit[2]?.detail).toMatch(/^resume refused \(unverified\)/);
      expect(audit.map((e) => e.action)).not.toContain('approved');
    });
  });

  describe('signed approvals, on a worker with an operators file', () => {
    const FP = 'transfer_funds:00000000000000aa';
    const call = (over: { fingerprint?: string; argsHash?: string; ttlMs?: number } = {}) => ({
      runId: run,
      stopRef: 'checkpoint-3',
      tool: 'transfer_funds',
      fingerprint: over.fingerprint ?? FP,
      argsHash: over.argsHash ?? D,
      reason: 'ticket 42',
      ttlMs: over.ttlMs ?? 60_000,
    });
    const useVerified = (approvalId: string, by = `${run}/5`) =>
      verified.consume({ approvalId, runId: run, fingerprint: FP, argsHash: D, stopRef: 'checkpoint-3', by });

    it('stores the signature and the signed expiry exactly; the signed one is used once, a replay refused', async () => {
      const g = signedGrant(alice.keyFile, call());
      const a = await store.grant(g);
      expect(a.id).toBe(g.signed?.id);
      expect(a.auth).toEqual(g.signed?.auth);
      expect(Date.parse(a.expiresAt)).toBe(g.signed?.expiresAtMs);
      expect(await verified.findUsable(at(FP, null))).toMatchObject({ id: a.id });
      expect(await verified.checkStop(run, { fingerprint: FP, argsHash: D }, 'checkpoint-3')).toMatchObject({
        ok: true,
      });
      expect(await useVerified(a.id)).toMatchObject({ ok: true });
      expect(await useVerified(a.id, `${run}/6`)).toMatchObject({ ok: false, why: 'used' });
      // Stored by a store that cannot verify: submitted; by one whose operators accept it: approved.
      const b = await verified.grant(signedGrant(alice.keyFile, call({ argsHash: D2 })));
      const audit = await store.audit({ runId: run });
      expect(audit.find((e) => e.approvalId === a.id)?.action).toBe('submitted');
      expect(audit.find((e) => e.approvalId === b.id)?.action).toBe('approved');
    });

    it('the signature binds the call digest: a row whose digest was changed does not verify (issue 31)', async () => {
      const a = await store.grant(signedGrant(alice.keyFile, call()));
      const forged = await store.grant({ ...signedGrant(alice.keyFile, call()), argsHash: D2 });
      expect(await verified.findUsable(at(FP, D))).toMatchObject({ id: a.id });
      expect(await verified.findUsable(at(FP, D2))).toBeNull();
      expect(await verified.checkStop(run, { fingerprint: FP, argsHash: D2 }, 'checkpoint-3')).toMatchObject({
        ok: false,
        why: 'unverified',
      });
      expect((await store.get(forged.id))?.state).toBe('valid');
    });

    it('accepts a signature made hours ago while its signed expiry is ahead (no 5-minute window)', async () => {
      const signedAt = Date.now() - 3 * 3_600_000;
      const a = await store.grant(signedGrant(alice.keyFile, call({ ttlMs: 4 * 3_600_000 }), signedAt));
      expect(await verified.checkStop(run, { fingerprint: FP, argsHash: D }, 'checkpoint-3')).toMatchObject({
        ok: true,
      });
      expect(await useVerified(a.id)).toMatchObject({ ok: true });
    });

    it('refuses unsigned, unknown-key, forged-key and no-approve-role approvals; none is used up', async () => {
      const rows = [
        await store.grant({ ...call(), actor: 'alice' }),
        await store.grant(signedGrant(eve.keyFile, call())),
        await store.grant(signedGrant(mallory.keyFile, call())),
        await store.grant(signedGrant(bob.keyFile, call())),
      ];
      const details = [
        /unsigned approve refused/,
        /unknown operator "eve"/,
        /bad signature/,
        /may not approve/,
      ];
      // The plain store would use any of them: the verifier is what refuses.
      expect(await store.findUsable(at(FP, null))).not.toBeNull();
      expect(await verified.findUsable(at(FP, null))).toBeNull();
      const stop = await verified.checkStop(run, { fingerprint: FP, argsHash: D }, 'checkpoint-3');
      expect(stop).toMatchObject({ ok: false, why: 'unverified' });
      for (const [i, a] of rows.entries()) {
        const out = await useVerified(a.id);
        expect(out).toMatchObject({
          ok: false,
          why: 'unverified',
          message: expect.stringMatching(details[i]!),
        });
        expect((await store.get(a.id))?.usedAt).toBeNull();
      }
      // Each refused where it was looked at: passed over by the plan's look-up (4), and at each use (4).
      expect((await store.audit({ runId: run })).filter((e) => e.action === 'refused')).toHaveLength(8);
      expect((await store.audit({ runId: run })).map((e) => e.action)).not.toContain('consumed');
    });

    it('refuses a row edited after signing (fingerprint, or a widened expiry) and an expired one', async () => {
      const other = await store.grant(
        signedGrant(alice.keyFile, call({ fingerprint: 'transfer_funds:00000000000000bb' })),
      );
      await tamper(ledger, other.id, { fingerprint: FP });
      const short = await store.grant(signedGrant(alice.keyFile, call({ ttlMs: 50 })));
      await sleep(80);
      expect(await useVerified(short.id)).toMatchObject({ ok: false, why: 'expired' });
      await tamper(ledger, short.id, { extendMs: 3_600_000 });
      expect((await store.get(short.id))?.state).toBe('valid');
      expect(await store.findUsable(at(FP, null))).not.toBeNull();
      expect(await verified.findUsable(at(FP, null))).toBeNull();
      expect(await verified.checkStop(run, { fingerprint: FP, argsHash: D }, 'checkpoint-3')).toMatchObject({
        ok: false,
        why: 'unverified',
      });
      for (const id of [other.id, short.id]) {
        expect(await useVerified(id)).toMatchObject({
          ok: false,
          why: 'unverified',
          message: /bad signature/,
        });
        expect((await store.get(id))?.usedAt).toBeNull();
      }
    });

    it('the database refuses to change the signature or the signed reason; bad signed input stores nothing', async () => {
      const a = await store.grant(signedGrant(alice.keyFile, call()));
      // On the ledger's own connection (the row is certainly visible there).
      const update = (sql: string) =>
        (ledger as SqlLedger<unknown>).database().unit('write', (tx) => tx.run(sql, [a.id]));
      for (const column of ['signature', 'signed_by', 'reason'])
        await expect(update(`UPDATE approvals SET ${column} = 'x' WHERE id = ?`)).rejects.toHaveProperty(
          'message',
          expect.stringMatching(/immutable/),
        );
      await expect(update('UPDATE approvals SET signed_at_ms = 1 WHERE id = ?')).rejects.toHaveProperty(
        'message',
        expect.stringMatching(/immutable/),
      );
      const g = signedGrant(alice.keyFile, call());
      await expect(store.grant({ ...g, actor: 'bob' })).rejects.toThrow(/not the signing operator/);
      await expect(store.grant({ ...g, signed: { ...g.signed!, id: 'x_1' } })).rejects.toThrow(/apr_/);
      expect((await store.list({ runId: run })).map((r) => r.id)).toEqual([a.id]);
    });
  });

  it('rejects bad input with a clear error and stores nothing', async () => {
    await expect(store.grant(grantOf({ actor: ' ' }))).rejects.toThrow(ApprovalInputError);
    await expect(store.grant(grantOf({ ttlMs: 0 }))).rejects.toThrow(/TTL/);
    await expect(store.grant(grantOf({ ttlMs: 8 * 24 * 3_600_000 }))).rejects.toThrow(/7 days/);
    expect(await store.list({ runId: run })).toEqual([]);
    expect(await actions()).toEqual([]);
  });
});
