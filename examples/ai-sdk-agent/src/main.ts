/**
 * ai-sdk-agent: a `generateText` agent on `@temporalio/ai-sdk` with agent-loop-guard added
 * (src/workflows.ts). Starts the local model server and a worker process that kills itself
 * after its first write, restarts the worker, waits for the run, and checks what happened:
 *  - the model re-sent the write: it ran once (the worker died after it; the retry got the
 *    ledger's answer, and the re-sent call the guard's);
 *  - the model repeated a search: the guard stopped the run before the search's third run;
 *  - the run's StopReport, read back by the packaged `agentctl report`.
 * Exits 0 only when all of that is what happened.
 *
 * Environment: TEMPORAL_ADDRESS (default localhost:7233), AGENTCTL (the packaged agentctl).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { startModelServer } from './model-server';

const ROOT = resolve(__dirname, '..');
const DATA = join(ROOT, 'data');
const ADDRESS = process.env.TEMPORAL_ADDRESS ?? 'localhost:7233';
const TASK_QUEUE = `ai-sdk-agent-${process.pid}`;

let failed = false;
function check(ok: boolean, what: string): void {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failed = true;
}

const lines = (file: string): string[] =>
  existsSync(join(DATA, file)) ? readFileSync(join(DATA, file), 'utf8').split('\n').filter(Boolean) : [];

function startWorker(modelUrl: string, kill: boolean): ChildProcess {
  const tsx = process.env.TSX ?? 'tsx';
  return spawn(tsx, [join(__dirname, 'worker.ts')], {
    cwd: ROOT,
    stdio: ['ignore', 'ignore', 'inherit'],
    env: {
      ...process.env,
      TEMPORAL_ADDRESS: ADDRESS,
      MODEL_URL: modelUrl,
      DATA_DIR: DATA,
      TASK_QUEUE,
      KILL_AFTER_WRITE: kill ? '1' : '0',
    },
  });
}

async function main(): Promise<void> {
  rmSync(DATA, { recursive: true, force: true });
  mkdirSync(DATA, { recursive: true });
  const model = await startModelServer();
  const first = startWorker(model.baseURL, true);
  const firstExit = new Promise<NodeJS.Signals | number | null>((r) =>
    first.on('exit', (code, sig) => r(sig ?? code)),
  );
  let second: ChildProcess | null = null;
  try {
    const client = new Client({ connection: await Connection.connect({ address: ADDRESS }) });
    const workflowId = `ai-sdk-agent-${process.pid}-${Date.now()}`;
    const handle = await client.workflow.start('triageAgent', {
      taskQueue: TASK_QUEUE,
      workflowId,
      args: ['The disk on db-1 is full: file a ticket, then look for related ones.'],
    });
    console.log(`started ${workflowId}`);
    const died = await firstExit;
    // tsx runs the worker in a child process: its SIGKILL shows as tsx's exit status 137.
    check(
      (died === 'SIGKILL' || died === 137) && existsSync(join(DATA, 'killed')),
      `the first worker was killed after its write (${String(died)})`,
    );
    second = startWorker(model.baseURL, false);
    const out = (await handle.result()) as {
      run: { terminal_state: string; reason: string | null; cached: number; report: unknown };
      executions: Record<string, number>;
    };
    const searches = lines('search_tickets.log').length;
    const tickets = lines('file_ticket.log').length;
    console.log(`tool counters: search_tickets ${searches}, file_ticket ${tickets}`);
    check(tickets === 1, 'the write ran once (re-sent by the model, retried after the kill)');
    check(searches === 2, 'the repeated search was stopped before its third run');
    check(out.run.terminal_state === 'STOPPED_LOOP_GUARD', `the run stopped ${out.run.terminal_state}`);
    check(out.run.reason === 'same_call_repeat', `because of ${out.run.reason}`);
    check(model.requests() === 5, `the loop ended at the stop (${model.requests()} model calls)`);

    const agentctl = process.env.AGENTCTL ?? join(ROOT, 'node_modules', '.bin', 'agentctl');
    const shown = spawnSync(agentctl, ['report', workflowId], {
      encoding: 'utf8',
      env: { ...process.env, TEMPORAL_ADDRESS: ADDRESS },
    });
    console.log(`--- agentctl report ${workflowId}\n${shown.stdout}${shown.stderr}`);
    check(
      shown.status === 0 && /same_call_repeat/.test(shown.stdout),
      'agentctl report shows the StopReport',
    );
    const status = spawnSync(agentctl, ['status', workflowId, '--json'], {
      encoding: 'utf8',
      env: { ...process.env, TEMPORAL_ADDRESS: ADDRESS },
    });
    check(status.status === 0 && /STOPPED_LOOP_GUARD/.test(status.stdout), 'agentctl status reads the run');
  } finally {
    second?.kill('SIGTERM');
    if (first.exitCode === null && first.signalCode === null) first.kill('SIGKILL');
    await model.close();
  }
  if (failed) process.exit(1);
  console.log('ai-sdk-agent OK');
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
