/**
 * Issue 3 item 11, part 6: the worker PROCESS is killed (SIGKILL) in the middle of a run
 * and a new one is started; the run finishes with no duplicate write.
 *
 * Workers are the real entry point, `tsx demo/worker.ts`, as child processes with
 * TEMPORAL_ADDRESS = the shared test server, a unique TEMPORAL_TASK_QUEUE and
 * LEDGER_URL=sqlite:<tmp>/agent.db (the demo world defaults to the same file). The test
 * reads the same file for the counters and the ledger. Tool timeouts are small through
 * `RunInput.timeouts` so a lost activity is retried quickly, and the sticky queue's
 * schedule-to-start timeout (AGENT_STICKY_SCHEDULE_TO_START_MS) is 1 s so the dead worker's
 * sticky queue lets go of the run's next workflow task soon.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { LedgerState, openLedger } from '../../storage/ledger';
import { World } from '../../demo/world';
import { agentRun } from '../../workflows';
import { live, waitFor } from '../helpers/run-inputs';
import { createTestEnv, uniqueId, uniqueTaskQueue } from '../helpers/temporal-env';
import { runResult } from '../helpers/run-result';

const ROOT = resolve(__dirname, '../..');
const POLLS = 8;

/** Starts `tsx demo/worker.ts` in its own process group (so the kill reaches tsx's child too). */
function startWorker(env: Record<string, string>): {
  child: ChildProcess;
  ready: Promise<void>;
  log: () => string;
} {
  const child = spawn(join(ROOT, 'node_modules/.bin/tsx'), ['demo/worker.ts'], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const ready = new Promise<void>((res, rej) => {
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('worker: task queue')) res();
    });
    child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
    child.on('exit', (code, sig) =>
      rej(new Error(`worker exited (${code ?? sig}) before it was ready:\n${out}`)),
    );
  });
  ready.catch(() => undefined);
  return { child, ready, log: () => out };
}

function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  const exited = new Promise<void>((res) => child.once('exit', () => res()));
  process.kill(-child.pid!, 'SIGKILL'); // the group of the process this test started
  return exited;
}

describe('worker process killed mid-run', () => {
  let env: TestWorkflowEnvironment;
  const children: ChildProcess[] = [];
  beforeAll(async () => {
    env = await createTestEnv();
  });
  afterAll(async () => {
    for (const c of children) await kill(c);
    await env?.teardown();
  });

  it('a new worker finishes the run; every write ran once, one SUCCEEDED ledger record per key', async () => {
    const address = process.env.TEMPORAL_TEST_ADDRESS;
    if (!address) throw new Error('needs the shared dev server (jest globalSetup)');
    const dbUrl = `sqlite:${join(mkdtempSync(join(tmpdir(), 'alg-crash-')), 'agent.db')}`;
    const taskQueue = uniqueTaskQueue('crash');
    const workerEnv = {
      TEMPORAL_ADDRESS: address,
      TEMPORAL_NAMESPACE: 'default',
      TEMPORAL_TASK_QUEUE: taskQueue,
      LEDGER_URL: dbUrl,
      // The killed worker's sticky queue holds the run's next workflow task this long before
      // the new worker may take it (SDK default 10 s).
      AGENT_STICKY_SCHEDULE_TO_START_MS: '1000',
    };

    const w1 = startWorker(workerEnv);
    children.push(w1.child);
    await w1.ready;

    const workflowId = uniqueId('crash');
    const handle = await env.client.workflow.start(agentRun, {
      taskQueue,
      workflowId,
      args: [
        live(
          [
            { tool: 'write_record', args: { id: 'crash-a', body: 'first' } },
            { tool: 'start_job', args: { name: 'crash-job', pollsNeeded: POLLS } },
            ...Array.from({ length: POLLS }, () => ({ tool: 'poll_job', args: { jobId: 'crash-job' } })),
            { tool: 'write_record', args: { id: 'crash-b', body: 'second' } },
            {
              tool: 'send_notification',
              args: { channel: 'ops', incident: 'crash', type: 'resolved', message: 'done' },
            },
            { tool: 'complete_task', args: { summary: 'survived a crash' } },
          ],
          { timeouts: { plannerStartToCloseMs: 5000, toolStartToCloseMs: 5000, toolHeartbeatMs: 2000 } },
        ),
      ],
    });

    const world = World.open(dbUrl);
    const ledger = await openLedger(dbUrl);
    try {
      // Kill the worker while the job is being polled (after the first write, before the second).
      await waitFor(
        () => world.counters(workflowId),
        (c) => (c.poll_job ?? 0) >= 2,
        30_000,
      );
      await kill(w1.child);
      const atKill = await world.counters(workflowId);
      expect(atKill.write_record).toBe(1);
      expect(atKill.send_notification).toBeUndefined();

      const w2 = startWorker(workerEnv);
      children.push(w2.child);
      await w2.ready;

      const r = await runResult(handle);
      expect(r.terminal_state).toBe('COMPLETED');
      expect(r.summary).toBe('survived a crash');

      const counts = await world.counters(workflowId);
      // A read is not behind the ledger: the poll in flight when the worker died (its count
      // committed, its completion never reported) may run once more. Writes run exactly once.
      expect(counts.poll_job).toBeGreaterThanOrEqual(POLLS);
      expect(counts.poll_job).toBeLessThanOrEqual(POLLS + 1);
      expect({ ...counts, poll_job: POLLS }).toEqual({
        write_record: 2, // crash-a and crash-b, once each
        start_job: 1,
        poll_job: POLLS,
        send_notification: 1,
        complete_task: 1,
      });
      const recs = (await ledger.list({ limit: 1000 })).filter((x) => x.runId === workflowId);
      const keys = recs.map((x) => x.key);
      expect(new Set(keys).size).toBe(keys.length);
      expect(recs.map((x) => [x.tool, x.state]).sort()).toEqual([
        ['send_notification', LedgerState.SUCCEEDED],
        ['start_job', LedgerState.SUCCEEDED],
        ['write_record', LedgerState.SUCCEEDED],
        ['write_record', LedgerState.SUCCEEDED],
      ]);
      // The business rows exist once each, too.
      const rows = await world.tx.all<{ id: string; version: number }>(
        "SELECT id, version FROM world_records WHERE id IN ('crash-a', 'crash-b') ORDER BY id",
      );
      expect(rows).toEqual([
        { id: 'crash-a', version: 1 },
        { id: 'crash-b', version: 1 },
      ]);
    } finally {
      world.close();
      await ledger.close();
    }
  }, 90_000);
});
