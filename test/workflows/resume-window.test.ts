/**
 * A resume window that runs out while a resume is being verified (issue 19): the verification
 * decides. Accepted → the run goes on and completes (its caller is never told `accepted` by a
 * run that then closes stopped); refused → the run closes stopped. The blocked write's own
 * precondition check is slower than the window, so the window always passes mid-check.
 * Real dev server, real SQLite, the real workflow.
 */
import { Worker } from '@temporalio/worker';
import { z } from 'zod';
import { resumeUpdate, statusQuery } from '../../common/contracts';
import { FatalToolError } from '../../tools/errors';
import { defineTool } from '../../tools/define-tool';
import { live, waitFor } from '../helpers/run-inputs';
import { agentSinks } from '../../worker/create-worker';
import { startHarness, workflowBundle, type Harness } from '../helpers/run-harness';
import { runResult } from '../helpers/run-result';

/** How long the blocked write's precondition check takes, and the run's resume window. */
const CHECK_MS = 2500;
const WINDOW_MS = 1000;

describe('a resume being verified when the resume window runs out', () => {
  let h: Harness;
  const gate = { open: false, executions: 0 };
  const shipRelease = defineTool({
    name: 'ship_release',
    description: 'Ship a release; needs the gate open.',
    effect: 'write',
    schema: z.object({ version: z.string().min(1) }).strict(),
    operationKey: (a) => `ship:${a.version}`,
    async checkPrecondition() {
      await new Promise((r) => setTimeout(r, CHECK_MS));
      return gate.open ? null : 'the release gate is closed';
    },
    execute(a) {
      if (!gate.open) throw new FatalToolError('the release gate is closed', 'permission_denied');
      gate.executions += 1;
      return { data: { shipped: a.version } };
    },
  });

  beforeAll(async () => {
    h = await startHarness({ tools: [shipRelease] });
  });
  afterAll(async () => {
    await h?.close();
  });

  async function stoppedRun(version: string) {
    const run = await h.start(
      live(
        [
          { tool: 'ship_release', args: { version } },
          // A FATAL call is the planner's observation: the script asks for it again once resumed.
          { tool: 'ship_release', args: { version } },
          { tool: 'complete_task', args: { summary: `shipped ${version}` } },
        ],
        { resumeWindowMs: WINDOW_MS },
      ),
    );
    const st = await waitFor(
      () => run.handle.query(statusQuery),
      (s) => s.phase === 'WAITING',
    );
    expect(st.guardReason).toBe('permission_denied');
    return run;
  }

  it('an accepted resume lifts the stop: the run completes and the write runs once', async () => {
    gate.open = false;
    const run = await stoppedRun('1.0');
    gate.open = true;
    const before = gate.executions;
    const answer = await run.handle.executeUpdate(resumeUpdate, {
      args: [{ actor: 'alice', reason: 'gate opened', precondition: 'gate open', requestId: 'rw-1' }],
    });
    expect(answer.accepted).toBe(true);
    const result = await runResult(run);
    expect(result.terminal_state).toBe('COMPLETED');
    expect(gate.executions - before).toBe(1);
    // The path taken (the window's timer fired mid-check, then the stop lifted) replays deterministically.
    const history = await run.handle.fetchHistory();
    expect(history.events?.some((e) => e.timerFiredEventAttributes)).toBe(true);
    await Worker.runReplayHistory(
      { workflowBundle: await workflowBundle(), sinks: agentSinks(), dataConverter: h.dataConverter },
      history,
      run.workflowId,
    );
  });

  it('a refused resume lets the window close the run stopped, and nothing runs', async () => {
    gate.open = false;
    const run = await stoppedRun('2.0');
    const before = gate.executions;
    const answer = await run.handle.executeUpdate(resumeUpdate, {
      args: [{ actor: 'alice', reason: 'try', precondition: 'gate open', requestId: 'rw-2' }],
    });
    expect(answer.accepted).toBe(false);
    expect(answer.reason).toMatch(/the release gate is closed/);
    const result = await runResult(run);
    expect(result.terminal_state).toBe('NEEDS_HUMAN');
    expect(result.reason).toBe('permission_denied');
    expect(gate.executions).toBe(before);
  });
});
