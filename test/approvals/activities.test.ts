/**
 * The activity side of approvals, called directly on a real SQLite ledger + world: `plan`
 * marks a gated call and finds its approval, `runTool` uses it up before the tool runs
 * (exactly once: the tool's counter moves to 1 and never again), and a replayed, foreign or
 * missing approval runs nothing. `verifyPrecondition` lifts an approval_required stop only
 * with a valid approval for that stop and call.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { ApprovalStore, approvalRequired, parseApprovalPolicy } from '../../storage/approvals';
import { createActivities } from '../../activities/create-activities';
import { defineTool } from '../../tools/define-tool';
import type { ProposalInfo, RunToolInput } from '../../activities/types';
import { alice, signedGrant, tamper, testOperators } from './signing';
import { openDemoWorkerDeps, type DemoWorkerDeps } from '../../demo/deps';
import { TWIN_WIRES } from '../helpers/fingerprint-collision';

let wired = 0;
/** A gated write of our own (args-dependent), beside the demo's `transfer_funds`. */
const wire = defineTool({
  name: 'wire',
  description: 'Wire money; above 1000 cents a person must approve.',
  effect: 'write',
  schema: z.object({ ref: z.string(), cents: z.number().int() }).strict(),
  operationKey: (a) => `wire:${a.ref}`,
  requiresApproval: (a) => a.cents > 1000,
  async execute() {
    wired += 1;
    return { data: { ok: true } };
  },
});

