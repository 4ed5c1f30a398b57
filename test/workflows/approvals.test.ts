/**
 * Approvals end to end on the real dev server: a run proposing a call that needs approval
 * stops NEEDS_HUMAN approval_required before the call runs (counter 0), showing the call; a
 * resume without an approval is refused; an approval bound to that stop and call lets the
 * resume through and the call runs exactly once (counter 1); the used approval authorises
 * nothing more.
 */
import { ApprovalStore } from '../../storage/approvals';
import { signRequest } from '../../operators/sign';
import {
  checkpointQuery,
  reportQuery,
  resumeUpdate,
  statusQuery,
  type ResumeRequest,
} from '../../common/contracts';
import { GuardReason, TerminalState } from '../../guard';
import { startHarness, type Harness } from '../helpers/run-harness';
import { live, waitFor } from '../helpers/run-inputs';
import { alice, bob, eve, signedGrant, tamper, testOperators } from '../approvals/signing';
import { runResult } from '../helpers/run-result';

// The workflow side lives in workflows/run-state.ts; skip cleanly on a tree without it.
const withWorkflowSide = (GuardReason as Record<string, string>).APPROVAL_REQUIRED ? describe : describe.skip;

withWorkflowSide('approvals on a durable run', () => {
  let h: Harness;
  let store: ApprovalStore;
  beforeAll(async () => {
    h = await startHarness();
    store = ApprovalStore.over(h.deps.ledger);
  });
  afterAll(async () => {
    await h?.close();
  });

  const transfer = { from: 'acc-1', to: 'acc-2', amountCents: 12_500, reference: 'inv-77' };

  it('stops before the call, refuses a resume without approval, runs the call once after one', async () => {
    const run = await h.start(
      live(
        [
          { tool: 'transfer_funds', args: transfer },
          { tool: 'complete_task', args: { summary: 'paid' } },
        ],
        {
          resumeWindowMs: 60_000,
        },
      ),
    );
    const status = await waitFor(
      () => run.handle.query(statusQuery),
      (s) => s.waitingForResume,
    );
    expect(status).toMatchObject({
      terminalState: TerminalState.NEEDS_HUMAN,
      guardReason: 'approval_required',
    });
    const report = await run.handle.query(reportQuery);
    expect(report?.blocked_call?.tool).toBe('transfer_funds');
    expect(report?.unmet_precondition).toContain('inv-77');
    const cp = await run.handle.query(checkpointQuery);
    expect(cp.stop?.blockedArgs).toEqual(transfer);
    expect(await h.counters(run.workflowId)).not.toHaveProperty('transfer_funds');

    const resume = (requestId: string) =>
      run.handle.executeUpdate(resumeUpdate, { args: [{ actor: 'alice', reason: 'approved', requestId }] });
    const refused = await resume('r-1');
    expect(refused.accepted).toBe(false);
    expect(refused.reason).toMatch(/none/);
    expect(await h.counters(run.workflowId)).not.toHaveProperty('transfer_funds');

    const approval = await store.grant({
      runId: run.workflowId,
      stopRef: report?.last_safe_checkpoint as string,
      tool: 'transfer_funds',
      fingerprint: report?.blocked_call?.fingerprint as string,
      argsHash: report?.blocked_call?.args_digest as string,
      actor: 'alice',
      reason: 'invoice checked',
      ttlMs: 60_000,
    });
    expect((await resume('r-2')).accepted).toBe(true);
    const result = await runResult(run);
    expect(result.terminal_state).toBe(TerminalState.COMPLETED);
    expect((await h.counters(run.workflowId)).transfer_funds).toBe(1);
    expect((await store.get(approval.id))?.state).toBe('used');
    // The refused resume (no approval yet) is on the record too.
    expect((await store.audit({ runId: run.workflowId })).map((e) => e.action)).toEqual([
      'requested',
      'refused',
      // Stored without the operators: submitted, not verified (issue 31); the worker used it.
      'submitted',
      'consumed',
    ]);
  });
});

