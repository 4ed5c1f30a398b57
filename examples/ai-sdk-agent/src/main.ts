/**
 * ai-sdk-agent: a `generateText` agent on `@temporalio/ai-sdk` with agent-loop-guard added
 * (src/workflows.ts), its worker set up as docs/ai-sdk.md shows it (src/worker.ts). Starts the
 * local model server and a worker process that kills itself in the middle of its first write,
 * restarts the worker, waits for the run, and checks what happened:
 *  - the worker died after the write's side effect, before the ledger commit: the next worker's
 *    ledger asked the write's probe and settled it (the ticket counter stays 1, no NEEDS_HUMAN),
 *    and the model's re-sent write got the guard's answer;
 *  - the model repeated a search: the guard stopped the run before the search's third run;
 *  - the run's StopReport, read back by the packaged `agentctl report`;
 *  - a second run stopped by `npx agentctl stop` in the middle of a step (its next search does
 *    not run) and let go on by `npx agentctl resume`, each answered on its merits.
 * Exits 0 only when all of that is what happened.
 *
 * Environment: TEMPORAL_ADDRESS (default localhost:7233), AGENTCTL (the packaged agentctl).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import { AgentLoopGuardPlugin, runResultOf } from 'agent-loop-guard';
import { loadPayloadCodec } from 'agent-loop-guard/worker';
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
      KILL_MID_WRITE: kill ? '1' : '0',
    },
  });
}

/** `npx agentctl …` run asynchronously (the model server lives in this process). */
function npxAgentctl(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const bin = process.env.AGENTCTL ?? join(ROOT, 'node_modules', '.bin', 'agentctl');
  return new Promise((done) => {
    const child = spawn(bin, args, { cwd: ROOT, env: { ...process.env, TEMPORAL_ADDRESS: ADDRESS } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    child.on('close', (code) => done({ code, stdout, stderr }));
  });
}

async function until(what: string, ok: () => boolean | Promise<boolean>, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

async function main(): Promise<void> {
  // The payload key every process here shares: this example runs on a local dev server, where
  // the default key file is created on first use (as agentctl does there); the worker and the
  // clients' plugin then read it.
  console.log(`payload codec: ${loadPayloadCodec(process.env, { createKeyFile: true }).source}`);
  rmSync(DATA, { recursive: true, force: true });
  mkdirSync(DATA, { recursive: true });
  const model = await startModelServer();
  const first = startWorker(model.baseURL, true);
  const firstExit = new Promise<NodeJS.Signals | number | null>((r) =>
    first.on('exit', (code, sig) => r(sig ?? code)),
  );
  let second: ChildProcess | null = null;
  try {
    // The client starts runs with the same codec as the worker: the same plugin.
    const client = new Client({
      connection: await Connection.connect({ address: ADDRESS }),
      plugins: [new AgentLoopGuardPlugin()],
    });
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
      `the first worker was killed in the middle of its write (${String(died)})`,
    );
    second = startWorker(model.baseURL, false);
    // The run stopped: it closed as a failed workflow whose typed failure carries its RunResult.
    const out = {
      run: runResultOf(
        await handle.result().then(
          () => null,
          (err: unknown) => err,
        ),
      ),
    };
    check(out.run !== null, 'the stopped run closed FAILED, its RunResult in the failure (runResultOf)');
    if (out.run === null) throw new Error('no RunResult');
    const searches = lines('search_tickets.log').length;
    const tickets = lines('file_ticket.log').length;
    console.log(`tool counters: search_tickets ${searches}, file_ticket ${tickets}`);
    check(
      tickets === 1,
      'the write ran once (killed mid-write and settled by its probe; re-sent by the model)',
    );
    check(
      out.run.terminal_state !== 'NEEDS_HUMAN' && out.run.reason !== 'outcome_unknown',
      'the write killed mid-write was settled without a person (no NEEDS_HUMAN outcome_unknown)',
    );
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

    // A second run: stopped by `npx agentctl stop` while its first search runs, resumed by `resume`.
    const holdFile = join(DATA, 'hold');
    writeFileSync(holdFile, 'the search waits while this file exists\n');
    const held = await client.workflow.start('triageAgent', {
      taskQueue: TASK_QUEUE,
      workflowId: `${workflowId}-stop`,
      args: ['[hold] Look for tickets on db-2 and db-3.', 60_000],
    });
    await until('the held search', () => lines('search_tickets.log').includes('hold:db-2'));
    const stop = await npxAgentctl(['stop', held.workflowId, '--reason', 'runaway', '--json']);
    console.log(`--- agentctl stop ${held.workflowId}\n${stop.stdout}${stop.stderr}`);
    check(
      stop.code === 0 && /"accepted":\s*true/.test(stop.stdout),
      'npx agentctl stop: ACCEPTED by the worker',
    );
    rmSync(holdFile);
    await until('the run to wait for a resume', async () => {
      const s = await npxAgentctl(['status', held.workflowId, '--json']);
      return /"waitingForResume":\s*true/.test(s.stdout);
    });
    check(!lines('search_tickets.log').includes('db-3'), "the stopped step's next search did not run");
    const resume = await npxAgentctl(['resume', held.workflowId]);
    console.log(`--- agentctl resume ${held.workflowId}\n${resume.stdout}${resume.stderr}`);
    check(resume.code === 0 && /ACCEPTED/.test(resume.stdout), 'npx agentctl resume: ACCEPTED by the worker');
    const after = (await held.result()) as { run: { terminal_state: string }; rounds: number };
    check(
      after.run.terminal_state === 'COMPLETED' && after.rounds === 2,
      `the resumed run completed (${after.run.terminal_state}, ${after.rounds} rounds)`,
    );
    check(
      !lines('search_tickets.log').includes('db-3'),
      'the stopped search was not run after the resume either',
    );
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
