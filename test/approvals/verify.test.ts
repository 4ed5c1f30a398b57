/**
 * The signature rules of approvals, without a database: the registry's `signed-expiry`
 * freshness (an old signature is fine, a passed signed expiry is not) leaves resume and stop
 * exactly as they were (5-minute window, the same signed bytes).
 */
import { approvalSignedFields } from '../../storage/approvals';
import { signRequest } from '../../operators/sign';
import { signedPayload } from '../../common/operator-auth';
import { canonicalJson } from '../../guard/canonical';
import { alice, testOperators } from './signing';

const HOUR = 3_600_000;
const t0 = Date.UTC(2026, 0, 1);

describe('approval signatures', () => {
  const decision = {
    id: 'apr_1',
    actor: 'alice',
    reason: 'ok',
    fingerprint: 'f:1',
    argsHash: `sha256:${'c'.repeat(64)}`,
    stopRef: 'checkpoint-2',
  };
  const check = (now: number, fields = approvalSignedFields({ ...decision, expiresAtMs: t0 + 2 * HOUR })) =>
    testOperators(() => now).check({
      action: 'approve',
      workflowId: 'run-1',
      fields,
      auth: signRequest(alice.keyFile, 'approve', 'run-1', fields, t0),
      freshness: 'signed-expiry',
    });

  it('accepts a signature hours old while its signed expiry is ahead, refuses it after', () => {
    expect(check(t0 + HOUR)).toMatchObject({ ok: true, operator: 'alice' });
    expect(check(t0 + 2 * HOUR)).toMatchObject({ ok: false, detail: expect.stringMatching(/expired at/) });
    expect(check(t0 - HOUR)).toMatchObject({ ok: false, detail: expect.stringMatching(/future/) });
    expect(check(t0, approvalSignedFields(decision))).toMatchObject({
      ok: false,
      detail: 'the signature covers no expiry',
    });
  });

  it('the signature covers the call digest: the same signature over another digest does not verify (issue 31)', () => {
    const fields = approvalSignedFields({ ...decision, expiresAtMs: t0 + 2 * HOUR });
    expect(fields.argsHash).toBe(decision.argsHash);
    const auth = signRequest(alice.keyFile, 'approve', 'run-1', fields, t0);
    const verify = (f: typeof fields) =>
      testOperators(() => t0 + HOUR).check({
        action: 'approve',
        workflowId: 'run-1',
        fields: f,
        auth,
        freshness: 'signed-expiry',
      });
    expect(verify(fields)).toMatchObject({ ok: true });
    expect(verify({ ...fields, argsHash: `sha256:${'d'.repeat(64)}` })).toMatchObject({ ok: false });
    expect(verify({ ...fields, argsHash: undefined })).toMatchObject({ ok: false });
  });

  it('keeps the 5-minute window for everything else', () => {
    const fields = approvalSignedFields({ ...decision, expiresAtMs: t0 + 2 * HOUR });
    const auth = signRequest(alice.keyFile, 'approve', 'run-1', fields, t0);
    const at = (now: number) =>
      testOperators(() => now).check({ action: 'approve', workflowId: 'run-1', fields, auth });
    expect(at(t0 + 60_000)).toMatchObject({ ok: true });
    expect(at(t0 + HOUR)).toMatchObject({ ok: false, detail: expect.stringMatching(/signature expired/) });
  });

  it('signs resume and stop fields exactly as before expiresAtMs existed', () => {
    const fields = { requestId: 'r-1', actor: 'alice', reason: 'more', raise: { maxSteps: 5 } };
    const before = canonicalJson({
      v: 1,
      action: 'resume',
      workflowId: 'run-1',
      issuedAtMs: t0,
      requestId: 'r-1',
      actor: 'alice',
      reason: 'more',
      precondition: '',
      raise: { maxSteps: 5 },
      fingerprint: null,
      stopRef: null,
    });
    expect(signedPayload('resume', 'run-1', fields, t0)).toBe(before);
    expect(signedPayload('approve', 'run-1', { ...fields, expiresAtMs: t0 + 1 }, t0)).toContain(
      `"expiresAtMs":${t0 + 1}`,
    );
  });
});
