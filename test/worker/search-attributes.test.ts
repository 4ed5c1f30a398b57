/**
 * Issue #8: a worker on a namespace without the search attributes must register them or exit
 * with a message naming them, instead of polling while every run fails its workflow task with
 * BadSearchAttributes.
 *
 * Runs on the shared dev server. The dev server keeps custom search attributes per namespace
 * (SQLite visibility: `--search-attribute` at start only fills the start namespace), so each
 * test registers a NEW namespace, which starts with no custom search attributes at all
 * (asserted, so these tests cannot pass vacuously).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { SEARCH_ATTRIBUTES } from '../../common/search-attributes';
import { agentRun } from '../../workflows';
import { createAgentWorker } from '../../worker/create-worker';
import {
  createCommands,
  ensureSearchAttributes,
  SearchAttributesError,
} from '../../worker/search-attributes';
import { workflowBundle } from '../helpers/run-harness';
import { fixture, waitFor } from '../helpers/run-inputs';
import { createTestEnv, testDataConverter, uniqueId, uniqueTaskQueue } from '../helpers/temporal-env';
import { openDemoWorkerDeps } from '../../demo/deps';
import { runResult } from '../helpers/run-result';

const ROOT = resolve(__dirname, '../..');
const NAMES = Object.keys(SEARCH_ATTRIBUTES);
// IndexedValueType enum values (temporal/api/enums/v1/common.proto).
const KEYWORD = 2;
const INT = 3;
// WorkflowTaskFailedCause (temporal/api/enums/v1/failed_cause.proto).
const WORKFLOW_TASK_FAILED_CAUSE_BAD_SEARCH_ATTRIBUTES = 23;

let env: TestWorkflowEnvironment;
beforeAll(async () => {
  env = await createTestEnv();
});
afterAll(async () => {
  await env?.teardown();
});

const customAttributes = async (namespace: string) =>
  (await env.connection.operatorService.listSearchAttributes({ namespace })).customAttributes ?? {};

/** A new namespace, usable, with no custom search attributes. */
async function freshNamespace(): Promise<string> {
  const namespace = uniqueId('sa');
  await env.connection.workflowService.registerNamespace({
    namespace,
    workflowExecutionRetentionPeriod: msToTs('1 day'),
  });
  await waitFor(
    () => env.connection.workflowService.describeNamespace({ namespace }),
    () => true,
  );
  expect(await customAttributes(namespace)).toEqual({});
  return namespace;
}

const tempDbUrl = () => `sqlite:${join(mkdtempSync(join(tmpdir(), 'alg-sa-')), 'agent.db')}`;

/** The environment of a worker subprocess: only what we set, no developer TEMPORAL_* settings. */
function workerEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith('TEMPORAL_') && !k.startsWith('AGENT_')),
  );
  return { ...base, TEMPORAL_CONFIG_FILE: '/nonexistent/temporal.toml', ...extra };
}

interface Spawned {
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null; ms: number }>;
  stdout: () => string;
  stderr: () => string;
  kill(signal?: NodeJS.Signals): void;
}

/** `npm run -s worker` in its own process group (so kill() reaches tsx's node child). */
function spawnWorker(extra: Record<string, string>): Spawned {
  const t0 = Date.now();
  const child = spawn('npm', ['run', '-s', 'worker'], {
    cwd: ROOT,
    env: workerEnv(extra),
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (b: Buffer) => (out += b.toString('utf8')));
  child.stderr.on('data', (b: Buffer) => (err += b.toString('utf8')));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null; ms: number }>((res) =>
    child.once('exit', (code, signal) => res({ code, signal, ms: Date.now() - t0 })),
  );
  return {
    exit,
    stdout: () => out,
    stderr: () => err,
    kill(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null && child.pid) {
        try {
          process.kill(-child.pid, signal);
        } catch {
          // already gone
        }
      }
    },
  };
}