describe('approvals in the activities', () => {
  let deps: DemoWorkerDeps;
  let acts: ReturnType<typeof createActivities>;
  let store: ApprovalStore;

  beforeAll(async () => {
    const url = `sqlite:${join(mkdtempSync(join(tmpdir(), 'alg-apr-')), 'agent.db')}`;
    deps = await openDemoWorkerDeps({ ledgerUrl: url, worldUrl: url, tools: [wire] });
    acts = createActivities(deps);
    store = ApprovalStore.over(deps.ledger);
  });
  afterAll(async () => {
    await deps?.close();
  });

  /** A plan turn, as the workflow asks it right after a resume lifted the stop `stopRef`. */
  async function planned(
    runId: string,
    tool: string,
    args: Record<string, unknown>,
    stopRef: string | null = 'checkpoint-0',
  ): Promise<ProposalInfo> {
    const out = await acts.plan({
      runId,
      goal: 'approvals',
      planner: { kind: 'scripted', live: true, script: { calls: [{ tool, args }] } } as never,
      memory: null,
      observation: null,
      approvalStopRef: stopRef,
    });
    if (!out.proposal) throw new Error('expected a proposal');
    return out.proposal;
  }
  const input = (
    runId: string,
    p: ProposalInfo,
    approvalId?: string | null,
    stopRef: string | null = 'checkpoint-0',
  ): RunToolInput => ({
    runId,
    tool: p.tool,
    args: p.args,
    operationKey: p.operationKey,
    fingerprint: p.fingerprint,
    argsHash: p.argsHash,
    approvalId: approvalId ?? null,
    approvalStopRef: stopRef,
    fixture: null,
  });
  const transfers = async (runId: string) => (await deps.world.counters(runId)).transfer_funds ?? 0;
  const transfer = (ref: string) => ({ from: 'acc-1', to: 'acc-2', amountCents: 5000, reference: ref });
  const grant = (
    runId: string,
    p: ProposalInfo,
    over: { fingerprint?: string; argsHash?: string; ttlMs?: number } = {},
  ) =>
    store.grant({
      runId,
      stopRef: 'checkpoint-0',
      tool: p.tool,
      fingerprint: over.fingerprint ?? p.fingerprint,
      argsHash: over.argsHash ?? p.argsHash,
      actor: 'alice',
      reason: 'checked the invoice',
      ttlMs: over.ttlMs ?? 60_000,
    });

  it('plan marks a gated call required with no approval (and audits the request), then finds the approval', async () => {
    const p = await planned('r-plan', 'transfer_funds', transfer('t-1'));
    expect(p.rejection).toBeNull();
    expect(p.approval).toEqual({ required: true, approvalId: null, stopRef: null });
    expect((await store.audit({ runId: 'r-plan' })).map((e) => e.action)).toEqual(['requested']);
    const a = await grant('r-plan', p);
    expect((await planned('r-plan', 'transfer_funds', transfer('t-1'))).approval).toEqual({
      required: true,
      approvalId: a.id,
      stopRef: 'checkpoint-0',
    });
    // Only while its own stop is being lifted: with none, or at another stop, it is not offered.
    expect(
      (await planned('r-plan', 'transfer_funds', transfer('t-1'), null)).approval?.approvalId,
    ).toBeNull();
    expect(
      (await planned('r-plan', 'transfer_funds', transfer('t-1'), 'checkpoint-7')).approval?.approvalId,
    ).toBeNull();
    // Another run, or another call, does not see it.
    expect((await planned('r-plan-2', 'transfer_funds', transfer('t-1'))).approval?.approvalId).toBeNull();
    expect((await planned('r-plan', 'transfer_funds', transfer('t-2'))).approval?.approvalId).toBeNull();
    // Ungated calls carry no approval.
    expect((await planned('r-plan', 'search', { query: 'temporal' })).approval).toBeNull();
  });

  it('runTool uses the approval once: the transfer runs once, a replayed approval id runs nothing', async () => {
    const p = await planned('r-once', 'transfer_funds', transfer('t-once'));
    const a = await grant('r-once', p);
    const first = await acts.runTool(input('r-once', p, a.id));
    expect(first).toMatchObject({ result: { kind: 'SUCCESS' }, via: 'executed' });
    expect(await transfers('r-once')).toBe(1);
    expect((await store.get(a.id))?.state).toBe('used');

    // The same approval for another transfer (its own operation key, so the ledger would run it).
    const q = await planned('r-once', 'transfer_funds', transfer('t-again'));
    const replay = await acts.runTool(input('r-once', q, a.id));
    expect(replay).toMatchObject({ result: { kind: 'FATAL', code: 'approval_invalid' }, via: 'not_run' });
    expect(await transfers('r-once')).toBe(1);
    // And the very same call again with the used approval.
    const again = await acts.runTool(input('r-once', p, a.id));
    expect(again.result).toMatchObject({ kind: 'FATAL', code: 'approval_invalid' });
    expect(again.result.kind === 'FATAL' && again.result.message).toMatch(/used/);
    expect(await transfers('r-once')).toBe(1);
    expect((await store.audit({ runId: 'r-once' })).map((e) => e.action)).toEqual([
      'requested',
      // Stored by a store without the operators: submitted, not verified (issue 31).
      'submitted',
      'consumed',
      'requested',
      'refused',
      'refused',
    ]);
  });

  it('a caller bypassing the workflow (no approval id) is refused: FATAL approval_required, counter 0', async () => {
    const p = await planned('r-bypass', 'transfer_funds', transfer('t-bypass'));
    const out = await acts.runTool(input('r-bypass', p, null));
    expect(out).toMatchObject({ result: { kind: 'FATAL', code: 'approval_required' }, via: 'not_run' });
    expect(await transfers('r-bypass')).toBe(0);
    expect(await deps.ledger.get('transfer:t-bypass')).toBeNull();
  });

  it('refuses an approval of another run, of another call (a lied fingerprint too) and an expired one; counter 0', async () => {
    const p = await planned('r-bad', 'transfer_funds', transfer('t-bad'));
    const foreign = await grant('r-other', p);
    const other = await grant('r-bad', p, { fingerprint: 'transfer_funds:0000000000000000' });
    const otherDigest = await grant('r-bad', p, { argsHash: `sha256:${'0'.repeat(64)}` });
    const expired = await grant('r-bad', p, { ttlMs: 1 });
    await new Promise((r) => setTimeout(r, 30));
    for (const [id, why] of [
      [foreign.id, 'other_run'],
      [other.id, 'other_call'],
      [otherDigest.id, 'other_call'],
      [expired.id, 'expired'],
    ] as const) {
      const out = await acts.runTool(input('r-bad', p, id));
      expect(out.result).toMatchObject({ kind: 'FATAL', code: 'approval_invalid' });
      expect(out.result.kind === 'FATAL' && out.result.message).toContain(`(${why})`);
    }
    // A caller claiming the approved call's fingerprint for other args: the activity
    // fingerprints the args it will run, so the approval does not match.
    const approved = await planned('r-bad', 'transfer_funds', transfer('t-approved'));
    const a = await grant('r-bad', approved);
    const lied = {
      ...input('r-bad', p, a.id),
      fingerprint: approved.fingerprint,
      argsHash: approved.argsHash,
    };
    expect((await acts.runTool(lied)).result).toMatchObject({ kind: 'FATAL', code: 'approval_invalid' });
    expect(await transfers('r-bad')).toBe(0);
    expect((await store.get(a.id))?.state).toBe('valid');
  });

  it('a twin with the same guard fingerprint and other args needs its own approval (issue 31): counter 0', async () => {
    const [approvedArgs, twinArgs] = TWIN_WIRES;
    const p = await planned('r-twin', 'wire', approvedArgs);
    const a = await grant('r-twin', p);
    const twin = await planned('r-twin', 'wire', twinArgs);
    // The precondition: a real collision of the 64-bit fingerprint, with other args.
    expect(twin.fingerprint).toBe(p.fingerprint);
    expect(twin.argsHash).not.toBe(p.argsHash);
    // The plan offers the approval to the approved call only; the twin must ask for its own.
    expect(twin.approval).toEqual({ required: true, approvalId: null, stopRef: null });
    expect((await planned('r-twin', 'wire', approvedArgs)).approval?.approvalId).toBe(a.id);
    // Named anyway (a caller bypassing the plan): refused before the tool, both digests said.
    const before = wired;
    const out = await acts.runTool(input('r-twin', twin, a.id));
    expect(out).toMatchObject({ result: { kind: 'FATAL', code: 'approval_invalid' }, via: 'not_run' });
    expect(out.result.kind === 'FATAL' && out.result.message).toContain('(other_call)');
    expect(wired).toBe(before);
    const refusal = (await store.audit({ runId: 'r-twin' })).find((e) => e.action === 'refused');
    expect(refusal?.detail).toContain(p.argsHash);
    expect(refusal?.detail).toContain(twin.argsHash);
    // A stop on the twin is not lifted by the approval of the other call.
    const lift = await acts.verifyPrecondition({
      runId: 'r-twin',
      reason: 'approval_required',
      checkpointProgressVersion: 0,
      blockedTool: twin.tool,
      blockedArgs: twin.args,
      operationKey: twin.operationKey,
      precondition: 'approval',
      blockedFingerprint: twin.fingerprint,
      stopRef: 'checkpoint-0',
    });
    expect(lift).toMatchObject({ changed: false, detail: expect.stringContaining('other_call') });
    expect((await store.get(a.id))?.state).toBe('valid');
    // The approved call itself runs, once.
    expect((await acts.runTool(input('r-twin', p, a.id))).via).toBe('executed');
    expect(wired).toBe(before + 1);
  });

  it('an approval without the call digest is refused when stored (issue 31)', async () => {
    const p = await planned('r-nodigest', 'transfer_funds', transfer('t-nodigest'));
    const base = { runId: 'r-nodigest', stopRef: 'checkpoint-0', tool: p.tool, fingerprint: p.fingerprint };
    for (const argsHash of [undefined, null, '', 'transfer_funds:00', `sha256:${'A'.repeat(64)}`]) {
      await expect(
        store.grant({ ...base, argsHash: argsHash as never, actor: 'alice', reason: 'x', ttlMs: 60_000 }),
      ).rejects.toThrow(/digest/);
    }
    expect(await store.list({ runId: 'r-nodigest' })).toEqual([]);
  });

  it("a tool's requiresApproval may depend on the args; the policy can gate any tool", async () => {
    const w0 = wired;
    const small = await planned('r-fn', 'wire', { ref: 'w-1', cents: 10 });
    expect(small.approval).toBeNull();
    expect((await acts.runTool(input('r-fn', small))).via).toBe('executed');
    const big = await planned('r-fn', 'wire', { ref: 'w-2', cents: 5000 });
    expect(big.approval).toEqual({ required: true, approvalId: null, stopRef: null });
    expect((await acts.runTool(input('r-fn', big))).result).toMatchObject({ code: 'approval_required' });
    expect(wired).toBe(w0 + 1);

    const search = deps.registry.get('search');
    const deploy = deps.registry.get('deploy');
    if (!search || !deploy) throw new Error('demo tools missing');
    expect(approvalRequired(deploy, {}, parseApprovalPolicy('{"minRisk":"write"}'))).toBe(true);
    expect(approvalRequired(search, {}, parseApprovalPolicy('{"minRisk":"write"}'))).toBe(false);
    expect(approvalRequired(deploy, {}, parseApprovalPolicy('{"minRisk":"destructive"}'))).toBe(false);
    expect(approvalRequired(search, {}, parseApprovalPolicy('search, deploy'))).toBe(true);
    expect(() => parseApprovalPolicy('{"writesAbove":"x"}')).toThrow(/unknown key/);
    expect(() => parseApprovalPolicy('{"minRisk":"huge"}')).toThrow(/minRisk/);
  });

  it('verifyPrecondition lifts approval_required only with a valid approval for that stop and call', async () => {
    const p = await planned('r-verify', 'transfer_funds', transfer('t-verify'));
    const verify = (stopRef: string | null) =>
      acts.verifyPrecondition({
        runId: 'r-verify',
        reason: 'approval_required',
        checkpointProgressVersion: 0,
        blockedTool: p.tool,
        blockedArgs: p.args,
        operationKey: p.operationKey,
        precondition: 'approval',
        blockedFingerprint: p.fingerprint,
        stopRef,
      });
    expect(await verify('checkpoint-0')).toMatchObject({
      changed: false,
      detail: expect.stringContaining('(none)'),
    });
    const a = await grant('r-verify', p);
    expect(await verify('checkpoint-0')).toMatchObject({
      changed: true,
      detail: expect.stringContaining(a.id),
    });
    expect(await verify('checkpoint-7')).toMatchObject({
      changed: false,
      detail: expect.stringContaining('other_stop'),
    });
    expect(await verify(null)).toMatchObject({ changed: false });
    await store.deny({
      runId: 'r-verify',
      stopRef: 'checkpoint-0',
      tool: p.tool,
      fingerprint: p.fingerprint,
      argsHash: p.argsHash,
      actor: 'bob',
      reason: 'no',
    });
    expect(await verify('checkpoint-0')).toMatchObject({
      changed: false,
      detail: expect.stringContaining('denied'),
    });
  });

  it('with an operators file, runTool uses only a signed approval: unsigned and edited ones run nothing, a replay neither', async () => {
    const guarded = createActivities({ ...deps, operators: testOperators() });
    const planIn = (ref: string) =>
      guarded.plan({
        runId: 'r-signed',
        goal: 'approvals',
        planner: {
          kind: 'scripted',
          live: true,
          script: { calls: [{ tool: 'transfer_funds', args: transfer(ref) }] },
        } as never,
        memory: null,
        observation: null,
        approvalStopRef: 'checkpoint-0',
      });
    const p = (await planIn('t-signed')).proposal as ProposalInfo;
    const call = {
      runId: 'r-signed',
      stopRef: 'checkpoint-0',
      tool: p.tool,
      fingerprint: p.fingerprint,
      argsHash: p.argsHash,
      reason: 'ok',
      ttlMs: 60_000,
    };
    // Unsigned: the plan does not offer it, and runTool refuses it when named anyway.
    const unsigned = await store.grant({ ...call, actor: 'alice' });
    expect((await planIn('t-signed')).proposal?.approval).toEqual({
      required: true,
      approvalId: null,
      stopRef: null,
    });
    const refused = await guarded.runTool(input('r-signed', p, unsigned.id));
    expect(refused).toMatchObject({ result: { kind: 'FATAL', code: 'approval_invalid' }, via: 'not_run' });
    expect(refused.result.kind === 'FATAL' && refused.result.message).toMatch(/unverified.*unsigned/);
    // Signed, offered by the plan, then edited (a widened expiry) before the tool runs.
    const edited = await store.grant(signedGrant(alice.keyFile, call));
    expect((await planIn('t-signed')).proposal?.approval?.approvalId).toBe(edited.id);
    await tamper(deps.ledger, edited.id, { extendMs: 7_200_000 });
    const out = await guarded.runTool(input('r-signed', p, edited.id));
    expect(out.result.kind === 'FATAL' && out.result.message).toMatch(/unverified.*bad signature/);
    expect(await transfers('r-signed')).toBe(0);
    expect((await store.get(edited.id))?.usedAt).toBeNull();
    // The right one runs the transfer once; used again (a replay), it runs nothing.
    const good = await store.grant(signedGrant(alice.keyFile, call));
    expect((await guarded.runTool(input('r-signed', p, good.id))).via).toBe('executed');
    expect(await transfers('r-signed')).toBe(1);
    const q = (await planIn('t-signed-2')).proposal as ProposalInfo;
    const replay = await guarded.runTool(input('r-signed', q, good.id));
    expect(replay).toMatchObject({ result: { kind: 'FATAL', code: 'approval_invalid' }, via: 'not_run' });
    expect(await transfers('r-signed')).toBe(1);
  });
});
