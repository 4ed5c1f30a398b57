/**
 * Issue 3 item 11, part 3: NEEDS_HUMAN on `permission_denied` with the real demo `deploy`
 * tool, then verified resume (docs/spec.md §7): a resume with the precondition unchanged is refused
 * (update answers accepted:false, trace has `resume_refused`, nothing runs), the operator
 * grants the permission in the world, a resume *signal* is accepted, a duplicated signal
 * (same requestId) changes nothing, and the run finishes COMPLETED without re-running the
 * write it completed before the stop (the ledger answers it: counter stays 1).
 */
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { resumeSignal, resumeUpdate, statusQuery, traceQuery } from '../../common/contracts';
import { LedgerState } from '../../storage/ledger';
import { live, waitFor } from '../helpers/run-inputs';
import { startHarness, type Harness } from '../helpers/run-harness';
import { runResult } from '../helpers/run-result';

describe('verified resume after NEEDS_HUMAN (real deploy tool)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('refuses an unchanged precondition, accepts after the grant, never repeats a completed write', async () => {
    const record = { tool: 'write_record', args: { id: 'cfg-1', body: 'release notes' } };
    const deploy = { tool: 'deploy', args: { service: 'billing', version: '2.0' } };
    const run = await h.start(
      live(
        [
          record,
          deploy,
          record,
          deploy,
          { tool: 'complete_task', args: { summary: 'deployed billing 2.0' } },
        ],
        {
          resumeWindowMs: 120_000,
        },
      ),
    );
    const handle = run.handle;

    // 1. The deploy is refused by the world: NEEDS_HUMAN, waiting durably for a resume.
    const st = await waitFor(
      () => handle.query(statusQuery),
      (s) => s.phase === 'WAITING',
    );
    expect(st.terminalState).toBe('NEEDS_HUMAN');
    expect(st.guardReason).toBe('permission_denied');
    const before = await h.worldCounters(run.workflowId);
    expect(before).toEqual({ write_record: 1 });

    // 2. Resume with nothing changed: refused by the verifying activity.
    const refused = await handle.executeUpdate(resumeUpdate, {
      args: [{ actor: 'alice', reason: 'please retry', precondition: 'nothing, really', requestId: 'req-1' }],
    });
    expect(refused.accepted).toBe(false);
    expect(refused.reason).toMatch(/still unmet: write permission deploy:billing is missing/);
    const trace1 = await handle.query(traceQuery, { decision: 'resume_refused' });
    expect(trace1.records).toHaveLength(1);
    expect(trace1.records[0]).toMatchObject({ decision: 'resume_refused', tool: 'deploy' });
    expect((await handle.query(statusQuery)).phase).toBe('WAITING');
    expect(await h.worldCounters(run.workflowId)).toEqual(before);

    // The same request id again answers the same (idempotent), still nothing runs.
    const again = await handle.executeUpdate(resumeUpdate, {
      args: [{ actor: 'alice', reason: 'please retry', precondition: 'nothing, really', requestId: 'req-1' }],
    });
    expect(again).toEqual(refused);

    // 3. The operator changes the world, then resumes with a signal (twice: a duplicate).
    await h.deps.world.grant('deploy:billing');
    const req = {
      actor: 'alice',
      reason: 'granted deploy:billing',
      precondition: 'permission granted',
      requestId: 'req-2',
    };
    await handle.signal(resumeSignal, req);
    await handle.signal(resumeSignal, req);

    const r = await runResult(run);
    expect(r.terminal_state).toBe('COMPLETED');
    expect(r.summary).toBe('deployed billing 2.0');
    // The record written before the stop came back from the ledger (cached), not re-run.
    expect(r.decisions.map((d) => `${d.index}:${d.tool}:${d.decision}:${d.after ?? ''}`)).toEqual([
      '0:write_record:execute:continue',
      '1:deploy:execute:stop',
      '2:write_record:return_cached_success:continue',
      '3:deploy:execute:continue',
      '4:complete_task:execute:complete',
    ]);
    expect(r.cached).toBe(1);
    expect(await h.worldCounters(run.workflowId)).toEqual({ write_record: 1, deploy: 1, complete_task: 1 });

    // Exactly one accepted resume; the duplicated signal was a no-op.
    const accepted = await handle.query(traceQuery, { decision: 'resume_accepted' });
    expect(accepted.records).toHaveLength(1);
    expect(accepted.records[0]?.args).toMatchObject({ actor: 'alice', precondition: 'permission granted' });

    // The ledger holds one SUCCEEDED record per operation key of this run.
    const mine = (await h.deps.ledger.list({ limit: 1000 })).filter((x) => x.runId === run.workflowId);
    expect(mine.map((x) => [x.tool, x.state]).sort()).toEqual([
      ['deploy', LedgerState.SUCCEEDED],
      ['write_record', LedgerState.SUCCEEDED],
    ]);
    expect(mine.find((x) => x.tool === 'deploy')?.key).toBe('deploy:billing:2.0');
  });

  it('a resume update while the run is not waiting is rejected by the validator', async () => {
    const run = await h.start(live([{ tool: 'start_job', args: { name: 'resume-busy', pollsNeeded: 1 } }]));
    await expect(
      run.handle.executeUpdate(resumeUpdate, { args: [{ actor: 'bob', reason: 'x', requestId: 'r-busy' }] }),
    ).rejects.toBeInstanceOf(WorkflowUpdateFailedError);
    const r = await runResult(run);
    expect(r.terminal_state).toBe('PARTIAL');
    expect(await h.counters(run.workflowId)).toEqual({ start_job: 1 });
  });

  it('a run continued from a closed run’s checkpoint re-checks the blocked call itself, not just the world version', async () => {
    const deploy = { tool: 'deploy', args: { service: 'ledgerd', version: '1.0' } };
    // The refused deploy ran (its FATAL is the planner's observation), so the script asks again.
    const script = [deploy, deploy, { tool: 'complete_task', args: { summary: 'deployed ledgerd' } }];
    const first = await h.start(live(script, { resumeWindowMs: 300 }));
    const closed = await runResult(first); // NEEDS_HUMAN, closed after the resume window
    expect(closed).toMatchObject({ terminal_state: 'NEEDS_HUMAN', reason: 'permission_denied' });
    expect(closed.checkpoint?.stop).toMatchObject({
      blockedArgs: deploy.args,
      operationKey: expect.any(String),
    });

    // The world changes, but not in the way the deploy needs.
    await h.deps.world.grant('deploy:some-other-service');
    const next = await h.start(live(script, { resumeWindowMs: 60_000, checkpoint: closed.checkpoint }));
    await waitFor(
      () => next.handle.query(statusQuery),
      (s) => s.phase === 'WAITING',
    );
    const refused = await next.handle.executeUpdate(resumeUpdate, {
      args: [{ actor: 'alice', reason: 'the world changed', requestId: 'from-1' }],
    });
    expect(refused.accepted).toBe(false);
    expect(refused.reason).toMatch(/still unmet: write permission deploy:ledgerd is missing/);
    expect(await h.counters(next.workflowId)).toEqual({});

    await h.deps.world.grant('deploy:ledgerd');
    const accepted = await next.handle.executeUpdate(resumeUpdate, {
      args: [{ actor: 'alice', reason: 'granted deploy:ledgerd', requestId: 'from-2' }],
    });
    expect(accepted.accepted).toBe(true);
    expect(await runResult(next)).toMatchObject({ terminal_state: 'COMPLETED' });
    expect(await h.counters(next.workflowId)).toEqual({ deploy: 1, complete_task: 1 });
  });
});
