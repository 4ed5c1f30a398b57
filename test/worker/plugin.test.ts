/**
 * The Temporal plugin (worker/plugin.ts, issue 16 item 4): a plain `Worker.create({ plugins })`
 * and `new Client({ plugins })` of the user's, with none of `createAgentWorker`, run a user's
 * tool to COMPLETED; the client reads the result through the plugin's codec, one without it
 * sees only ciphertext, and a client-only plugin replays the history. Real dev server, real
 * SQLite.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { Client } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Runtime, Worker, type WorkerOptions } from '@temporalio/worker';
import { ENCRYPTED_ENCODING } from '../../codec';
import { defineTool } from '../../tools/define-tool';
import { type RunInput, type RunResult } from '../../common/contracts';
import { startAgentRun } from '../../client/api';
import { TerminalState } from '../../guard';
import {
  openWorkerDeps,
  TELEMETRY_OFF_MODULE,
  TELEMETRY_OUTBOX_MODULE,
  WORKFLOWS_PATH,
  type WorkerDeps,
} from '../../worker/create-worker';
import { AgentLoopGuardPlugin } from '../../worker/plugin';
import { SearchAttributesError } from '../../worker/search-attributes';
import { createTestEnv, uniqueId, uniqueTaskQueue } from '../helpers/temporal-env';
import { runResult } from '../helpers/run-result';

try {
  // Worker state and bundler chatter drowns test output; warnings and errors still show.
  Runtime.install({ logger: new DefaultLogger('WARN') });
} catch {
  // Already installed by another module in this process.
}

describe('AgentLoopGuardPlugin on a plain Worker and Client', () => {
  let env: TestWorkflowEnvironment;
  const opened: WorkerDeps[] = [];
  let worker: Worker | undefined;
  let running: Promise<void> | undefined;

  beforeAll(async () => {
    env = await createTestEnv();
  });
  afterAll(async () => {
    if (worker?.getState() === 'RUNNING') worker.shutdown();
    await running;
    for (const d of opened) await d.close();
    await env?.teardown();
  });

  it("runs a user's tool to COMPLETED; the plugin's client reads it, a client without its codec cannot", async () => {
    let lookups = 0;
    const lookup = defineTool({
      name: 'lookup_order',
      description: 'Look an order up.',
      effect: 'read',
      schema: z.object({ id: z.string().min(1) }).strict(),
      execute(a) {
        lookups += 1;
        return { data: { id: a.id, state: 'shipped' } };
      },
    });
    const done = defineTool({
      name: 'finish',
      description: 'Finish with a summary.',
      effect: 'read',
      schema: z.object({ summary: z.string().min(1) }).strict(),
      execute: (a) => ({ data: { summary: a.summary }, terminal: true }),
    });
    const deps = await openWorkerDeps({
      ledgerUrl: `sqlite:${join(mkdtempSync(join(tmpdir(), 'alg-plugin-')), 'agent.db')}`,
      tools: [lookup, done],
      configPath: null,
    });
    opened.push(deps);
    const plugin = new AgentLoopGuardPlugin({ deps, searchAttributes: 'check' });
    const taskQueue = uniqueTaskQueue('plugin');
    // The user's own Worker: no workflowsPath, no activities, no data converter of its own.
    worker = await Worker.create({
      connection: env.nativeConnection,
      namespace: 'default',
      taskQueue,
      plugins: [plugin],
    });
    running = worker.run();

    const client = new Client({ connection: env.connection, namespace: 'default', plugins: [plugin] });
    const input: RunInput = {
      goal: 'where is order 7',
      planner: {
        kind: 'scripted',
        live: true,
        script: {
          calls: [
            { tool: 'lookup_order', args: { id: '7' } },
            { tool: 'finish', args: { summary: 'order 7 shipped' } },
          ],
        },
      },
    };
    const workflowId = uniqueId('plugin');
    // The package's client API over the user's Client.
    const handle = await startAgentRun(client, { taskQueue, workflowId, input });
    const result = (await runResult(handle)) as RunResult;
    expect(result).toMatchObject({ terminal_state: TerminalState.COMPLETED, reason: null });
    expect(lookups).toBe(1);

    // The payloads in history are sealed with the plugin's codec.
    const history = await handle.fetchHistory();
    const started = history.events?.[0]?.workflowExecutionStartedEventAttributes;
    const encoding = Buffer.from(started?.input?.payloads?.[0]?.metadata?.encoding ?? []).toString();
    expect(encoding).toBe(ENCRYPTED_ENCODING);
    // A client without the plugin (no codec) cannot read the result.
    const bare = new Client({ connection: env.connection, namespace: 'default' });
    await expect(bare.workflow.getHandle(workflowId).result()).rejects.toThrow(/encoding/i);
    // A client-only plugin (no deps) replays the history: workflow, codec and sinks.
    await Worker.runReplayHistory({ plugins: [new AgentLoopGuardPlugin()] }, history);
  });

  it('without deps it configures clients only; a worker asking for it is a clear error', async () => {
    const plugin = new AgentLoopGuardPlugin();
    const client = new Client({ connection: env.connection, plugins: [plugin] });
    expect(client.options.dataConverter.payloadCodecs).toEqual(plugin.dataConverter.payloadCodecs);
    await expect(
      Worker.create({ connection: env.nativeConnection, taskQueue: uniqueTaskQueue('p'), plugins: [plugin] }),
    ).rejects.toThrow(/a worker needs `deps`/);
    expect(() => new AgentLoopGuardPlugin({ dep: {} } as never)).toThrow(/unknown option\(s\) dep\b/);
  });

  it("keeps the worker's own workflows and appends the activities; a namespace without the attributes fails", async () => {
    const own = await openWorkerDeps({
      ledgerUrl: `sqlite:${join(mkdtempSync(join(tmpdir(), 'alg-plugin-')), 'agent.db')}`,
      configPath: null,
    });
    opened.push(own);
    const skip = new AgentLoopGuardPlugin({ deps: own, searchAttributes: 'skip' });
    const mine = { myActivity: async () => 1 };
    const base = { taskQueue: 'q', activities: mine } as WorkerOptions;
    const bundled = await skip.configureWorker({ ...base, workflowBundle: { code: 'x' } });
    expect(bundled.workflowsPath).toBeUndefined();
    expect(bundled.workflowBundle).toEqual({ code: 'x' });
    expect(bundled.activities).toMatchObject({ myActivity: mine.myActivity });
    expect(Object.keys(bundled.activities ?? {})).toEqual(expect.arrayContaining(['plan', 'runTool']));
    expect(Object.keys(bundled.sinks ?? {})).toContain('agentTelemetry');
    const selfBundled = await skip.configureWorker(base);
    expect(selfBundled.workflowsPath).toBe(WORKFLOWS_PATH);
    // Bundled by the worker without telemetry: the module that sends nothing (a bundle built
    // with the plugin's `configureBundler` has the outbox).
    expect(selfBundled.interceptors?.workflowModules).toEqual([TELEMETRY_OFF_MODULE]);
    expect(skip.configureBundler({ workflowsPath: WORKFLOWS_PATH }).workflowInterceptorModules).toEqual([
      TELEMETRY_OUTBOX_MODULE,
    ]);
    expect((await skip.configureWorker({ ...base, workflowsPath: '/mine' })).workflowsPath).toBe('/mine');

    // `check` on a namespace with none of them: configureWorker, which Worker.create awaits before
    // it creates anything, fails naming them.
    const empty = {
      operatorService: {
        listSearchAttributes: async () => ({ customAttributes: {} }),
        addSearchAttributes: async () => ({}),
      },
    };
    const check = new AgentLoopGuardPlugin({ deps: own, searchAttributes: 'check' });
    await expect(
      check.configureWorker({ ...base, connection: empty as never, namespace: 'bare' }),
    ).rejects.toThrow(SearchAttributesError);
  });
});
