/**
 * Issue 19 item 2: a scripted run's `plan` is a local activity (patch
 * `scripted-plan-local-activity-v1`), and by default each turn after a tool call is planned by
 * that call's `runTool` (patch `scripted-plan-prefetch-v1`). The same live script gives the
 * same result and the same decisions on every path (`scriptedPlan: 'activity'` keeps the
 * scheduled plan), the other paths schedule no `plan` activity and need fewer workflow tasks,
 * and a plan failure stops the run the same way on every path (an ActivityFailure either way);
 * a ledger that cannot be read when the next turn is planned stops the run before that turn.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import type { WorkflowHandle } from '@temporalio/client';
import { createActivities } from '../../activities/create-activities';
import {
  resumeUpdate,
  statusQuery,
  type RunInput,
  type RunResult,
  type RunStatus,
} from '../../common/contracts';
import { LEDGER_UNAVAILABLE } from '../../common/planner';
import { agentRun } from '../../workflows';
import { agentSinks } from '../../worker/create-worker';
import { live, search } from '../helpers/run-inputs';
import { workflowBundle } from '../helpers/run-harness';
import { createTestEnv, testDataConverter, uniqueId, uniqueTaskQueue } from '../helpers/temporal-env';
import { openDemoWorkerDeps, type DemoWorkerDeps } from '../../demo/deps';
import { runResult } from '../helpers/run-result';

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

/** Markers of one name (`core_local_activity`, `core_patch`) in a history. */
const markers = (h: History, name: string): number =>
  (h.events ?? []).filter((e) => e.markerRecordedEventAttributes?.markerName === name).length;