/** Resolves with `p`, or rejects after `ms` (then `onTimeout` runs). */
async function within<T>(p: Promise<T>, ms: number, onTimeout: () => void): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_r, rej) => {
        timer = setTimeout(() => {
          onTimeout();
          rej(new Error(`did not finish within ${ms} ms`));
        }, ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

describe('ensureSearchAttributes', () => {
  it('registers the missing attributes with their types, and is a no-op the second time', async () => {
    const ns = await freshNamespace();
    expect(await ensureSearchAttributes(env.connection, ns)).toEqual({ registered: NAMES });
    expect(await customAttributes(ns)).toEqual({
      AgentState: KEYWORD,
      AgentGuardReason: KEYWORD,
      AgentSteps: INT,
      AgentRootRun: KEYWORD,
    });
    // Through a NativeConnection too (what the worker holds).
    expect(await ensureSearchAttributes(env.nativeConnection, ns)).toEqual({ registered: [] });
  });

  it('registers only what is missing', async () => {
    const ns = await freshNamespace();
    await env.connection.operatorService.addSearchAttributes({
      namespace: ns,
      searchAttributes: { AgentState: KEYWORD },
    });
    expect(await ensureSearchAttributes(env.nativeConnection, ns)).toEqual({
      registered: ['AgentGuardReason', 'AgentSteps', 'AgentRootRun'],
    });
  });

  it('with register off, throws naming every missing attribute and the create commands, and registers nothing', async () => {
    const ns = await freshNamespace();
    const err = await ensureSearchAttributes(env.nativeConnection, ns, { register: false }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(SearchAttributesError);
    const e = err as SearchAttributesError;
    expect(e.missing).toEqual(NAMES);
    expect(e.namespace).toBe(ns);
    for (const name of NAMES) expect(e.message).toContain(name);
    for (const cmd of createCommands(ns)) expect(e.message).toContain(cmd);
    expect(e.message).toContain(
      `temporal operator search-attribute create --namespace ${ns} --name AgentState --type Keyword`,
    );
    expect(e.message).toContain(
      `temporal operator search-attribute create --namespace ${ns} --name AgentSteps --type Int`,
    );
    expect(e.message).toContain('AGENT_REGISTER_SEARCH_ATTRIBUTES=false');
    expect(await customAttributes(ns)).toEqual({});
  });

  it('an attribute registered with the wrong type is an error, registration on or off', async () => {
    const ns = await freshNamespace();
    await env.connection.operatorService.addSearchAttributes({
      namespace: ns,
      searchAttributes: { AgentSteps: KEYWORD },
    });
    for (const register of [true, false]) {
      const err = await ensureSearchAttributes(env.nativeConnection, ns, { register }).then(
        () => null,
        (e: unknown) => e as SearchAttributesError,
      );
      expect(err).toBeInstanceOf(SearchAttributesError);
      expect(err!.wrongType).toEqual([{ name: 'AgentSteps', expected: 'Int', actual: 'Keyword' }]);
      expect(err!.message).toMatch(/AgentSteps is Keyword, expected Int/);
      expect(err!.message).toContain(
        `temporal operator search-attribute remove --namespace ${ns} --name AgentSteps`,
      );
      expect(err!.message).toContain(
        `temporal operator search-attribute create --namespace ${ns} --name AgentSteps --type Int`,
      );
    }
    // The worker did not "fix" anything: still the wrong type, nothing else added.
    expect(await customAttributes(ns)).toEqual({ AgentSteps: KEYWORD });
  });

  it('a refused registration says so and gives the commands', async () => {
    // The dev server's SQL visibility has 3 Int columns per namespace: fill them, and the
    // server really refuses AgentSteps (INVALID_ARGUMENT).
    const ns = await freshNamespace();
    await env.connection.operatorService.addSearchAttributes({
      namespace: ns,
      searchAttributes: { OtherInt1: INT, OtherInt2: INT, OtherInt3: INT },
    });
    const err = await ensureSearchAttributes(env.nativeConnection, ns).then(
      () => null,
      (e: unknown) => e as SearchAttributesError,
    );
    expect(err).toBeInstanceOf(SearchAttributesError);
    expect(err!.message).toMatch(/tried to register them and the server refused/);
    for (const cmd of createCommands(ns)) expect(err!.message).toContain(cmd);
  });

  it('an unknown namespace is reported as such', async () => {
    await expect(ensureSearchAttributes(env.nativeConnection, uniqueId('no-such-ns'))).rejects.toThrow(
      /does not exist.*temporal operator namespace create/s,
    );
  });
});

describe('createAgentWorker on a namespace without the search attributes', () => {
  it('registers them, and a run completes and is findable by AgentState', async () => {
    const ns = await freshNamespace();
    const dbUrl = tempDbUrl();
    const deps = await openDemoWorkerDeps({ ledgerUrl: dbUrl, worldUrl: dbUrl });
    const taskQueue = uniqueTaskQueue('sa');
    const worker = await createAgentWorker({
      connection: env.nativeConnection,
      namespace: ns,
      taskQueue,
      deps,
      workflowBundle: await workflowBundle(),
    });
    expect(Object.keys(await customAttributes(ns)).sort()).toEqual([...NAMES].sort());
    const client = new Client({
      connection: env.connection,
      namespace: ns,
      dataConverter: testDataConverter(),
    });
    const workflowId = uniqueId('sa-run');
    try {
      await worker.runUntil(async () => {
        const handle = await client.workflow.start(agentRun, {
          taskQueue,
          workflowId,
          args: [fixture([{ tool: 'a', result: { kind: 'SUCCESS', terminal: true } }])],
        });
        const result = await within(runResult(handle), 30_000, () => undefined);
        expect(result.terminal_state).toBe('COMPLETED');
      });
      const found = await waitFor(
        async () => {
          const ids: string[] = [];
          for await (const w of client.workflow.list({ query: 'AgentState = "COMPLETED"' }))
            ids.push(w.workflowId);
          return ids;
        },
        (ids) => ids.includes(workflowId),
      );
      expect(found).toEqual([workflowId]);
    } finally {
      await deps.close();
    }
  });

  it("control: with searchAttributes: 'skip' (no check, as before the fix) a run fails with BadSearchAttributes", async () => {
    // Shows that a fresh namespace reproduces issue #8, so the test above can fail.
    const ns = await freshNamespace();
    const dbUrl = tempDbUrl();
    const deps = await openDemoWorkerDeps({ ledgerUrl: dbUrl, worldUrl: dbUrl });
    const taskQueue = uniqueTaskQueue('sa');
    const worker = await createAgentWorker({
      connection: env.nativeConnection,
      namespace: ns,
      taskQueue,
      deps,
      workflowBundle: await workflowBundle(),
      searchAttributes: 'skip',
    });
    const client = new Client({
      connection: env.connection,
      namespace: ns,
      dataConverter: testDataConverter(),
    });
    try {
      const handle = await worker.runUntil(async () => {
        const h = await client.workflow.start(agentRun, {
          taskQueue,
          workflowId: uniqueId('sa-run'),
          args: [fixture([{ tool: 'a', result: { kind: 'SUCCESS', terminal: true } }])],
        });
        await waitFor(
          async () => (await h.fetchHistory()).events ?? [],
          (events) =>
            events.some(
              (e) =>
                e.workflowTaskFailedEventAttributes?.cause ===
                WORKFLOW_TASK_FAILED_CAUSE_BAD_SEARCH_ATTRIBUTES,
            ),
        );
        return h;
      });
      await handle.terminate('control test');
    } finally {
      await deps.close();
    }
  });

  it("with searchAttributes: 'check', throws before creating a worker", async () => {
    const ns = await freshNamespace();
    const dbUrl = tempDbUrl();
    const deps = await openDemoWorkerDeps({ ledgerUrl: dbUrl, worldUrl: dbUrl });
    try {
      await expect(
        createAgentWorker({
          connection: env.nativeConnection,
          namespace: ns,
          taskQueue: uniqueTaskQueue('sa'),
          deps,
          workflowBundle: await workflowBundle(),
          searchAttributes: 'check',
        }),
      ).rejects.toThrow(SearchAttributesError);
    } finally {
      await deps.close();
    }
  });
});

describe('npm run worker on a namespace without the search attributes', () => {
  it('AGENT_REGISTER_SEARCH_ATTRIBUTES=false: exits 1 within seconds, naming them and the commands', async () => {
    const ns = await freshNamespace();
    const dbFile = join(mkdtempSync(join(tmpdir(), 'alg-sa-')), 'agent.db');
    const w = spawnWorker({
      TEMPORAL_ADDRESS: env.address,
      TEMPORAL_NAMESPACE: ns,
      TEMPORAL_TASK_QUEUE: uniqueTaskQueue('sa-main'),
      AGENT_REGISTER_SEARCH_ATTRIBUTES: 'false',
      LEDGER_URL: `sqlite:${dbFile}`,
    });
    const exit = await within(w.exit, 20_000, () => w.kill()).catch((e: Error) => {
      throw new Error(`${e.message}\nstdout: ${w.stdout()}\nstderr: ${w.stderr()}`);
    });
    expect(exit.code).toBe(1);
    const stderr = w.stderr();
    for (const name of NAMES) expect(stderr).toContain(name);
    for (const cmd of createCommands(ns)) expect(stderr).toContain(cmd);
    expect(w.stdout()).not.toContain('worker: task queue');
    // It stopped before opening the ledger.
    expect(existsSync(dbFile)).toBe(false);
    expect(await customAttributes(ns)).toEqual({});
  });

  it('by default registers them and starts polling', async () => {
    const ns = await freshNamespace();
    const dbFile = join(mkdtempSync(join(tmpdir(), 'alg-sa-')), 'agent.db');
    const w = spawnWorker({
      TEMPORAL_ADDRESS: env.address,
      TEMPORAL_NAMESPACE: ns,
      TEMPORAL_TASK_QUEUE: uniqueTaskQueue('sa-main'),
      LEDGER_URL: `sqlite:${dbFile}`,
    });
    try {
      await waitFor(
        async () => w.stdout(),
        (out) => out.includes('worker: task queue'),
        90_000,
      ).catch((e: Error) => {
        throw new Error(`${e.message}\nstderr: ${w.stderr()}`);
      });
      expect(w.stdout()).toContain(
        `worker: registered search attributes ${NAMES.join(', ')} in namespace ${ns}`,
      );
      expect(await customAttributes(ns)).toEqual({
        AgentState: KEYWORD,
        AgentGuardReason: KEYWORD,
        AgentSteps: INT,
        AgentRootRun: KEYWORD,
      });
    } finally {
      w.kill();
      await within(w.exit, 15_000, () => w.kill('SIGKILL')).catch(() => undefined);
    }
  });
});
