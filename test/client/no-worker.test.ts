/**
 * A run whose task queue no worker polls, against the real dev server: agentctl says so within
 * seconds, naming the queue and how to start a worker (status, start, start --wait, stop,
 * resume, send), sends nothing, and `start --wait` keeps waiting until a worker appears. And a
 * worker started before its server waits for it (AGENT_TEMPORAL_WAIT) instead of exiting.
 */
import { createServer } from 'node:net';
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { freePort, startDevServer, type DevServerHandle } from '../../devserver/dev-server';
import { agentRun } from '../../workflows';
import { createAgentWorker } from '../../worker/create-worker';
import { readTemporalWaitMs } from '../../worker/env';
import { openDemoWorkerDeps } from '../../demo/deps';
import type { RunInput, RunResult } from '../../common/contracts';
import { createTestEnv, testDataConverter, uniqueId, uniqueTaskQueue } from '../helpers/temporal-env';
import { workflowBundle } from '../helpers/run-harness';
import { fixture } from '../helpers/run-inputs';
import { agentctl, ROOT } from './cli-helpers';
import { runResult } from '../helpers/run-result';

const TSX = join(ROOT, 'node_modules', '.bin', 'tsx');
const SCRIPT = join(ROOT, 'test', 'fixtures', 'traces', 'terminal-success-completed.json');

let env: TestWorkflowEnvironment;
beforeAll(async () => {
  env = await createTestEnv();
});
afterAll(async () => {
  await env?.teardown();
});

/** agentctl's environment for task queue `q` on the shared server. */
const cliEnv = (q: string, dir = mkdtempSync(join(tmpdir(), 'nw-'))): Record<string, string> => ({
  TEMPORAL_ADDRESS: process.env.TEMPORAL_TEST_ADDRESS as string,
  TEMPORAL_NAMESPACE: 'default',
  TEMPORAL_TASK_QUEUE: q,
  LEDGER_URL: `sqlite:${join(dir, 'agent.db')}`,
  WORLD_URL: `sqlite:${join(dir, 'agent.db')}`,
});

/** A run that completes at once when a worker serves it (fixture mode: the script answers). */
const completing = (): RunInput =>
  fixture([
    { tool: 'answer', args: { text: '42' }, result: { kind: 'SUCCESS', data: '42', terminal: true } },
  ]);

/** Starts a run on `q`, where no worker polls. */
async function startRunWithoutWorker(q: string, input: RunInput = completing()) {
  const workflowId = uniqueId('nw');
  const handle = await env.client.workflow.start(agentRun, {
    taskQueue: q,
    workflowId,
    args: [input],
    staticSummary: input.goal,
  });
  return { workflowId, handle };
}

/** A worker on `q` (the real workflow and the demo's tools), until `stop()`. */
async function startWorker(q: string): Promise<{ worker: Worker; stop(): Promise<void> }> {
  const dbUrl = `sqlite:${join(mkdtempSync(join(tmpdir(), 'nw-w-')), 'agent.db')}`;
  const deps = await openDemoWorkerDeps({ ledgerUrl: dbUrl, worldUrl: dbUrl, pollAfterMs: 100 });
  const worker = await createAgentWorker({
    connection: env.nativeConnection,
    namespace: 'default',
    taskQueue: q,
    deps,
    dataConverter: testDataConverter(),
    workflowBundle: await workflowBundle(),
  });
  const running = worker.run();
  return {
    worker,
    async stop() {
      worker.shutdown();
      await running;
      await deps.close();
    },
  };
}