/** Polls a run's status until it waits for a resume, and answers that status. */
async function waitForStop(handle: WorkflowHandle<typeof agentRun>): Promise<RunStatus> {
  for (let i = 0; i < 600; i++) {
    const s = await handle.query(statusQuery);
    if (s.phase === 'WAITING') return s;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${handle.workflowId} did not stop`);
}

describe('scripted plan as a local activity', () => {
  let env: TestWorkflowEnvironment;
  let deps: DemoWorkerDeps;
  let worker: Worker;
  let running: Promise<void>;
  const taskQueue = uniqueTaskQueue('local-plan');
  /** While true, the plan activity fails (non-retryable) as when the ledger cannot be read. */
  let ledgerDown = false;
  /** Operation keys whose ledger reads fail. */
  const failingKeys = new Set<string>();

  beforeAll(async () => {
    env = await createTestEnv();
    const url = `sqlite:${join(mkdtempSync(join(tmpdir(), 'alg-local-plan-')), 'agent.db')}`;
    deps = await openDemoWorkerDeps({ ledgerUrl: url, worldUrl: url, pollAfterMs: 100 });
    // The ledger, failing its reads of the keys in `failingKeys` as when the database is down.
    const ledger = new Proxy(deps.ledger, {
      get(target, key) {
        if (key === 'get')
          return async (k: string) => {
            if (failingKeys.has(k)) throw new Error('connect ECONNREFUSED 127.0.0.1:5432');
            return target.get(k);
          };
        const v = Reflect.get(target, key) as unknown;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const acts = createActivities({ ...deps, ledger });
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

  type Path = 'prefetch' | 'local' | 'activity';
  async function runPaths(
    input: (tag: string) => RunInput,
  ): Promise<Record<Path, { r: RunResult; h: History }>> {
    const out = {} as Record<Path, { r: RunResult; h: History }>;
    for (const path of ['prefetch', 'local', 'activity'] as const) {
      const handle = await env.client.workflow.start(agentRun, {
        taskQueue,
        workflowId: uniqueId(`local-plan-${path}`),
        args: [{ ...input(path), scriptedPlan: path }],
      });
      const r = await runResult(handle);
      out[path] = { r, h: await handle.fetchHistory() };
    }
    return out;
  }

  it('the same live script ends the same on every path; prefetch plans once, local every turn, neither schedules a plan', async () => {
    const runs = await runPaths((tag) =>
      live([
        search(`first ${tag}`),
        { tool: 'write_record', args: { id: `lp-${tag}`, body: 'b' } },
        search(`second ${tag}`),
        { tool: 'complete_task', args: { summary: 'done' } },
      ]),
    );
    const { prefetch, local, activity } = runs;
    for (const { r } of [prefetch, local, activity]) {
      expect(r.terminal_state).toBe('COMPLETED');
      expect(r.executed).toBe(4);
    }
    expect(local.r.decisions).toEqual(activity.r.decisions);
    expect(prefetch.r.decisions).toEqual(activity.r.decisions);
    expect(local.r.decisions).toHaveLength(4);

    expect(scheduled(activity.h).plan).toBe(4);
    expect(scheduled(local.h).plan).toBeUndefined();
    expect(scheduled(prefetch.h).plan).toBeUndefined();
    expect(scheduled(local.h).runTool).toBe(scheduled(activity.h).runTool);
    expect(scheduled(prefetch.h).runTool).toBe(scheduled(activity.h).runTool);
    // Each local plan is a marker (its result), recorded in the task that asked for it.
    expect(markers(local.h, 'core_local_activity')).toBe(4);
    // Prefetch: the first turn is a local plan; every later one came back with the call before
    // it (patch scripted-plan-prefetch-v1), no plan of its own.
    expect(markers(prefetch.h, 'core_local_activity')).toBe(1);
    expect(count(prefetch.h, MARKER_RECORDED)).toBe(
      markers(prefetch.h, 'core_local_activity') + markers(prefetch.h, 'core_patch'),
    );
    // Prefetch: one workflow task per step, the tool's result and the next turn together.
    const tasks = (h: History) => count(h, WORKFLOW_TASK_COMPLETED);
    expect(tasks(prefetch.h)).toBeLessThanOrEqual(4 + 2);
    expect(tasks(prefetch.h)).toBeLessThanOrEqual(tasks(local.h));
    expect(tasks(local.h)).toBeLessThan(tasks(activity.h));
  }, 60_000);

  it('a ledger that cannot be read when the next turn is planned stops the run infrastructure_fault; nothing runs twice', async () => {
    const tag = uniqueId('lp-down');
    const second = `op-${tag}-2`;
    failingKeys.add(second);
    const input: RunInput = {
      ...live([
        { tool: 'write_record', args: { id: `${tag}-1`, body: 'one' }, operationKey: `op-${tag}-1` },
        { tool: 'write_record', args: { id: `${tag}-2`, body: 'two' }, operationKey: second },
        { tool: 'complete_task', args: { summary: 'done' } },
      ]),
      timeouts: {
        plannerStartToCloseMs: 10_000,
        toolStartToCloseMs: 10_000,
        toolHeartbeatMs: 5_000,
        retryInitialMs: 20,
      },
      resumeWindowMs: 60_000,
    };
    const handle = await env.client.workflow.start(agentRun, { taskQueue, workflowId: tag, args: [input] });
    try {
      // The prefetch inside the first write's runTool could not read the second key; the local
      // plan asked after it could not either: the run stops before the second write.
      const stopped = await waitForStop(handle);
      expect(stopped).toMatchObject({ terminalState: 'NEEDS_HUMAN', guardReason: 'infrastructure_fault' });
      expect(await deps.world.counters(tag)).toEqual({ write_record: 1 });
    } finally {
      failingKeys.delete(second);
    }
    // The ledger answers again: the plan is asked afresh and the run completes, each write once.
    const answer = await handle.executeUpdate(resumeUpdate, {
      args: [{ actor: 'ops', reason: 'ledger back', requestId: `${tag}-r1` }],
    });
    expect(answer.accepted).toBe(true);
    const r = await runResult(handle);
    expect(r.terminal_state).toBe('COMPLETED');
    expect(await deps.world.counters(tag)).toEqual({ write_record: 2, complete_task: 1 });
    expect(r.decisions.map((d) => d.decision)).toEqual(['execute', 'execute', 'execute']);
  }, 60_000);

  it('a plan failure stops the run infrastructure_fault on both paths, never FAILED', async () => {
    ledgerDown = true;
    try {
      const { prefetch, local, activity } = await runPaths(() =>
        live([{ tool: 'complete_task', args: { summary: 'never' } }], { resumeWindowMs: 200 }),
      );
      for (const { r } of [prefetch, local, activity]) {
        expect(r.terminal_state).toBe('NEEDS_HUMAN');
        expect(r.reason).toBe('infrastructure_fault');
        expect(r.executed).toBe(0);
        expect(r.checkpoint).not.toBeNull();
      }
      expect(scheduled(local.h).plan).toBeUndefined();
      expect(scheduled(prefetch.h).plan).toBeUndefined();
      expect(scheduled(activity.h).plan).toBe(1);
    } finally {
      ledgerDown = false;
    }
  }, 60_000);
});
