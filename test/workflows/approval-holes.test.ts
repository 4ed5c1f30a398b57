/**
 * Issue 21, the three holes an outside attack found, closed on a durable run on both ledger
 * backends (SQLite and PostgreSQL): a leftover approval never authorises a later proposal of
 * the same call (the tool's counter does not move), a refused resume is audited as refused
 * with the approval it names, and an untrusted approval never runs anything.
 */
import { ApprovalStore, approvalVerifier } from '../../storage/approvals';
import { signRequest } from '../../operators/sign';
import { reportQuery, resumeUpdate, statusQuery, type ResumeRequest } from '../../common/contracts';
import { TerminalState } from '../../guard';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { backendNames, createTestDb, type TestDb } from '../ledger/helpers/backends';
import { startHarness, type Harness } from '../helpers/run-harness';

type Run = Awaited<ReturnType<Harness['start']>>;
import { live, waitFor } from '../helpers/run-inputs';
import { alice, bob, signedGrant, testOperators } from '../approvals/signing';
import { runResult } from '../helpers/run-result';

describe.each(backendNames)('approvals on a durable run, %s ledger (issue 21)', (backend) => {
  let db: TestDb;
  let h: Harness;
  /** The store as agentctl with the operators file uses it: it can tell what the worker trusts. */
  let store: ApprovalStore;
  beforeAll(async () => {
    db = await createTestDb(backend);
    const worldUrl = `sqlite:${join(mkdtempSync(join(tmpdir(), 'alg-world-')), 'world.db')}`;
    h = await startHarness({ dbUrl: db.url, worldUrl, operators: testOperators() });
    store = ApprovalStore.over(h.deps.ledger).verifiedBy(approvalVerifier(testOperators()));
  });
  afterAll(async () => {
    await h?.close();
    await db?.cleanup();
  });

  const transfer = { from: 'acc-1', to: 'acc-2', amountCents: 9_900, reference: 'inv-21' };
  let n = 0;
  const resumeOf = (workflowId: string) => {
    const req = { actor: 'alice', reason: 'approved', precondition: '', requestId: `r-${++n}` };
    const signed: ResumeRequest = { ...req, auth: signRequest(alice.keyFile, 'resume', workflowId, req) };
    return signed;
  };

  /** The StopReport of a run once it waits for a resume. */
  const stoppedReport = async (handle: Run['handle']) => {
    await waitFor(
      () => handle.query(statusQuery),
      (s) => s.waitingForResume,
    );
    return handle.query(reportQuery);
  };

  it('a leftover approval does not run a later proposal of the same call: it stops again', async () => {
    const run = await h.start(
      live(
        [
          { tool: 'transfer_funds', args: transfer, operationKey: 'pay:first' },
          { tool: 'transfer_funds', args: transfer, operationKey: 'pay:second' },
          { tool: 'complete_task', args: { summary: 'paid twice, approved twice' } },
        ],
        { resumeWindowMs: 60_000 },
      ),
    );
    const first = await stoppedReport(run.handle);
    const call = {
      runId: run.workflowId,
      stopRef: first?.last_safe_checkpoint as string,
      tool: 'transfer_funds',
      fingerprint: first?.blocked_call?.fingerprint as string,
      argsHash: first?.blocked_call?.args_digest as string,
      reason: 'invoice checked',
      ttlMs: 60_000,
    };
    // Two valid signed approvals for the same stop and call.
    const a1 = await store.grant(signedGrant(alice.keyFile, call));
    const a2 = await store.grant(signedGrant(alice.keyFile, { ...call, reason: 'approved again' }));
    expect(await run.handle.executeUpdate(resumeUpdate, { args: [resumeOf(run.workflowId)] })).toMatchObject({
      accepted: true,
    });

    // The first call ran once; the second proposal stopped approval_required again.
    await waitFor(
      () => run.handle.query(statusQuery),
      (s) => s.waitingForResume && s.executed >= 1,
    );
    expect((await h.counters(run.workflowId)).transfer_funds).toBe(1);
    const second = await run.handle.query(reportQuery);
    expect(second).toMatchObject({ guard_reason: 'approval_required' });
    expect(second?.last_safe_checkpoint).not.toBe(call.stopRef);
    const states = new Map((await store.list({ runId: run.workflowId })).map((a) => [a.id, a.state]));
    expect([...states.values()].sort()).toEqual(['expired', 'used']);

    // The leftover does not lift the new stop either: refused, and audited as refused.
    const refused = await run.handle.executeUpdate(resumeUpdate, { args: [resumeOf(run.workflowId)] });
    expect(refused).toMatchObject({
      accepted: false,
      reason: expect.stringMatching(/other_stop|expired|used/),
    });
    expect((await h.counters(run.workflowId)).transfer_funds).toBe(1);

    const audit = await store.audit({ runId: run.workflowId });
    const used = audit.find((e) => e.action === 'consumed')?.approvalId;
    const leftover = used === a1.id ? a2.id : a1.id;
    expect(audit.filter((e) => e.action === 'consumed')).toHaveLength(1);
    expect(
      audit.some(
        (e) => e.action === 'refused' && e.approvalId === leftover && /superseded/.test(e.detail ?? ''),
      ),
    ).toBe(true);
    expect(audit[audit.length - 1]).toMatchObject({
      action: 'refused',
      detail: expect.stringMatching(/^resume refused/),
    });

    // A fresh approval for the new stop runs the second call once; the run completes.
    await store.grant(
      signedGrant(alice.keyFile, {
        ...call,
        stopRef: second?.last_safe_checkpoint as string,
        reason: 'second transfer checked',
      }),
    );
    expect(await run.handle.executeUpdate(resumeUpdate, { args: [resumeOf(run.workflowId)] })).toMatchObject({
      accepted: true,
    });
    expect((await runResult(run)).terminal_state).toBe(TerminalState.COMPLETED);
    expect((await h.counters(run.workflowId)).transfer_funds).toBe(2);
  });

  it('an approval by an operator without the approve role is audited refused when stored and when a resume is refused', async () => {
    const run = await h.start(
      live(
        [
          { tool: 'transfer_funds', args: { ...transfer, reference: 'inv-21-bob' } },
          { tool: 'complete_task', args: { summary: 'paid' } },
        ],
        { resumeWindowMs: 60_000 },
      ),
    );
    const report = await stoppedReport(run.handle);
    const byBob = await store.grant(
      signedGrant(bob.keyFile, {
        runId: run.workflowId,
        stopRef: report?.last_safe_checkpoint as string,
        tool: 'transfer_funds',
        fingerprint: report?.blocked_call?.fingerprint as string,
        argsHash: report?.blocked_call?.args_digest as string,
        reason: 'bob approves',
        ttlMs: 60_000,
      }),
    );
    const unsigned = await store.grant({
      runId: run.workflowId,
      stopRef: report?.last_safe_checkpoint as string,
      tool: 'transfer_funds',
      fingerprint: report?.blocked_call?.fingerprint as string,
      argsHash: report?.blocked_call?.args_digest as string,
      actor: 'alice',
      reason: 'unsigned',
      ttlMs: 60_000,
    });
    const answer = await run.handle.executeUpdate(resumeUpdate, { args: [resumeOf(run.workflowId)] });
    expect(answer).toMatchObject({ accepted: false, reason: expect.stringMatching(/unverified/) });
    expect(await h.counters(run.workflowId)).not.toHaveProperty('transfer_funds');
    const audit = await store.audit({ runId: run.workflowId });
    expect(audit.map((e) => e.action)).not.toContain('approved');
    expect(audit.filter((e) => e.action === 'refused' && e.approvalId === byBob.id)[0]?.detail).toMatch(
      /^untrusted: .*may not approve/,
    );
    expect(audit.filter((e) => e.action === 'refused' && e.approvalId === unsigned.id)[0]?.detail).toMatch(
      /^untrusted: unsigned approve refused/,
    );
    const last = audit[audit.length - 1];
    expect(last).toMatchObject({
      action: 'refused',
      detail: expect.stringMatching(/^resume refused \(unverified\)/),
    });
    expect([byBob.id, unsigned.id]).toContain(last?.approvalId);
    await run.handle.terminate('test done');
  });

  it('issue 37: every refused resume leaves one audit row naming the open approval, in the gate, before any approval is read', async () => {
    const run = await h.start(
      live(
        [
          { tool: 'transfer_funds', args: { ...transfer, reference: 'inv-37' } },
          { tool: 'complete_task', args: { summary: 'paid' } },
        ],
        { resumeWindowMs: 60_000 },
      ),
    );
    const report = await stoppedReport(run.handle);
    const approval = await store.grant(
      signedGrant(alice.keyFile, {
        runId: run.workflowId,
        stopRef: report?.last_safe_checkpoint as string,
        tool: 'transfer_funds',
        fingerprint: report?.blocked_call?.fingerprint as string,
        argsHash: report?.blocked_call?.args_digest as string,
        reason: 'invoice checked',
        ttlMs: 60_000,
      }),
    );
    const before = (await store.audit({ runId: run.workflowId })).length;
    const resume = (req: ResumeRequest) => run.handle.executeUpdate(resumeUpdate, { args: [req] });
    // Unsigned (this worker requires signatures): refused before the approval is read, twice.
    for (const requestId of ['u-37-1', 'u-37-2'])
      expect(await resume({ actor: 'alice', reason: 'go', precondition: '', requestId })).toMatchObject({
        accepted: false,
        reason: expect.stringMatching(/^not authorised: unsigned resume refused/),
      });
    // Signed, but raising a budget the run did not stop for: refused by the gate too.
    const raise = { ...resumeOf(run.workflowId), raise: { maxSteps: 99 } };
    const signedRaise: ResumeRequest = {
      ...raise,
      auth: signRequest(alice.keyFile, 'resume', run.workflowId, {
        actor: raise.actor,
        reason: raise.reason,
        precondition: raise.precondition,
        requestId: raise.requestId,
        raise: raise.raise,
      }),
    };
    expect(await resume(signedRaise)).toMatchObject({
      accepted: false,
      reason: expect.stringMatching(/^raise /),
    });
    expect(await h.counters(run.workflowId)).not.toHaveProperty('transfer_funds');
    const refused = (await store.audit({ runId: run.workflowId })).slice(before);
    expect(refused.map((e) => [e.action, e.approvalId])).toEqual([
      ['refused', approval.id],
      ['refused', approval.id],
      ['refused', approval.id],
    ]);
    expect(refused.map((e) => e.detail)).toEqual([
      expect.stringMatching(/^resume u-37-1 refused: not authorised: unsigned resume refused/),
      expect.stringMatching(/^resume u-37-2 refused: not authorised: unsigned resume refused/),
      expect.stringMatching(/^resume r-\d+ refused: raise refused: the run stopped for approval_required/),
    ]);
    // The approval was never touched: a signed resume now uses it, once.
    expect(await resume(resumeOf(run.workflowId))).toMatchObject({ accepted: true });
    expect((await runResult(run)).terminal_state).toBe(TerminalState.COMPLETED);
    expect((await h.counters(run.workflowId)).transfer_funds).toBe(1);
  });
});