describe('agentctl with no worker on the run’s task queue', () => {
  it('status answers within 15 s naming the queue and how to start a worker, with what the server knows', async () => {
    const q = uniqueTaskQueue('nw-status');
    const { workflowId, handle } = await startRunWithoutWorker(q);
    try {
      const t0 = Date.now();
      const r = await agentctl(['status', workflowId], cliEnv(q), 90_000);
      const elapsed = Date.now() - t0;
      expect(elapsed).toBeLessThan(15_000);
      expect(r.code).toBe(6);
      expect(r.stderr).toContain(`no worker polls task queue "${q}" (namespace default on `);
      expect(r.stderr).toContain(`TEMPORAL_TASK_QUEUE=${q} npm run worker`);
      expect(r.stdout).toMatch(new RegExp(`worker +NONE on task queue ${q}`));
      expect(r.stdout).toMatch(/temporal status +RUNNING/);
      expect(r.stdout).toMatch(/goal +test \(fixture\)|goal +\S/);
      const j = await agentctl(['status', workflowId, '--json'], cliEnv(q), 90_000);
      expect(j.code).toBe(6);
      expect(JSON.parse(j.stdout)).toMatchObject({ workflowId, taskQueue: q, temporalStatus: 'RUNNING' });
    } finally {
      await handle.terminate('test over').catch(() => undefined);
    }
  });

  it('stop, resume and send say so within seconds and send nothing: the run, served later, completes unstopped', async () => {
    const q = uniqueTaskQueue('nw-control');
    const { workflowId, handle } = await startRunWithoutWorker(q);
    for (const args of [
      ['stop', workflowId, '--reason', 'halt'],
      ['resume', workflowId, '--reason', 'go on'],
      ['send', workflowId, 'hello'],
    ]) {
      const t0 = Date.now();
      const r = await agentctl(args, cliEnv(q), 90_000);
      expect({ args, ms: Date.now() - t0 < 15_000, code: r.code }).toEqual({ args, ms: true, code: 6 });
      expect(r.stderr).toContain(`no worker polls task queue "${q}"`);
      expect(r.stderr).toMatch(/Nothing was sent/);
    }
    const w = await startWorker(q);
    try {
      const result = (await runResult(handle)) as RunResult;
      // No stop was sent: the run ends as its script says, not operator_stop.
      expect(result.terminal_state).toBe('COMPLETED');
      expect(result.reason).not.toBe('operator_stop');
    } finally {
      await w.stop();
    }
  });

  it('start without --wait on a queue no worker polls starts the run and says so (exit 0); a malformed name is exit 2', async () => {
    const q = uniqueTaskQueue('nw-typo');
    const id = uniqueId('nw-start');
    const r = await agentctl(['start', '--script', SCRIPT, '--id', id, '--task-queue', q], cliEnv(q), 90_000);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`started ${id} on task queue ${q}`);
    expect(r.stderr).toContain(`no worker polls task queue "${q}"`);
    expect(r.stderr).toContain('The run waits until a worker polls it.');
    // Started, and waiting for a worker: nothing ran.
    expect((await env.client.workflow.getHandle(id).describe()).status.name).toBe('RUNNING');
    await env.client.workflow.getHandle(id).terminate('test done');

    const bad = await agentctl(
      ['start', '--script', SCRIPT, '--id', `${id}-bad`, '--task-queue', ' q '],
      cliEnv(q),
      30_000,
    );
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain(
      'start: --task-queue: the task queue name " q " begins or ends with white space',
    );
    await expect(env.client.workflow.getHandle(`${id}-bad`).describe()).rejects.toBeInstanceOf(
      WorkflowNotFoundError,
    );
  });

  it('start --wait says it once, keeps waiting, says when a worker appears, and ends with the outcome', async () => {
    const q = uniqueTaskQueue('nw-wait');
    const child = spawn(TSX, ['bin/agentctl.ts', 'start', '--script', SCRIPT, '--wait', '--timeout', '90'], {
      cwd: ROOT,
      env: { ...process.env, ...cliEnv(q), FORCE_COLOR: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString('utf8')));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString('utf8')));
    const exited = new Promise<number | null>((res) => child.once('close', (code) => res(code)));
    let w: Awaited<ReturnType<typeof startWorker>> | undefined;
    try {
      const t0 = Date.now();
      while (!stderr.includes('no worker polls') && Date.now() - t0 < 30_000)
        await new Promise((r) => setTimeout(r, 100));
      expect(stderr).toContain(`no worker polls task queue "${q}"`);
      expect(Date.now() - t0).toBeLessThan(15_000);
      // Several more looks at the queue go by: the notice is not repeated.
      await new Promise((r) => setTimeout(r, 5_000));
      w = await startWorker(q);
      expect(await exited).toBe(0);
    } finally {
      child.kill('SIGKILL');
      await w?.stop();
    }
    expect(stderr.match(/no worker polls task queue/g)).toHaveLength(1);
    expect(stderr).toMatch(new RegExp(`a worker now polls task queue "${q}" \\(.+\\); the run goes on`));
    expect(stdout).toMatch(/state +COMPLETED/);
  });
});