withWorkflowSide('signed approvals on a worker with an operators file', () => {
  let h: Harness;
  let store: ApprovalStore;
  beforeAll(async () => {
    h = await startHarness({ operators: testOperators() });
    store = ApprovalStore.over(h.deps.ledger);
  });
  afterAll(async () => {
    await h?.close();
  });

  it('refuses unsigned, unknown-key, no-role, edited and expired approvals (nothing runs); the signed one runs the call once', async () => {
    const transfer = { from: 'acc-1', to: 'acc-2', amountCents: 4_200, reference: 'inv-signed' };
    const run = await h.start(
      live(
        [
          { tool: 'transfer_funds', args: transfer },
          { tool: 'complete_task', args: { summary: 'paid' } },
        ],
        { resumeWindowMs: 60_000 },
      ),
    );
    await waitFor(
      () => run.handle.query(statusQuery),
      (s) => s.waitingForResume,
    );
    const report = await run.handle.query(reportQuery);
    const call = {
      runId: run.workflowId,
      stopRef: report?.last_safe_checkpoint as string,
      tool: 'transfer_funds',
      fingerprint: report?.blocked_call?.fingerprint as string,
      argsHash: report?.blocked_call?.args_digest as string,
      reason: 'invoice checked',
      ttlMs: 60_000,
    };
    let n = 0;
    // Each resume is alice's, signed (she may lift any stop): only the approval is at stake.
    const resume = () => {
      const req = { actor: 'alice', reason: 'approved', precondition: '', requestId: `r-${++n}` };
      const signed: ResumeRequest = {
        ...req,
        auth: signRequest(alice.keyFile, 'resume', run.workflowId, req),
      };
      return run.handle.executeUpdate(resumeUpdate, { args: [signed] });
    };
    const refusedWith = async (pattern: RegExp) => {
      const answer = await resume();
      expect(answer).toMatchObject({ accepted: false, reason: expect.stringMatching(pattern) });
      expect((await run.handle.query(statusQuery)).waitingForResume).toBe(true);
      expect(await h.counters(run.workflowId)).not.toHaveProperty('transfer_funds');
    };

    await store.grant({ ...call, actor: 'alice' });
    await refusedWith(/unverified.*unsigned approve refused/);
    await store.grant(signedGrant(eve.keyFile, call));
    await refusedWith(/unverified/);
    await store.grant(signedGrant(bob.keyFile, call));
    await refusedWith(/unverified/);
    // Signed for another call, then pointed at this one by someone with database access.
    const other = await store.grant(signedGrant(alice.keyFile, { ...call, fingerprint: 'transfer_funds:0' }));
    await tamper(h.deps.ledger, other.id, { fingerprint: call.fingerprint });
    // Signed for 50 ms; expired; then widened in the database.
    const short = await store.grant(signedGrant(alice.keyFile, { ...call, ttlMs: 50 }));
    await new Promise((r) => setTimeout(r, 100));
    await refusedWith(/unverified/);
    await tamper(h.deps.ledger, short.id, { extendMs: 3_600_000 });
    await refusedWith(/unverified/);
    const verdicts = (await store.audit({ runId: run.workflowId })).map((e) => e.action);
    expect(verdicts).not.toContain('consumed');

    const good = await store.grant(signedGrant(alice.keyFile, call));
    expect(await resume()).toMatchObject({ accepted: true, reason: expect.stringContaining(good.id) });
    expect((await runResult(run)).terminal_state).toBe(TerminalState.COMPLETED);
    expect((await h.counters(run.workflowId)).transfer_funds).toBe(1);
    expect((await store.get(good.id))?.state).toBe('used');
    for (const a of await store.list({ runId: run.workflowId }))
      if (a.id !== good.id) expect(a.usedAt).toBeNull();
  });
});
