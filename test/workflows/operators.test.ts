/**
 * Operator authority (docs/spec.md §7.3), through real durable runs on a worker that has an
 * operators file: every attack on resume and stop fails, and the tool counters show that
 * nothing ran because of one. Also: a forged or edited checkpoint is refused (§7.10).
 */
import { WorkflowFailedError } from '@temporalio/client';
import { OperatorRegistry } from '../../operators/registry';
import { generateOperatorKey, signRequest, type OperatorKeyFile } from '../../operators/sign';
import {
  resumeUpdate,
  statusQuery,
  stopSignal,
  traceQuery,
  type ResumeRequest,
  type RunInput,
} from '../../common/contracts';
import type { DemoWorkerDeps } from '../../demo/deps';
import { startHarness, type Harness } from '../helpers/run-harness';
import { fixture, live, search, waitFor } from '../helpers/run-inputs';
import { uniqueId } from '../helpers/temporal-env';
import { runResult } from '../helpers/run-result';

const alice = generateOperatorKey('alice'); // admin: lifts anything, raises steps to 50
const bob = generateOperatorKey('bob'); // on call: may stop, may lift operator_stop only
const mallory = generateOperatorKey('alice'); // claims to be alice with her own key

describe('operator authority on a worker with an operators file', () => {
  let h: Harness;
  let deps: DemoWorkerDeps;

  beforeAll(async () => {
    h = await startHarness({
      operators: OperatorRegistry.fromFile({
        operators: {
          alice: { publicKey: alice.publicKey, roles: ['admin'] },
          bob: { publicKey: bob.publicKey, roles: ['oncall'] },
        },
        roles: {
          admin: { lift: ['*'], raise: { maxSteps: 50 }, stop: true, approve: true },
          oncall: { lift: ['operator_stop'], stop: true },
        },
      }),
    });
    deps = h.deps;
  });
  afterAll(async () => {
    await h?.close();
  });

  const start = async (input: RunInput, id = uniqueId('ops')) => (await h.start(input, id)).handle;

  function signed(
    key: OperatorKeyFile,
    workflowId: string,
    req: Omit<ResumeRequest, 'auth'>,
    at = Date.now(),
  ): ResumeRequest {
    return { ...req, auth: signRequest(key, 'resume', workflowId, req, at) };
  }

  async function stoppedOnStepBudget() {
    // maxSteps 2: the third search stops step_budget.
    const input = live([search('a'), search('b'), search('c')], {
      resumeWindowMs: 60_000,
      guard: { maxSteps: 2 },
    });
    const handle = await start(input);
    await waitFor(
      () => handle.query(statusQuery),
      (s) => s.phase === 'WAITING',
    );
    expect((await handle.query(statusQuery)).guardReason).toBe('step_budget');
    return handle;
  }

  it('refuses unsigned, forged, expired, replayed, other-run and over-limit resumes; accepts the right one', async () => {
    const handle = await stoppedOnStepBudget();
    const id = handle.workflowId;
    const ask = (req: ResumeRequest) => handle.executeUpdate(resumeUpdate, { args: [req] });
    const base = { actor: 'alice', reason: 'more steps', requestId: 'r-unsigned', raise: { maxSteps: 10 } };

    expect(await ask(base)).toMatchObject({
      accepted: false,
      reason: expect.stringMatching(/unsigned resume refused/),
    });
    // Signed with a key that is not alice's.
    expect(await ask(signed(mallory.keyFile, id, { ...base, requestId: 'r-forged' }))).toMatchObject({
      accepted: false,
      reason: expect.stringMatching(/bad signature/),
    });
    // alice's signature, but an hour old.
    expect(
      await ask(signed(alice.keyFile, id, { ...base, requestId: 'r-old' }, Date.now() - 3_600_000)),
    ).toMatchObject({ accepted: false, reason: expect.stringMatching(/expired/) });
    // alice's valid signature for another run, replayed here.
    const elsewhere = signed(alice.keyFile, 'some-other-run', { ...base, requestId: 'r-elsewhere' });
    expect(await ask(elsewhere)).toMatchObject({
      accepted: false,
      reason: expect.stringMatching(/bad signature/),
    });
    // A signed request edited after signing (a bigger raise).
    const edited = signed(alice.keyFile, id, { ...base, requestId: 'r-edited' });
    expect(await ask({ ...edited, raise: { maxSteps: 49 } })).toMatchObject({ accepted: false });
    // A raise for another budget than the one that stopped the run.
    expect(
      await ask(
        signed(alice.keyFile, id, { ...base, requestId: 'r-wrong-budget', raise: { maxTokens: 1e6 } }),
      ),
    ).toMatchObject({
      accepted: false,
      reason: expect.stringMatching(/raise maxTokens refused: the run stopped for step_budget/),
    });
    // Over alice's role limit (maxSteps ≤ 50).
    expect(
      await ask(signed(alice.keyFile, id, { ...base, requestId: 'r-too-much', raise: { maxSteps: 500 } })),
    ).toMatchObject({ accepted: false, reason: expect.stringMatching(/may raise maxSteps to at most 50/) });
    // bob is on call: he may not lift a step_budget stop.
    expect(await ask(signed(bob.keyFile, id, { ...base, actor: 'bob', requestId: 'r-bob' }))).toMatchObject({
      accepted: false,
      reason: expect.stringMatching(/may not lift a step_budget stop/),
    });
    expect(await deps.world.counters(id)).toEqual({ search: 2 }); // nothing ran on any of them

    // The right request: alice, signed now, raising the budget that stopped the run.
    const ok = signed(alice.keyFile, id, { ...base, requestId: 'r-ok' });
    expect(await ask(ok)).toMatchObject({ accepted: true });
    // Replaying the accepted request changes nothing (same requestId: the same answer).
    expect(await ask(ok)).toMatchObject({ accepted: true });
    const r = await runResult(handle);
    expect(r.executed).toBe(3);
    expect(await deps.world.counters(id)).toEqual({ search: 3 });
    const refused = await handle.query(traceQuery, { decision: 'resume_refused' }).catch(() => null);
    if (refused) expect(refused.records.length).toBeGreaterThanOrEqual(8);
  });

  it('an unsigned or unauthorised stop is refused and the run goes on; a signed one stops it', async () => {
    // A long durable wait (PENDING, retry after 60 s) that a verified stop ends early.
    const input = fixture(
      [
        { tool: 'poll', args: {}, result: { kind: 'PENDING', code: 'running', retryAfterMs: 60_000 } },
        { tool: 'poll', args: {} },
      ],
      { resumeWindowMs: 60_000 },
    );
    const handle = await start(input);
    await waitFor(
      () => handle.query(statusQuery),
      (s) => s.executed >= 1,
    );
    await handle.signal(stopSignal, { actor: 'mallory', reason: 'no', requestId: 's-unsigned' });
    const fields = { actor: 'bob', reason: 'incident', requestId: 's-bob' };
    await handle.signal(stopSignal, {
      ...fields,
      auth: signRequest(bob.keyFile, 'stop', handle.workflowId, fields),
    });
    const st = await waitFor(
      () => handle.query(statusQuery),
      (s) => s.phase === 'WAITING',
    );
    expect(st.guardReason).toBe('operator_stop');
    const trace = await handle.query(traceQuery, { decision: 'stop_refused' });
    expect(trace.records).toHaveLength(1);
    expect(trace.records[0]?.reason).toMatch(/unsigned stop refused/);
    await handle.terminate('test done');
  });

  it('refuses a forged or edited checkpoint before restoring anything; a sealed one resumes', async () => {
    const handle = await start(live([search('x'), search('x'), search('x')], { resumeWindowMs: 300 }));
    const closed = await runResult(handle);
    expect(closed.terminal_state).toBe('STOPPED_LOOP_GUARD');
    const cp = closed.checkpoint!;
    expect(cp.seal).toMatch(/^hmac-sha256:/);

    // Edited: the completed ledger is emptied (as if to run a write again).
    const edited = { ...cp, guard: { ...cp.guard, steps: 0, completed: [] } };
    const forged = start(live([search('x')], { checkpoint: edited }));
    await expect((await forged).result()).rejects.toBeInstanceOf(WorkflowFailedError);
    await expect((await forged).result()).rejects.toMatchObject({
      cause: { message: expect.stringMatching(/checkpoint refused: its seal does not match/) },
    });
    // Unsealed (a hand-written checkpoint).
    const { seal: _seal, ...unsealed } = cp;
    const bare = await start(live([search('x')], { checkpoint: unsealed }));
    await expect(bare.result()).rejects.toMatchObject({
      cause: { message: expect.stringMatching(/checkpoint refused: it carries no seal/) },
    });
    // Not even a checkpoint.
    const junk = await start(live([search('x')], { checkpoint: { v: 1, guard: 'x' } }));
    await expect(junk.result()).rejects.toMatchObject({
      cause: { message: expect.stringMatching(/checkpoint refused: guard/) },
    });
    expect(await deps.world.counters((await forged).workflowId)).toEqual({});

    // The sealed one continues: it waits for a (signed) resume like the original.
    const again = await start(
      live([search('x'), search('x'), search('x')], { checkpoint: cp, resumeWindowMs: 60_000 }),
    );
    const st = await waitFor(
      () => again.query(statusQuery),
      (s) => s.phase === 'WAITING',
    );
    expect(st).toMatchObject({ guardReason: 'same_call_repeat', steps: 2 });
    await again.terminate('test done');
  });
});