describe('a worker started before its Temporal server', () => {
  let server: DevServerHandle | undefined;
  /**
   * A free port outside the kernel's ephemeral range (32768–60999): the port stays unused for the
   * seconds the worker waits, where one from `freePort()` may be handed to another process (a
   * parallel test's dev server took one once).
   */
  async function quietPort(): Promise<number> {
    for (let i = 0; i < 50; i++) {
      const port = 20_000 + Math.floor(Math.random() * 10_000);
      const free = await new Promise<boolean>((res) => {
        const srv = createServer();
        srv.once('error', () => res(false));
        srv.listen(port, '127.0.0.1', () => srv.close(() => res(true)));
      });
      if (free) return port;
    }
    return freePort();
  }
  afterEach(async () => {
    await server?.stop();
  });

  it('waits for it (saying for what), then serves: npm run worker with the server up 3 s later', async () => {
    const port = await quietPort();
    const address = `127.0.0.1:${port}`;
    const dir = mkdtempSync(join(tmpdir(), 'nw-late-'));
    const child = spawn(TSX, ['demo/worker.ts'], {
      cwd: ROOT,
      env: {
        ...process.env,
        TEMPORAL_ADDRESS: address,
        TEMPORAL_NAMESPACE: 'default',
        TEMPORAL_TASK_QUEUE: uniqueTaskQueue('late'),
        TEMPORAL_CONFIG_FILE: '/nonexistent/temporal.toml',
        LEDGER_URL: `sqlite:${join(dir, 'agent.db')}`,
        WORLD_URL: `sqlite:${join(dir, 'agent.db')}`,
        AGENT_REAPER: 'off',
        AGENT_TEMPORAL_WAIT: '60',
      },
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString('utf8')));
    child.stderr.on('data', (b: Buffer) => (out += b.toString('utf8')));
    const exited = new Promise<number | null>((res) => child.once('exit', (code) => res(code)));
    let exitCode: number | null | undefined;
    void exited.then((c) => (exitCode = c));
    try {
      const t = Date.now();
      while (!out.includes('waiting for Temporal') && exitCode === undefined && Date.now() - t < 30_000)
        await new Promise((r) => setTimeout(r, 100));
      expect(out).toContain(`worker: waiting for Temporal at ${address} (namespace default)`);
      // The server comes up a few seconds after the worker began waiting.
      await new Promise((r) => setTimeout(r, 3_000));
      expect(exitCode).toBeUndefined(); // still waiting, not exited
      server = await startDevServer({ ip: '127.0.0.1', port, dbFile: null, headless: true, quiet: true });
      const t0 = Date.now();
      while (!/worker: task queue \S+ on /.test(out) && exitCode === undefined && Date.now() - t0 < 60_000)
        await new Promise((r) => setTimeout(r, 200));
      expect(out).toMatch(new RegExp(`worker: Temporal at ${address} answers \\(namespace default\\) after`));
      expect(out).toMatch(/worker: task queue \S+ on /);
      expect(exitCode).toBeUndefined();
    } finally {
      if (child.pid && exitCode === undefined) process.kill(-child.pid, 'SIGTERM');
      await exited;
    }
  });

  it('AGENT_TEMPORAL_WAIT is whole seconds; anything else names the variable', () => {
    expect(readTemporalWaitMs({})).toBe(120_000);
    expect(readTemporalWaitMs({ AGENT_TEMPORAL_WAIT: '0' })).toBe(0);
    expect(() => readTemporalWaitMs({ AGENT_TEMPORAL_WAIT: '2m' })).toThrow(
      'AGENT_TEMPORAL_WAIT=2m: expected whole seconds >= 0',
    );
  });
});
