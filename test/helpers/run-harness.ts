/**
 * A real stack for workflow tests: the shared dev server, a worker hosting the real
 * workflow and activities, a fresh SQLite file for the ledger + demo world.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Runtime, type Worker } from '@temporalio/worker';
import type { OperatorRegistry } from '../../operators/registry';
import type { AnyTool } from '../../tools/define-tool';
import type { RunInput, RunResult } from '../../common/contracts';
import { agentRun } from '../../workflows';
import { createAgentWorker, type AgentWorkerOptions, type WorkerDeps } from '../../worker/create-worker';
import { createTestEnv, testDataConverter, uniqueId, uniqueTaskQueue } from './temporal-env';
import { runCounters } from '../../client/counters';
import { openDemoWorkerDeps, type DemoWorkerDeps } from '../../demo/deps';
import { sharedWorkflowBundle } from './shared-bundle';
import { runResult } from './run-result';

try {
  // Worker state chatter drowns test output; warnings and errors still show.
  Runtime.install({ logger: new DefaultLogger('WARN') });
} catch {
  // Already installed by another module in this test file.
}

/** The workflow bundle of every test worker: one per jest run (shared-bundle.ts). */
export const workflowBundle = sharedWorkflowBundle;

/** A running harness. */
export interface Harness {
  env: TestWorkflowEnvironment;
  deps: DemoWorkerDeps;
  taskQueue: string;
  dbUrl: string;
  worker: Worker;
  /** The payload codec of the worker and of `env.client` (replay a fetched history with it). */
  dataConverter: DataConverter;
  start(
    input: RunInput,
    workflowId?: string,
  ): Promise<{
    workflowId: string;
    result: () => Promise<RunResult>;
    handle: WorkflowHandleWithFirstExecutionRunId<typeof agentRun>;
  }>;
  /** Real executions by tool of a run: the runtime's counters, as agentctl and the client API read them. */
  counters(workflowId: string): Promise<Record<string, number>>;
  /** The demo tools' own count of their executions, kept in the world's transactions. */
  worldCounters(workflowId: string): Promise<Record<string, number>>;
  close(): Promise<void>;
}

/** Options of {@link startHarness}. */
export interface HarnessOptions {
  /** The ledger's URL (default: a fresh SQLite file); also the world's unless `worldUrl` is set. */
  dbUrl?: string;
  /** The demo world's SQLite URL, when it must live apart from the ledger (a PostgreSQL ledger). */
  worldUrl?: string;
  /** The operators the worker trusts (default: open mode, every request accepted). */
  operators?: OperatorRegistry;
  pollAfterMs?: number;
  leaseMs?: number;
  /** Extra tools beyond the demo set. */
  tools?: readonly AnyTool[];
  /** The worker's finishing tool (openWorkerDeps `finishingTool`; default the demo's `complete_task`). */
  finishingTool?: AnyTool | null;
  /** Changes to the opened activity deps (e.g. `payloads: null`). */
  deps?: (deps: WorkerDeps) => Partial<WorkerDeps>;
  /**
   * Extra worker options, from the opened deps (e.g. worker/telemetry.ts interceptors and
   * sinks). A `workflowBundle` here replaces the shared one (one bundled with interceptor modules).
   */
  worker?: (
    deps: WorkerDeps,
  ) => Partial<
    Pick<AgentWorkerOptions, 'workflowBundle' | 'interceptors' | 'sinks' | 'telemetry' | 'tuning'>
  >;
}

/** Starts a worker on the shared dev server with a fresh database. */
export async function startHarness(o: HarnessOptions = {}): Promise<Harness> {
  const env = await createTestEnv();
  const dbUrl = o.dbUrl ?? `sqlite:${join(mkdtempSync(join(tmpdir(), 'alg-')), 'agent.db')}`;
  const deps = await openDemoWorkerDeps({
    ledgerUrl: dbUrl,
    worldUrl: o.worldUrl ?? dbUrl,
    pollAfterMs: o.pollAfterMs ?? 100,
    leaseMs: o.leaseMs,
    ...(o.tools ? { tools: o.tools } : {}),
    ...(o.finishingTool !== undefined ? { finishingTool: o.finishingTool } : {}),
  });
  const taskQueue = uniqueTaskQueue('run');
  const extra = o.worker?.(deps) ?? {};
  // Encrypted like env.client (temporal-env.ts), or neither could read the other's payloads.
  const dataConverter = testDataConverter();
  const worker = await createAgentWorker({
    connection: env.nativeConnection,
    namespace: 'default',
    taskQueue,
    deps: { ...deps, ...(o.operators ? { operators: o.operators } : {}), ...o.deps?.(deps) },
    dataConverter,
    ...extra,
    workflowBundle: extra.workflowBundle ?? (await workflowBundle()),
  });
  const running = worker.run();
  return {
    env,
    deps,
    taskQueue,
    dbUrl,
    worker,
    dataConverter,
    async start(input, workflowId = uniqueId('run')) {
      const handle = await env.client.workflow.start(agentRun, {
        taskQueue,
        workflowId,
        args: [input],
        staticSummary: input.goal,
      });
      return { workflowId, result: () => runResult(handle), handle };
    },
    counters: async (id) => (await runCounters(id, { ledgerUrl: dbUrl })) ?? {},
    worldCounters: (id) => deps.world.counters(id),
    async close() {
      worker.shutdown();
      await running;
      await deps.close();
      await env.teardown();
    },
  };
}
