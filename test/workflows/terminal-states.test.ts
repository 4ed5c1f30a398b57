/**
 * Issue 3 item 11, parts 1 and 2: one real run per terminal state, and the three loop
 * shapes (exact repeat, A-B-A-B, no progress) with the real demo tools. Every test
 * asserts the execution counters in the world DB, not just the state: a guard that
 * reports the right reason after letting the call run would still fail here.
 */
import { fixture, live, search } from '../helpers/run-inputs';
import { startHarness, type Harness } from '../helpers/run-harness';
import { runResult } from '../helpers/run-result';

describe('agentRun terminal states (real dev server, real demo tools)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('COMPLETED: complete_task is a terminal SUCCESS', async () => {
    const run = await h.start(
      live([search('temporal'), { tool: 'complete_task', args: { summary: 'found the docs' } }]),
    );
    const r = await runResult(run);
    expect(r.terminal_state).toBe('COMPLETED');
    expect(r.reason).toBeNull();
    expect(r.report).toBeNull();
    expect(r.summary).toBe('found the docs');
    expect(r.executed).toBe(2);
    expect(r.decisions).toEqual([
      { index: 0, tool: 'search', decision: 'execute', after: 'continue' },
      { index: 1, tool: 'complete_task', decision: 'execute', after: 'complete' },
    ]);
    expect(await h.counters(run.workflowId)).toEqual({ search: 1, complete_task: 1 });
  });

  it('STOPPED_LOOP_GUARD: an exact repeat never runs a third time (search counter = 2)', async () => {
    const run = await h.start(
      live([search('temporal'), search('temporal'), search(' temporal ', { limit: 3 })]),
    );
    const r = await runResult(run);
    expect(r.terminal_state).toBe('STOPPED_LOOP_GUARD');
    expect(r.reason).toBe('same_call_repeat');
    expect(r.stopped_at).toBe(2);
    expect(r.report?.blocked_call?.tool).toBe('search');
    expect(await h.counters(run.workflowId)).toEqual({ search: 2 });
  });

  it('STOPPED_LOOP_GUARD: A-B-A-B is a short_cycle; B is not run a second time', async () => {
    // Pages past the end find nothing new, so nothing progresses; the no-progress fuse is
    // raised so the cycle rule (6) is what fires.
    const a = search('temporal', { cursor: '50' });
    const b = search('agents', { cursor: '50' });
    const run = await h.start(live([a, b, a, b, a], { guard: { noProgressLimit: 10 } }));
    const r = await runResult(run);
    expect(r.terminal_state).toBe('STOPPED_LOOP_GUARD');
    expect(r.reason).toBe('short_cycle');
    expect(r.stopped_at).toBe(3);
    expect(await h.counters(run.workflowId)).toEqual({ search: 3 });
  });

  it('STOPPED_LOOP_GUARD: three calls without external progress stop with no_progress', async () => {
    const run = await h.start(live([search('zzz-1'), search('zzz-2'), search('zzz-3'), search('zzz-4')]));
    const r = await runResult(run);
    expect(r.terminal_state).toBe('STOPPED_LOOP_GUARD');
    expect(r.reason).toBe('no_progress');
    expect(r.stopped_at).toBe(2);
    expect(r.decisions.at(-1)).toEqual({ index: 2, tool: 'search', decision: 'execute', after: 'stop' });
    expect(await h.counters(run.workflowId)).toEqual({ search: 3 });
  });

  it('NEEDS_HUMAN: deploy without the permission is FATAL permission_denied; nothing deployed', async () => {
    const run = await h.start(
      live([
        { tool: 'write_record', args: { id: 'nh-1', body: 'x' } },
        { tool: 'deploy', args: { service: 'nh-svc', version: '1' } },
        { tool: 'complete_task', args: { summary: 'never' } },
      ]),
    );
    const r = await runResult(run);
    expect(r.terminal_state).toBe('NEEDS_HUMAN');
    expect(r.reason).toBe('permission_denied');
    expect(r.report?.terminal_state).toBe('NEEDS_HUMAN');
    expect(r.report?.blocked_call?.tool).toBe('deploy');
    // The tool's message reaches the operator in the summary; the report stays replay-equal.
    expect(r.summary).toMatch(/permission deploy:nh-svc is missing/);
    // deploy counts only a real deploy (after its permission check): none happened.
    expect(await h.worldCounters(run.workflowId)).toEqual({ write_record: 1 });
  });

  it('FAILED: a FATAL with another code', async () => {
    const run = await h.start(
      fixture([
        { tool: 'lookup', args: { q: 1 } },
        { tool: 'explode', args: {}, result: { kind: 'FATAL', code: 'boom' } },
        { tool: 'lookup', args: { q: 2 } },
      ]),
    );
    const r = await runResult(run);
    expect(r.terminal_state).toBe('FAILED');
    expect(r.reason).toBe('boom');
    expect(r.stopped_at).toBe(1);
    expect(r.report?.guard_reason).toBe('boom');
    expect(await h.counters(run.workflowId)).toEqual({ lookup: 1, explode: 1 });
  });

  it('PARTIAL: the planner runs out of proposals', async () => {
    const run = await h.start(
      live([search('temporal'), { tool: 'write_record', args: { id: 'p-1', body: 'y' } }]),
    );
    const r = await runResult(run);
    expect(r.terminal_state).toBe('PARTIAL');
    expect(r.reason).toBe('planner_exhausted');
    expect(r.stopped_at).toBeNull();
    expect(r.report?.terminal_state).toBe('PARTIAL');
    expect(await h.counters(run.workflowId)).toEqual({ search: 1, write_record: 1 });
  });
});
