/**
 * Issue 19 item 2: a scripted run's `plan` is a local activity (patch
 * `scripted-plan-local-activity-v1`). The same live script gives the same result and the
 * same decisions on both paths (`scriptedPlan: 'activity'` keeps the scheduled one), the
 * local path schedules no `plan` activity and needs fewer workflow tasks, and a plan failure
 * stops the run the same way on both paths (an ActivityFailure either way).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { createActivities } from '../../activities/create-activities';
import type { RunInput, RunResult } from '../../common/contracts';
import { LEDGER_UNAVAILABLE } from '../../common/planner';
import { agentRun } from '../../workflows';
import { agentSinks } from '../../worker/create-worker';
import { live, search } from '../helpers/run-inputs';
import { workflowBundle } from '../helpers/run-harness';
import { createTestEnv, testDataConverter, uniqueId, uniqueTaskQueue } from '../helpers/temporal-env';
import { openDemoWorkerDeps, type DemoWorkerDeps } from '../../demo/deps';

type History = temporal.api.history.v1.IHistory;

/** Scheduled activities of a history, by type name. */
function scheduled(h: History): Record<string, number> {
  const n: Record<string, number> = {};
  for (const e of h.events ?? []) {
    const name = e.activityTaskScheduledEventAttributes?.activityType?.name;
    if (name) n[name] = (n[name] ?? 0) + 1;
  }
  return n;
}

/** Events of one type (temporal.api.enums.v1.EventType) in a history. */
const count = (h: History, type: number): number =>
  (h.events ?? []).filter((e) => Number(e.eventType) === type).length;
const WORKFLOW_TASK_COMPLETED = 7;
const MARKER_RECORDED = 25;

describe('scripted plan as a local activity', () => {
  let env: TestWorkflowEnvironment;
  let deps: DemoWorkerDeps;
  let worker: Worker;
  let running: Promise<void>;
  const taskQueue = uniqueTaskQueue('local-plan');
  /** While true, the plan activity fails (non-retryable) as when the ledger cannot be read. */
  let ledgerDown = false;

  beforeAll(async () => {
    env = await createTestEnv();
    const url = `sqlite:${join(mkdtempSync(join(tmpdir(), 'alg-local-plan-')), 'agent.db')}`;
    deps = await openDemoWorkerDeps({ ledgerUrl: url, worldUrl: url, pollAfterMs: 100 });
    const acts = createActivities(deps);
    worker = await Worker.create({
      connection: env.nativeConnection,
      namespace: 'default',
      taskQueue,
      workflowBundle: await workflowBundle(),
      activities: {
        ...acts,
        async plan(input: Parameters<typeof acts.plan>[0]) {
          if (ledgerDown)
            throw ApplicationFailure.create({
              type: LEDGER_UNAVAILABLE,
              message: 'ledger unavailable: connect ECONNREFUSED',
              nonRetryable: true,
            });
          return acts.plan(input);
        },
      },
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

  async function runBoth(
    input: (tag: string) => RunInput,
  ): Promise<Record<'local' | 'activity', { r: RunResult; h: History }>> {
    const out = {} as Record<'local' | 'activity', { r: RunResult; h: History }>;
    for (const path of ['local', 'activity'] as const) {
      const handle = await env.client.workflow.start(agentRun, {
        taskQueue,
        workflowId: uniqueId(`local-plan-${path}`),
        args: [{ ...input(path), scriptedPlan: path }],
      });
      const r = await handle.result();
      out[path] = { r, h: await handle.fetchHistory() };
    }
    return out;
  }

  it('the same live script ends the same on both paths; the local one schedules no plan activity', async () => {
    const runs = await runBoth((tag) =>
      live([
        search(`first ${tag}`),
        { tool: 'write_record', args: { id: `lp-${tag}`, body: 'b' } },
        search(`second ${tag}`),
        { tool: 'complete_task', args: { summary: 'done' } },
      ]),
    );
    const { local, activity } = runs;
    for (const { r } of [local, activity]) {
      expect(r.terminal_state).toBe('COMPLETED');
      expect(r.executed).toBe(4);
    }
    expect(local.r.decisions).toEqual(activity.r.decisions);
    expect(local.r.decisions).toHaveLength(4);

    expect(scheduled(activity.h).plan).toBe(4);
    expect(scheduled(local.h).plan).toBeUndefined();
    expect(scheduled(local.h).runTool).toBe(scheduled(activity.h).runTool);
    // Each local plan is a marker (its result), recorded in the task that asked for it.
    expect(count(local.h, MARKER_RECORDED)).toBeGreaterThanOrEqual(4);
    expect(count(local.h, WORKFLOW_TASK_COMPLETED)).toBeLessThan(count(activity.h, WORKFLOW_TASK_COMPLETED));
  }, 60_000);

  it('a plan failure stops the run infrastructure_fault on both paths, never FAILED', async () => {
    ledgerDown = true;
    try {
      const { local, activity } = await runBoth(() =>
        live([{ tool: 'complete_task', args: { summary: 'never' } }], { resumeWindowMs: 200 }),
      );
      for (const { r } of [local, activity]) {
        expect(r.terminal_state).toBe('NEEDS_HUMAN');
        expect(r.reason).toBe('infrastructure_fault');
        expect(r.executed).toBe(0);
        expect(r.checkpoint).not.toBeNull();
      }
      expect(scheduled(local.h).plan).toBeUndefined();
      expect(scheduled(activity.h).plan).toBe(1);
    } finally {
      ledgerDown = false;
    }
  }, 60_000);
});
