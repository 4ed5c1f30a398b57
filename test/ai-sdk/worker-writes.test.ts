/**
 * Issue 37: the worker side of an AI SDK agent's guarded write at parity with agentRun's tools,
 * against the real dev server, real worker processes and a real SQLite ledger. A worker set up
 * as docs/ai-sdk.md shows it (test/ai-sdk/fixtures/write-worker.ts) is SIGKILLed in the middle
 * of a write — after its side effect, before the ledger commit. With a `reconcile` probe the
 * next worker settles the write by asking the probe (the same `executeOnce` as agentRun's
 * runTool): the write's own counter stays 1 and the run completes, no person needed. Without
 * one the run ends NEEDS_HUMAN `outcome_unknown`, counter still 1. A write wrapped twice (by
 * `ledgerWrites` and by the plugin) is refused when the worker is built, naming it, and nothing runs.
 * A stop, resume or approval sent to a run of no guard engine is refused naming its workflow
 * type (agentctl exit 2), and the run is untouched.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { bundleAiSdkWorkflows } from './bundle';
import { traceQuery, type RunResult } from '../../common/contracts';
import { AgentLoopGuardPlugin, ledgerWrites } from '../../ai-sdk/worker';
import { NotAGuardedRunError, resumeAgentRun, stopAgentRun } from '../../client/api';
import { agentctl } from '../client/cli-helpers';
import { LedgerState, openLedger, type Ledger } from '../../storage/ledger';
import { ROOT } from '../client/cli-helpers';
import { startOpenAIServer, type OpenAIServer } from '../../testing/openai-server';
import { createTestEnv, testDataConverter, uniqueId, uniqueTaskQueue } from '../helpers/temporal-env';

const TSX = join(ROOT, 'node_modules', '.bin', 'tsx');

describe('ledgerWrites on an AI SDK worker: a probe settles a write whose worker died mid-write', () => {
  let env: TestWorkflowEnvironment;
  let dir: string;
  let bundlePath: string;
  const servers: OpenAIServer[] = [];
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    env = await createTestEnv();
    dir = mkdtempSync(join(tmpdir(), 'ai-sdk-writes-'));
    bundlePath = join(dir, 'bundle.js');
    writeFileSync(
      bundlePath,
      (await bundleAiSdkWorkflows(require.resolve('./workflows/guarded-agent'))).code,
    );
  });
  afterAll(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    for (const s of servers) await s.close();
    await env?.teardown();
    rmSync(dir, { recursive: true, force: true });
  });

  function worker(vars: Record<string, string>): { child: ChildProcess; exited: Promise<string> } {
    const child = spawn(TSX, [join(__dirname, 'fixtures', 'write-worker.ts')], {
      cwd: ROOT,
      stdio: ['ignore', 'ignore', 'inherit'],
      env: { ...process.env, TEMPORAL_ADDRESS: process.env.TEMPORAL_TEST_ADDRESS as string, ...vars },
    });
    children.push(child);
    const exited = new Promise<string>((r) => child.on('exit', (code, sig) => r(String(sig ?? code))));
    return { child, exited };
  }

  async function crashMidWrite(probe: boolean) {
    const server = await startOpenAIServer([
      {
        tool_calls: [{ name: 'file_ticket', arguments: JSON.stringify({ title: 'disk full on db-1' }) }],
        usage: { prompt_tokens: 100, completion_tokens: 10 },
      },
      { content: 'filed' },
    ]);
    servers.push(server);
    const tag = probe ? 'probe' : 'noprobe';
    const ledgerUrl = `sqlite:${join(dir, `${tag}.db`)}`;
    const log = join(dir, `${tag}.log`);
    const vars = {
      TASK_QUEUE: uniqueTaskQueue(`ai-sdk-writes-${tag}`),
      MODEL_URL: server.baseURL,
      LEDGER_URL: ledgerUrl,
      WRITES_LOG: log,
      BUNDLE: bundlePath,
      PROBE: probe ? '1' : '0',
    };
    const first = worker({ ...vars, KILL_MID_WRITE: '1' });
    const handle = await env.client.workflow.start('guardedAgent', {
      taskQueue: vars.TASK_QUEUE,
      workflowId: uniqueId(`ai-sdk-writes-${tag}`),
      args: [{ prompt: 'File a ticket for the full disk.', writeHeartbeatTimeoutMs: 2_000 }],
    });
    // tsx runs the worker in a child process: its SIGKILL shows as tsx's exit status 137.
    expect(['SIGKILL', '137']).toContain(await first.exited);
    const second = worker({ ...vars, KILL_MID_WRITE: '0' });
    try {
      const out = (await handle.result()) as { run: RunResult; executions: Record<string, number> };
      const trace = (await handle.query(traceQuery)).records;
      const writes = existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean) : [];
      const ledger: Ledger = await openLedger(ledgerUrl);
      try {
        return { out, trace, writes, record: await ledger.get(writes[0] ?? 'none') };
      } finally {
        await ledger.close();
      }
    } finally {
      second.child.kill('SIGTERM');
      await second.exited;
    }
  }

  it('with a reconcile probe: settled by the probe, the write ran once, the run completes', async () => {
    const { out, trace, writes, record } = await crashMidWrite(true);
    expect(writes).toEqual(['ticket:disk full on db-1']);
    expect(record).toMatchObject({ state: LedgerState.SUCCEEDED, result: { id: 'INC-7', probed: true } });
    expect(out.run.terminal_state).toBe('COMPLETED');
    expect(out.run.reason).not.toBe('outcome_unknown');
    // Settled by the probe, not run now: its own word in the counters and the trace.
    expect(out.run).toMatchObject({ executed: 0, cached: 0, reconciled: 1 });
    const after = trace.filter((r) => r.phase === 'after' && r.tool === 'file_ticket');
    expect(after.map((r) => [r.result_kind, r.via])).toEqual([['SUCCESS', 'reconciled']]);
  });

  it('without one: NEEDS_HUMAN outcome_unknown naming the fix, the write still ran once', async () => {
    const { out, writes, record } = await crashMidWrite(false);
    expect(writes).toEqual(['ticket:disk full on db-1']);
    expect(record).toMatchObject({ state: LedgerState.UNKNOWN });
    expect(out.run).toMatchObject({ terminal_state: 'NEEDS_HUMAN', reason: 'outcome_unknown' });
  });

  it('a write wrapped twice is refused when the worker is built, naming it; nothing runs', async () => {
    const ledger = await openLedger(`sqlite:${join(dir, 'twice.db')}`);
    try {
      let calls = 0;
      const fileTicket = async (i: { title: string }) => {
        calls += 1;
        return { id: i.title };
      };
      const once = ledgerWrites(ledger, { fileTicket });
      expect(() => ledgerWrites(ledger, { fileTicket: once.fileTicket as never })).toThrow(
        /fileTicket is already wrapped by ledgerWrites/,
      );
      expect(() => ledgerWrites(ledger, { fileTicket: { execute: once.fileTicket as never } })).toThrow(
        TypeError,
      );
      // By hand and through the plugin: Worker.create refuses before anything polls.
      await expect(
        Worker.create({
          connection: env.nativeConnection,
          namespace: 'default',
          taskQueue: uniqueTaskQueue('ai-sdk-twice'),
          workflowBundle: { codePath: bundlePath },
          activities: { ...once },
          plugins: [
            new AgentLoopGuardPlugin({ aiSdk: { ledger, writes: { fileTicket } }, searchAttributes: 'skip' }),
          ],
        }),
      ).rejects.toThrow(
        /activity fileTicket is also in the worker's own activities — it is wrapped by ledgerWrites there/,
      );
      expect(() => new AgentLoopGuardPlugin({ aiSdk: { ledger: {} as Ledger } })).toThrow(
        /aiSdk.ledger must be an open ledger/,
      );
      expect(calls).toBe(0);
    } finally {
      await ledger.close();
    }
  });

  it('a stop, resume or approval for a run of no guard engine: a clear error naming its type, nothing sent', async () => {
    const taskQueue = uniqueTaskQueue('ai-sdk-unguarded');
    const w = await Worker.create({
      connection: env.nativeConnection,
      namespace: 'default',
      taskQueue,
      workflowBundle: { codePath: bundlePath },
      dataConverter: testDataConverter(),
    });
    await w.runUntil(async () => {
      const h = await env.client.workflow.start('unguardedAgent', {
        taskQueue,
        workflowId: uniqueId('ai-sdk-unguarded'),
      });
      const cli = {
        TEMPORAL_ADDRESS: process.env.TEMPORAL_TEST_ADDRESS as string,
        TEMPORAL_NAMESPACE: 'default',
        LEDGER_URL: `sqlite:${join(dir, 'unguarded.db')}`,
      };
      const stop = await agentctl(['stop', h.workflowId], cli);
      expect(stop.code).toBe(2);
      expect(stop.stderr).toMatch(
        /is a unguardedAgent workflow that answers none of agent-loop-guard's handlers/,
      );
      expect(stop.stderr).toMatch(/no stop was sent/);
      const approve = await agentctl(['approvals', 'approve', h.workflowId, '--reason', 'ok'], cli);
      expect(approve.code).toBe(2);
      expect(approve.stderr).toMatch(/its engine is unknown, so nothing was approved/);
      await expect(resumeAgentRun(env.client, h.workflowId, { actor: 'alice' })).rejects.toBeInstanceOf(
        NotAGuardedRunError,
      );
      await expect(stopAgentRun(env.client, h.workflowId, { actor: 'alice' })).rejects.toThrow(
        /unguardedAgent workflow/,
      );
      // Untouched: no signal or update reached it.
      const events = (await h.fetchHistory()).events ?? [];
      expect(events.filter((e) => e.workflowExecutionSignaledEventAttributes)).toHaveLength(0);
      expect((await h.describe()).status.name).toBe('RUNNING');
      await h.terminate('test done');
    });
  });
});
