/**
 * Bad input gets a clear answer and loses nothing: malformed tool args and unknown tools
 * never reach a tool, malformed signals and updates are refused with the field named, and
 * the persistent ledger is the one truth across runs (a finished business operation is
 * answered from it; the same key with other args is a conflict, never an execution).
 */
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { resumeSignal, resumeUpdate, statusQuery, traceQuery } from '../../common/contracts';
import { startHarness, type Harness } from '../helpers/run-harness';
import { live, waitFor } from '../helpers/run-inputs';
import { runResult } from '../helpers/run-result';

const page = (message: string) => ({
  tool: 'send_notification',
  args: { channel: 'ops', incident: 'INC-7', type: 'page', message },
});

describe('bad input and the ledger as the one truth', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('answers malformed args with PRECONDITION invalid_args and runs nothing; the same call again is refused', async () => {
    const bad = {
      tool: 'charge_payment',
      args: { customer: 'c1', invoice: 'inv-1', amountCents: -5, currency: 'EUR' },
    };
    const run = await h.start(live([bad, bad]));
    const result = await runResult(run);
    expect(result).toMatchObject({ terminal_state: 'STOPPED_LOOP_GUARD', reason: 'precondition_unchanged' });
    expect(result.decisions).toEqual([
      { index: 0, tool: 'charge_payment', decision: 'execute', after: 'needs_changed_precondition' },
      { index: 1, tool: 'charge_payment', decision: 'stop' },
    ]);
    expect(result.report?.unmet_precondition).toMatch(/amountCents/);
    expect(await h.counters(run.workflowId)).toEqual({});
  });

  it('answers an unknown tool with PRECONDITION unknown_tool naming the known ones', async () => {
    const run = await h.start(
      live([
        { tool: 'delete_everything', args: {} },
        { tool: 'delete_everything', args: {} },
      ]),
    );
    const result = await runResult(run);
    expect(result).toMatchObject({ terminal_state: 'STOPPED_LOOP_GUARD', reason: 'precondition_unchanged' });
    const trace = await run.handle.query(traceQuery, { limit: 100 });
    const after = trace.records.find((r) => r.phase === 'after');
    expect(after).toMatchObject({ result_kind: 'PRECONDITION', error_code: 'unknown_tool' });
    expect(result.report?.unmet_precondition).toMatch(/no tool named "delete_everything" \(known: search,/);
    expect(await h.counters(run.workflowId)).toEqual({});
  });

  it('refuses a malformed resume update naming the field, records a malformed signal, and stays stopped', async () => {
    const run = await h.start(
      live(
        [
          { tool: 'search', args: { query: 'temporal' } },
          { tool: 'search', args: { query: 'temporal' } },
          { tool: 'search', args: { query: 'temporal' } },
        ],
        { resumeWindowMs: 60_000 },
      ),
    );
    await waitFor(
      () => run.handle.query(statusQuery),
      (s) => s.waitingForResume,
    );
    // The validator refuses it before anything is recorded; the cause names the field.
    const refused = await run.handle
      .executeUpdate(resumeUpdate, { args: [{ actor: '', reason: 'x', requestId: 'r1' }] })
      .then(
        () => null,
        (err: unknown) => err,
      );
    expect(refused).toBeInstanceOf(WorkflowUpdateFailedError);
    expect(((refused as Error).cause as Error).message).toMatch(/actor: actor is required/);
    await run.handle.signal(resumeSignal, { reason: 'no actor', requestId: 'r2' } as never);
    const rejected = await waitFor(
      () => run.handle.query(traceQuery, { decision: 'signal_rejected' }),
      (t) => t.records.length === 1,
    );
    expect(rejected.records[0]?.reason).toMatch(/actor/);
    const status = await run.handle.query(statusQuery);
    expect(status).toMatchObject({ phase: 'WAITING', guardReason: 'same_call_repeat' });
    expect(await h.counters(run.workflowId)).toEqual({ search: 2 });
    await run.handle.terminate('test done');
  });

  it('answers a finished business operation from the ledger in a NEW run, and refuses other args under the same key', async () => {
    const first = await h.start(
      live([page('db down'), { tool: 'complete_task', args: { summary: 'paged' } }]),
    );
    expect((await runResult(first)).terminal_state).toBe('COMPLETED');
    expect(await h.counters(first.workflowId)).toEqual({ send_notification: 1, complete_task: 1 });

    // Same operation, planned again by another run: return_cached_success, zero calls.
    const again = await h.start(
      live([page('db down'), { tool: 'complete_task', args: { summary: 'paged' } }]),
    );
    const againResult = await runResult(again);
    expect(againResult.decisions[0]).toEqual({
      index: 0,
      tool: 'send_notification',
      decision: 'return_cached_success',
      after: 'continue',
    });
    expect(await h.counters(again.workflowId)).toEqual({ complete_task: 1 });

    // Same key (channel, incident, type), other message: a conflict for a person, never an execution.
    const conflict = await h.start(live([page('db down AGAIN')]));
    const conflictResult = await runResult(conflict);
    expect(conflictResult).toMatchObject({ terminal_state: 'NEEDS_HUMAN', reason: 'idempotency_conflict' });
    expect(conflictResult.decisions).toEqual([{ index: 0, tool: 'send_notification', decision: 'stop' }]);
    expect(await h.counters(conflict.workflowId)).toEqual({});
    const rows = await h.deps.world.tx.all('SELECT message FROM world_notifications');
    expect(rows).toEqual([{ message: 'db down' }]);
    // The report names the run holding the key (issue 30); its args are not known here (the
    // ledger keeps only their hash), so which differ is null, not a guess.
    expect(conflictResult.report?.conflict).toEqual({
      operation_key: 'notify:ops:INC-7:page',
      holder_run: first.workflowId,
      holder_tool: 'send_notification',
      differing_args: null,
    });
  });

  it('a conflict with an earlier call of the same run names it and the args that differ, redacted', async () => {
    const note = (message: string) => ({
      tool: 'send_notification',
      args: { channel: 'ops', incident: 'INC-9', type: 'page', message },
    });
    const run = await h.start(
      live([note('disk full, key sk-live-aaaaaaaaaaaaaaaaaaaaaaaa'), note('disk full!!')]),
    );
    const r = await runResult(run);
    expect(r).toMatchObject({ terminal_state: 'NEEDS_HUMAN', reason: 'idempotency_conflict' });
    expect(await h.counters(run.workflowId)).toEqual({ send_notification: 1 });
    const conflict = r.report?.conflict;
    expect(conflict).toMatchObject({
      operation_key: 'notify:ops:INC-9:page',
      holder_run: run.workflowId,
      holder_tool: 'send_notification',
    });
    expect(conflict?.differing_args).toHaveLength(1);
    expect(conflict?.differing_args?.[0]).toMatchObject({ path: 'message', proposed: 'disk full!!' });
    expect(String(conflict?.differing_args?.[0]?.held)).toContain('disk full, key ');
    // Redacted as the trace is: the secret never shows.
    expect(JSON.stringify(conflict)).not.toContain('sk-live-aaaa');
  });

  it('a key another run holds in flight with other args: the ledger refuses it, and the report names that run', async () => {
    // Another run's claim on the key, still in flight (so the plan's view of SUCCEEDED records
    // does not see it): the tool activity's claim is refused as a conflict.
    const claim = await h.deps.ledger.claim({
      key: 'notify:ops:INC-11:page',
      tool: 'send_notification',
      argsHash: 'sha256:' + '0'.repeat(64),
      runId: 'holder-run-11',
      owner: 'elsewhere',
      leaseMs: 600_000,
    });
    expect(claim.kind).toBe('claimed');
    const run = await h.start(
      live([
        {
          tool: 'send_notification',
          args: { channel: 'ops', incident: 'INC-11', type: 'page', message: 'mine' },
        },
      ]),
    );
    const r = await runResult(run);
    expect(r).toMatchObject({ terminal_state: 'NEEDS_HUMAN', reason: 'idempotency_conflict' });
    expect(await h.counters(run.workflowId)).toEqual({});
    expect(r.report?.conflict).toEqual({
      operation_key: 'notify:ops:INC-11:page',
      holder_run: 'holder-run-11',
      holder_tool: 'send_notification',
      differing_args: null,
    });
  });
});
