/**
 * The package's client API (client/api.ts) against the shared dev server, with an
 * in-process worker on a unique task queue: start, wait, status, report, trace, stop and
 * resume, as a program that uses the package would call them.
 */
import { WorkflowNotFoundError } from '@temporalio/client';
import {
  getAgentRunReport,
  getAgentRunStatus,
  getAgentRunTrace,
  resumeAgentRun,
  startAgentRun,
  stopAgentRun,
  waitForAgentRun,
} from '../../client/api';
import { CliError, Exit } from '../../client/format';
import { startHarness, type Harness } from '../helpers/run-harness';
import { live, search, waitFor } from '../helpers/run-inputs';
import { uniqueId } from '../helpers/temporal-env';

describe('client API', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('refuses malformed input naming the field, and starts nothing', async () => {
    const workflowId = uniqueId('api-bad');
    const err = await startAgentRun(h.env.client, {
      workflowId,
      taskQueue: h.taskQueue,
      input: { goal: '', planner: { kind: 'scripted' } },
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CliError);
    expect((err as CliError).exitCode).toBe(Exit.USAGE);
    expect((err as CliError).message).toMatch(/^invalid run input: goal: /);
    await expect(h.env.client.workflow.getHandle(workflowId).describe()).rejects.toBeInstanceOf(
      WorkflowNotFoundError,
    );
  });

  it('follows a run the guard stopped: status, report, trace, a refused stop, a verified resume', async () => {
    const workflowId = uniqueId('api-run');
    const calls = [
      search('temporal', { requestId: 'r1' }),
      search('temporal', { requestId: 'r2' }),
      search('temporal', { requestId: 'r3' }),
      { tool: 'complete_task', args: { summary: 'done' } },
    ];
    const handle = await startAgentRun(h.env.client, {
      workflowId,
      taskQueue: h.taskQueue,
      input: live(calls, { resumeWindowMs: 60_000 }),
    });
    expect(handle.workflowId).toBe(workflowId);
    await expect(
      startAgentRun(h.env.client, { workflowId, taskQueue: h.taskQueue, input: live(calls) }),
    ).rejects.toMatchObject({ exitCode: Exit.ERROR, message: expect.stringContaining('already running') });

    const stopped = await waitForAgentRun(h.env.client, workflowId, { timeoutMs: 30_000 });
    expect(stopped.closed).toBe(false);
    expect(stopped.outcome).toMatchObject({
      terminal_state: 'STOPPED_LOOP_GUARD',
      reason: 'same_call_repeat',
    });
    expect(await h.counters(workflowId)).toMatchObject({ search: 2 });

    expect(await getAgentRunStatus(h.env.client, workflowId)).toMatchObject({
      phase: 'WAITING',
      guardReason: 'same_call_repeat',
      executed: 2,
    });
    expect((await getAgentRunReport(h.env.client, workflowId))?.blocked_call?.tool).toBe('search');
    const trace = await getAgentRunTrace(h.env.client, workflowId, { limit: 1000 });
    expect(trace.records.length).toBe(trace.total);
    expect(trace.records.some((r) => r.reason === 'same_call_repeat')).toBe(true);

    // Already stopped: the kill switch has nothing to stop.
    await expect(stopAgentRun(h.env.client, workflowId, { actor: 'test' })).rejects.toMatchObject({
      exitCode: Exit.REFUSED,
    });
    // Nothing changed in the world: the resume is refused and nothing runs.
    const refused = await resumeAgentRun(h.env.client, workflowId, { actor: 'test' });
    expect(refused.accepted).toBe(false);
    expect(await h.counters(workflowId)).toMatchObject({ search: 2 });

    await h.deps.world.bump();
    const accepted = await resumeAgentRun(h.env.client, workflowId, {
      actor: 'test',
      reason: 'index rebuilt',
    });
    expect(accepted).toMatchObject({ accepted: true, rejectedByValidator: false });
    const done = await waitForAgentRun(h.env.client, workflowId, { untilWaiting: false, timeoutMs: 30_000 });
    expect(done.closed).toBe(true);
    expect(done.result?.terminal_state).toBe('COMPLETED');
    // The planner is asked again from before the refused call: now that the world changed,
    // that call runs (once), then the task completes.
    expect(await h.counters(workflowId)).toMatchObject({ search: 3, complete_task: 1 });

    // Closed: a resume is refused without reaching the workflow, a stop is refused.
    const late = await resumeAgentRun(h.env.client, workflowId, { actor: 'test' });
    expect(late).toMatchObject({ accepted: false, rejectedByValidator: true });
    await expect(stopAgentRun(h.env.client, workflowId, { actor: 'test' })).rejects.toMatchObject({
      exitCode: Exit.REFUSED,
    });
  });

  it('stops a running run before its next tool call', async () => {
    const workflowId = uniqueId('api-stop');
    // A job that needs 20 polls (100 ms apart) keeps the run busy long enough to be stopped.
    const polls = Array.from({ length: 20 }, () => ({ tool: 'poll_job', args: { jobId: 'j' } }));
    await startAgentRun(h.env.client, {
      workflowId,
      taskQueue: h.taskQueue,
      input: live([{ tool: 'start_job', args: { name: 'j', pollsNeeded: 20 } }, ...polls], {
        resumeWindowMs: 60_000,
        guard: { maxWaitPolls: 20 },
      }),
    });
    await waitFor(
      () => getAgentRunStatus(h.env.client, workflowId),
      (s) => s.phase === 'RUNNING' && s.executed >= 2,
    );
    const req = await stopAgentRun(h.env.client, workflowId, { actor: 'test', reason: 'enough' });
    expect(req).toMatchObject({ actor: 'test', reason: 'enough', requestId: expect.any(String) });
    const stopped = await waitForAgentRun(h.env.client, workflowId, { timeoutMs: 30_000 });
    expect(stopped.outcome.reason).toBe('operator_stop');
    expect((await h.counters(workflowId)).poll_job).toBeLessThan(19);
  });
});
