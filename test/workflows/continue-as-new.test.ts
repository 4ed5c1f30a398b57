/**
 * Issue 3 item 11, part 7: continue-as-new mid-run (docs/spec.md §7 "long runs continue-as-new
 * with their checkpoint"). With `maxHistoryEvents: 25` the run continues-as-new several
 * times; the guard window, the completed-operation state and the counters survive:
 *  - a search run once before a boundary and once after is still caught as an exact
 *    repeat on its third proposal (it never runs a third time);
 *  - the write completed before a boundary is answered from the ledger after it (cached),
 *    never re-run.
 */
import { LedgerState } from '../../storage/ledger';
import { live, search } from '../helpers/run-inputs';
import { startHarness, type Harness } from '../helpers/run-harness';
import { runResult } from '../helpers/run-result';

describe('continue-as-new keeps the guard and ledger state', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('catches a repeat across the boundary and never repeats a completed write', async () => {
    const write = { tool: 'write_record', args: { id: 'can-1', body: 'v1' } };
    // Nothing after the write finds anything new, so the window is never cleared; the
    // no-progress fuse is raised so the repeat rule is what stops the run.
    const calls = [
      write,
      search('nothing-1'),
      search('nothing-2'),
      search('nothing-3'),
      search('nothing-1'), // 2nd execution of nothing-1
      search('nothing-4'),
      write, // completed: the ledger answers, nothing runs
      search('nothing-5'),
      search('nothing-1'), // 3rd proposal: same_call_repeat, not executed
      { tool: 'complete_task', args: { summary: 'never reached' } },
    ];
    // ~7 events per step since the scripted plan is a local activity (issue 19): a limit of 25
    // splits the 9 proposals over several runs.
    const run = await h.start(live(calls, { maxHistoryEvents: 25, guard: { noProgressLimit: 20 } }));
    const r = await runResult(run);

    expect(r.terminal_state).toBe('STOPPED_LOOP_GUARD');
    expect(r.reason).toBe('same_call_repeat');
    expect(r.stopped_at).toBe(8);
    expect(r.executed).toBe(7);
    expect(r.cached).toBe(1);
    expect(r.decisions.map((d) => d.decision)).toEqual([
      'execute',
      'execute',
      'execute',
      'execute',
      'execute',
      'execute',
      'return_cached_success',
      'execute',
      'stop',
    ]);
    expect(await h.counters(run.workflowId)).toEqual({ write_record: 1, search: 6 });

    // It really continued-as-new: the first run closed as ContinuedAsNew, the last one differs.
    const firstRunId = run.handle.firstExecutionRunId;
    const first = h.env.client.workflow.getHandle(run.workflowId, firstRunId);
    expect((await first.describe()).status.name).toBe('CONTINUED_AS_NEW');
    const latest = await h.env.client.workflow.getHandle(run.workflowId).describe();
    expect(latest.runId).not.toBe(firstRunId);
    // The last run stopped (`stop` above): it closed as a run that did not complete.
    expect(latest.status.name).toBe('FAILED');

    // Follow the chain of runs: 9 proposals at ~7 events each with a limit of 25 means
    // several boundaries, so the three nothing-1 proposals cannot all be in one run.
    const chain: string[] = [];
    for (let id: string | undefined = firstRunId; id;) {
      chain.push(id);
      const hist = await h.env.client.workflow.getHandle(run.workflowId, id).fetchHistory();
      const last = hist.events?.at(-1);
      id = last?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
    }
    expect(chain.length).toBeGreaterThanOrEqual(3);
    expect(chain.at(-1)).toBe(latest.runId);

    const recs = (await h.deps.ledger.list({ limit: 1000 })).filter((x) => x.runId === run.workflowId);
    expect(recs.map((x) => [x.tool, x.state])).toEqual([['write_record', LedgerState.SUCCEEDED]]);
  });
});
