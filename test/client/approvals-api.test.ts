/**
 * The package's approval API (client/approvals.ts, exported by client/api.ts) against the
 * shared dev server and an in-process worker: an app approves and denies from its own code,
 * with the rules of `agentctl approvals` (bound to the run's current stop and call, refused
 * for a run not waiting for one, signed with an operator key the worker verifies).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  approveRun,
  CliError,
  denyRun,
  Exit,
  getApprovalAudit,
  getPendingApproval,
  listApprovals,
  listPendingApprovals,
  type ApprovalStoreOptions,
} from '../../client/api';
import { statusQuery } from '../../common/contracts';
import { alice, testOperators } from '../approvals/signing';
import { startHarness, type Harness } from '../helpers/run-harness';
import { live, search, waitFor, type ScriptCall } from '../helpers/run-inputs';
import { runResult } from '../helpers/run-result';

/** A run whose first call is a transfer (needs approval), then done. */
function transferRun(reference: string): { calls: ScriptCall[]; transfer: Record<string, unknown> } {
  const transfer = { from: 'acc-1', to: 'acc-2', amountCents: 500, reference };
  return {
    transfer,
    calls: [
      { tool: 'transfer_funds', args: transfer },
      { tool: 'complete_task', args: { summary: 'ok' } },
    ],
  };
}

async function rejection(p: Promise<unknown>): Promise<CliError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(CliError);
  return err as CliError;
}

describe('approval API (open worker)', () => {
  let h: Harness;
  let store: ApprovalStoreOptions;
  beforeAll(async () => {
    h = await startHarness();
    // Hermetic: nothing from this process's environment (no key, no operators file).
    store = { ledgerUrl: h.dbUrl, env: {} };
  });
  afterAll(async () => {
    await h?.close();
  });

  it('refuses a run that is not waiting for an approval (exit 3) and stores nothing', async () => {
    const q = search('temporal');
    const run = await h.start(
      live([q, q, q, { tool: 'complete_task', args: { summary: 'x' } }], { resumeWindowMs: 60_000 }),
    );
    await waitFor(
      () => run.handle.query(statusQuery),
      (s) => s.waitingForResume,
    );
    const err = await rejection(approveRun(h.env.client, run.workflowId, { ...store, reason: 'looks fine' }));
    expect(err.exitCode).toBe(Exit.REFUSED);
    expect(err.message).toBe(
      `run ${run.workflowId} is not waiting for an approval (it is stopped for same_call_repeat)`,
    );
    const denied = await rejection(denyRun(h.env.client, run.workflowId, { ...store, reason: 'no' }));
    expect(denied.exitCode).toBe(Exit.REFUSED);
    await expect(getPendingApproval(h.env.client, run.workflowId)).rejects.toMatchObject({
      exitCode: Exit.REFUSED,
    });
    expect(await listPendingApprovals(h.env.client, { runId: run.workflowId })).toEqual([]);
    expect(await listApprovals({ ...store, runId: run.workflowId })).toEqual([]);
    expect(await getApprovalAudit({ ...store, runId: run.workflowId })).toEqual([]);

    const missing = await rejection(approveRun(h.env.client, 'no-such-run', { ...store, reason: 'x' }));
    expect(missing.exitCode).toBe(Exit.ERROR);
    await run.handle.terminate('test done');
  });

  it('lists the waiting call, denies it (the run stays stopped), then approves from code: the call runs once', async () => {
    const { calls, transfer } = transferRun('api-1');
    const run = await h.start(live(calls, { resumeWindowMs: 60_000 }));
    await waitFor(
      () => run.handle.query(statusQuery),
      (s) => s.waitingForResume,
    );

    const pending = await listPendingApprovals(h.env.client, { runId: run.workflowId });
    expect(pending).toEqual([
      expect.objectContaining({
        runId: run.workflowId,
        reason: 'approval_required',
        tool: 'transfer_funds',
        args: transfer,
        stopRef: expect.stringMatching(/^checkpoint-/),
      }),
    ]);
    expect(await getPendingApproval(h.env.client, run.workflowId)).toEqual(pending[0]);

    // Bad input: exit 2, nothing stored.
    const noReason = await rejection(approveRun(h.env.client, run.workflowId, { ...store, reason: ' ' }));
    expect(noReason.exitCode).toBe(Exit.USAGE);
    const badTtl = await rejection(
      approveRun(h.env.client, run.workflowId, { ...store, reason: 'x', ttlMs: 8 * 86_400_000 }),
    );
    expect(badTtl.exitCode).toBe(Exit.USAGE);
    expect(badTtl.message).toContain('at most 7 days');
    const badKey = await rejection(
      approveRun(h.env.client, run.workflowId, { ...store, reason: 'x', key: '/nonexistent/key.json' }),
    );
    expect(badKey.exitCode).toBe(Exit.USAGE);
    expect(badKey.message).toContain('/nonexistent/key.json');
    expect(await listApprovals({ ...store, runId: run.workflowId })).toEqual([]);

    const denied = await denyRun(h.env.client, run.workflowId, {
      ...store,
      actor: 'bob',
      reason: 'wrong account',
    });
    expect(denied.call).toEqual(pending[0]);
    expect(denied.denial).toMatchObject({ approver: 'bob', state: 'denied', auth: null });
    expect(denied.withdrawn).toEqual([]);
    expect((await run.handle.query(statusQuery)).waitingForResume).toBe(true);
    expect(await h.counters(run.workflowId)).not.toHaveProperty('transfer_funds');

    const approved = await approveRun(h.env.client, run.workflowId, {
      ...store,
      actor: 'alice',
      reason: 'checked the account',
      ttlMs: 5 * 60_000,
      resume: true,
    });
    // No operators here: it cannot tell whether the workers will trust it (issue 31: it said
    // `true` before, for bob's and unsigned approvals too); audited `submitted`, below.
    expect(approved.trusted).toBeNull();
    expect(approved.untrusted).toBeNull();
    expect(approved.call).toEqual(pending[0]);
    expect(approved.approval).toMatchObject({
      runId: run.workflowId,
      stopRef: pending[0]?.stopRef,
      fingerprint: pending[0]?.fingerprint,
      approver: 'alice',
      auth: null,
    });
    expect(approved.resume).toMatchObject({ accepted: true });
    expect((await runResult(run)).terminal_state).toBe('COMPLETED');
    expect((await h.counters(run.workflowId)).transfer_funds).toBe(1);

    // Closed: nothing to approve; the store (here through the worker's own open ledger) shows what happened.
    const late = await rejection(approveRun(h.env.client, run.workflowId, { ...store, reason: 'again' }));
    expect(late.exitCode).toBe(Exit.REFUSED);
    expect(late.message).toContain('is closed (COMPLETED)');
    const rows = await listApprovals({ ledger: h.deps.ledger, env: {}, runId: run.workflowId });
    expect(rows.map((a) => [a.state, a.approver]).sort()).toEqual([
      ['denied', 'bob'],
      ['used', 'alice'],
    ]);
    const audit = await getApprovalAudit({ ...store, runId: run.workflowId });
    expect(audit.map((e) => e.action)).toEqual(expect.arrayContaining(['denied', 'submitted', 'consumed']));
    expect(audit.find((e) => e.action === 'submitted')).toMatchObject({
      approvalId: approved.approval.id,
      actor: 'alice',
    });
  });
});

