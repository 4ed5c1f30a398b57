import type { RunInput } from '../../common/contracts';
import { startHarness, type Harness } from '../helpers/run-harness';
import { runResult } from '../helpers/run-result';

const scripted = (calls: unknown[], extra: Record<string, unknown> = {}): RunInput => ({
  goal: 'test',
  planner: { kind: 'scripted', script: { calls, ...extra } },
  resumeWindowMs: 1000,
});

describe('agentRun on a real dev server', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('never executes an exact repeat a third time', async () => {
    const run = await h.start({
      goal: 'research',
      planner: {
        kind: 'scripted',
        script: {
          calls: [
            { tool: 'search', args: { query: 'temporal' } },
            { tool: 'search', args: { query: 'temporal' } },
            { tool: 'search', args: { query: 'temporal' } },
          ],
        },
      },
      resumeWindowMs: 500,
    });
    const result = await runResult(run);
    expect(result.terminal_state).toBe('STOPPED_LOOP_GUARD');
    expect(result.reason).toBe('same_call_repeat');
    expect(await h.counters(run.workflowId)).toEqual({ search: 2 });
  });

  it('completes a scripted run', async () => {
    const run = await h.start(scripted([{ tool: 'a', result: { kind: 'SUCCESS', terminal: true } }]));
    const result = await runResult(run);
    expect(result.terminal_state).toBe('COMPLETED');
  });
});
