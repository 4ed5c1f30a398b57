/**
 * Budget stops resume only when the operator raises that budget; the raised run goes on
 * from its checkpoint (same steps, same completed writes) and is bounded by the new budget.
 */
import { resumeUpdate, statusQuery } from '../../common/contracts';
import { startHarness, type Harness } from '../helpers/run-harness';
import { live, waitFor } from '../helpers/run-inputs';
import { runResult } from '../helpers/run-result';

describe('budget stops and raises', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('refuses a resume without a raise, continues after one, and never repeats a completed write', async () => {
    const write = (id: string) => ({ tool: 'write_record', args: { id, body: `body ${id}` } });
    const run = await h.start(
      live(
        [write('a'), write('b'), write('c'), { tool: 'complete_task', args: { summary: 'three records' } }],
        {
          guard: { maxSteps: 2 },
          resumeWindowMs: 60_000,
        },
      ),
    );
    const stopped = await waitFor(
      () => run.handle.query(statusQuery),
      (s) => s.waitingForResume,
    );
    expect(stopped).toMatchObject({ guardReason: 'step_budget', steps: 2 });
    expect(await h.counters(run.workflowId)).toEqual({ write_record: 2 });

    const refused = await run.handle.executeUpdate(resumeUpdate, {
      args: [{ actor: 'ops', reason: 'try again', requestId: 'r1' }],
    });
    expect(refused).toMatchObject({ accepted: false });
    expect(refused.reason).toMatch(/step_budget was not raised/);
    expect(await h.counters(run.workflowId)).toEqual({ write_record: 2 });

    const accepted = await run.handle.executeUpdate(resumeUpdate, {
      args: [{ actor: 'ops', reason: 'two more steps', requestId: 'r2', raise: { maxSteps: 4 } }],
    });
    expect(accepted).toMatchObject({ accepted: true });
    const result = await runResult(run);
    expect(result).toMatchObject({ terminal_state: 'COMPLETED', executed: 4 });
    // The refused third write was proposed again after the resume and ran once.
    expect(await h.counters(run.workflowId)).toEqual({ write_record: 3, complete_task: 1 });
  });
});