describe('approval API signed with an operator key, on a worker with operators', () => {
  let h: Harness;
  let store: ApprovalStoreOptions;
  const keyFile = join(mkdtempSync(join(tmpdir(), 'alg-apikey-')), 'alice.key.json');
  beforeAll(async () => {
    writeFileSync(keyFile, JSON.stringify(alice.keyFile), { mode: 0o600 });
    h = await startHarness({ operators: testOperators() });
    // The client knows the workers' operators too, so it can tell what they will trust.
    store = { ledgerUrl: h.dbUrl, env: {}, operators: testOperators() };
  });
  afterAll(async () => {
    await h?.close();
  });

  it('an unsigned approval is stored untrusted (audited refused); the key object signs one the worker uses once', async () => {
    const { calls } = transferRun('api-signed');
    const run = await h.start(live(calls, { resumeWindowMs: 60_000 }));
    await waitFor(
      () => run.handle.query(statusQuery),
      (s) => s.waitingForResume,
    );

    const unsigned = await approveRun(h.env.client, run.workflowId, {
      ...store,
      actor: 'alice',
      reason: 'unsigned',
    });
    expect(unsigned.trusted).toBe(false);
    expect(unsigned.untrusted).toMatch(/unsigned/);
    expect(unsigned.approval.auth).toBeNull();
    expect(unsigned.resume).toBeNull();
    expect(await h.counters(run.workflowId)).not.toHaveProperty('transfer_funds');
    const audited = await getApprovalAudit({ ...store, approvalId: unsigned.approval.id });
    expect(audited[0]).toMatchObject({ action: 'refused', detail: expect.stringMatching(/^untrusted: /) });

    const mismatch = await rejection(
      approveRun(h.env.client, run.workflowId, { ...store, actor: 'bob', key: alice.keyFile, reason: 'x' }),
    );
    expect(mismatch.exitCode).toBe(Exit.USAGE);
    expect(mismatch.message).toContain('does not match');

    // A denial signed from the key file's path is stored with its signature; the run stays stopped.
    const denied = await denyRun(h.env.client, run.workflowId, { ...store, key: keyFile, reason: 'wait' });
    expect(denied.denial).toMatchObject({ approver: 'alice', auth: { operator: 'alice' } });
    expect(denied.withdrawn).toEqual([unsigned.approval.id]);
    expect((await run.handle.query(statusQuery)).waitingForResume).toBe(true);

    const approved = await approveRun(h.env.client, run.workflowId, {
      ...store,
      key: alice.keyFile,
      reason: 'checked',
      resume: true,
    });
    expect(approved.trusted).toBe(true);
    expect(approved.approval).toMatchObject({ approver: 'alice', auth: { operator: 'alice' } });
    expect(approved.resume).toMatchObject({ accepted: true });
    expect((await runResult(run)).terminal_state).toBe('COMPLETED');
    expect((await h.counters(run.workflowId)).transfer_funds).toBe(1);
  });
});
