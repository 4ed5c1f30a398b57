/**
 * Faults stop, they do not fail (docs/spec.md §7): a tool activity that fails as a whole
 * after its retries (here: the activity boundary throws, as it does when the ledger or the
 * world database is down) ends the run NEEDS_HUMAN `infrastructure_fault` with its
 * checkpoint, never FAILED; a resume once the service is back re-asks the planner and the
 * run completes without a duplicate write. A failing verification refuses a resume
 * instead of failing the run.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { createActivities } from '../../activities/create-activities';
import { resumeUpdate, statusQuery, type RunInput } from '../../common/contracts';
import { agentRun } from '../../workflows';
import { agentSinks } from '../../worker/create-worker';
import { live, waitFor } from '../helpers/run-inputs';
import { workflowBundle } from '../helpers/run-harness';
import { createTestEnv, testDataConverter, uniqueId, uniqueTaskQueue } from '../helpers/temporal-env';
import { openDemoWorkerDeps, type DemoWorkerDeps } from '../../demo/deps';
import { runResult } from '../helpers/run-result';

describe('infrastructure faults stop the run with its checkpoint', () => {
  let env: TestWorkflowEnvironment;
  let deps: DemoWorkerDeps;
  let worker: Worker;
  let running: Promise<void>;
  const taskQueue = uniqueTaskQueue('faults');
  /** While true, the tool and verify activities fail as a whole (the backing service is down). */
  let down = false;
  let toolFailures = 0;

  beforeAll(async () => {
    env = await createTestEnv();
    const url = `sqlite:${join(mkdtempSync(join(tmpdir(), 'alg-faults-')), 'agent.db')}`;
    deps = await openDemoWorkerDeps({ ledgerUrl: url, worldUrl: url, pollAfterMs: 100 });
    // The real activities, behind a boundary that fails while the service is "down".
    const acts = createActivities(deps);
    const wrapped = {
      ...acts,
      async runTool(input: Parameters<typeof acts.runTool>[0]) {
        if (down) {
          toolFailures += 1;
          throw new Error('connect ECONNREFUSED 127.0.0.1:5432 (ledger database down)');
        }
        return acts.runTool(input);
      },
      async verifyPrecondition(input: Parameters<typeof acts.verifyPrecondition>[0]) {
        if (down) throw new Error('connect ECONNREFUSED 127.0.0.1:5432 (ledger database down)');
        return acts.verifyPrecondition(input);
      },
    };
    worker = await Worker.create({
      connection: env.nativeConnection,
      namespace: 'default',
      taskQueue,
      workflowBundle: await workflowBundle(),
      activities: wrapped,
      sinks: agentSinks(),
      dataConverter: testDataConverter(),
    });
    running = worker.run();
  });
  afterAll(async () => {
    worker?.shutdown();
    await running;
    await deps?.close();
    await env?.teardown();
  });

  it('a tool activity failing after its retries ends NEEDS_HUMAN infrastructure_fault; resume completes with one write', async () => {
    const record = { tool: 'write_record', args: { id: 'fault-1', body: 'b' } };
    const input: RunInput = live([record, { tool: 'complete_task', args: { summary: 'done' } }], {
      resumeWindowMs: 60_000,
      timeouts: {
        plannerStartToCloseMs: 10_000,
        toolStartToCloseMs: 5_000,
        toolHeartbeatMs: 2_000,
        toolMaxAttempts: 2,
        retryInitialMs: 100,
      },
    });
    down = true;
    const handle = await env.client.workflow.start(agentRun, {
      taskQueue,
      workflowId: uniqueId('fault'),
      args: [input],
    });
    const st = await waitFor(
      () => handle.query(statusQuery),
      (s) => s.phase === 'WAITING',
      30_000,
    );
    expect(st).toMatchObject({ terminalState: 'NEEDS_HUMAN', guardReason: 'infrastructure_fault' });
    expect(toolFailures).toBe(2); // the activity's own retries, then the stop
    expect(await deps.world.counters(handle.workflowId)).toEqual({});

    // A resume while the service is still down.
    const early = await handle.executeUpdate(resumeUpdate, {
      args: [{ actor: 'ops', reason: 'retry', requestId: 'fault-r1' }],
    });
    // infrastructure_fault lifts on retry: the next attempt is the verification.
    expect(early.accepted).toBe(true);
    // …which fails again and stops again, still with nothing written.
    await waitFor(
      () => handle.query(statusQuery),
      (s) => s.phase === 'WAITING' && s.executed === 2,
      30_000,
    );
    expect(await deps.world.counters(handle.workflowId)).toEqual({});

    down = false;
    const ok = await handle.executeUpdate(resumeUpdate, {
      args: [{ actor: 'ops', reason: 'database back', requestId: 'fault-r2' }],
    });
    expect(ok.accepted).toBe(true);
    const r = await runResult(handle);
    expect(r.terminal_state).toBe('COMPLETED');
    expect(await deps.world.counters(handle.workflowId)).toEqual({ write_record: 1, complete_task: 1 });
  });

  it('a verification that fails refuses the resume and leaves the run waiting', async () => {
    const deploy = { tool: 'deploy', args: { service: 'fault-svc', version: '1' } };
    // The verification's five attempts 100 ms apart and doubling (1 s by default: 15 s in all).
    const input = live([deploy, deploy], {
      resumeWindowMs: 60_000,
      timeouts: {
        plannerStartToCloseMs: 10_000,
        toolStartToCloseMs: 10_000,
        toolHeartbeatMs: 5_000,
        retryInitialMs: 100,
      },
    });
    const handle = await env.client.workflow.start(agentRun, {
      taskQueue,
      workflowId: uniqueId('fault-v'),
      args: [input],
    });
    await waitFor(
      () => handle.query(statusQuery),
      (s) => s.phase === 'WAITING',
    );
    down = true;
    const answer = await handle.executeUpdate(resumeUpdate, {
      args: [{ actor: 'ops', reason: 'granted?', requestId: 'fault-v1' }],
    });
    down = false;
    expect(answer.accepted).toBe(false);
    expect(answer.reason).toMatch(/could not verify/);
    expect((await handle.query(statusQuery)).phase).toBe('WAITING');
    await handle.terminate('test done');
  });
});
