/**
 * strands-agents: an agent on `@temporalio/strands-agents` with agent-loop-guard added
 * (src/workflows.ts). Starts the local Responses API server and a worker process that kills
 * itself after its first payment, restarts the worker, runs the scenarios and checks the tools'
 * own counters (their log files), reading and steering the runs with the packaged `agentctl`:
 *  - pay: the worker dies after the payment's side effect, the model re-sends it with a new
 *    request id: paid once;
 *  - timeouts: every attempt of a payment times out after its side effect, the model re-plans:
 *    paid once;
 *  - lookup: the model repeats a lookup forever: stopped before the tool's third run;
 *  - approval: one model response holds a payment and its twin under the same call id: the
 *    approved one runs, the twin waits for its own approval (twin counter 0) and runs once after;
 *  - stop/resume: `agentctl stop` during a slow lookup stops the run before its next call,
 *    `agentctl resume` runs it on to COMPLETED.
 * Exits 0 only when all of that is what happened.
 *
 * Environment: TEMPORAL_ADDRESS (default localhost:7233), AGENTCTL (the packaged agentctl), TSX.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { runResultOf } from 'agent-loop-guard';
import { dataConverterOf, loadPayloadCodec } from 'agent-loop-guard/worker';
import { startModelServer } from './model-server';

const ROOT = resolve(__dirname, '..');
const DATA = join(ROOT, 'data');
const ADDRESS = process.env.TEMPORAL_ADDRESS ?? 'localhost:7233';
const TASK_QUEUE = `strands-agents-${process.pid}`;
const AGENTCTL = process.env.AGENTCTL ?? join(ROOT, 'node_modules', '.bin', 'agentctl');

// One payload key for the worker, this client and every agentctl (their environment); no
// operators file: open mode, any stored approval counts (docs/approvals.md for signed ones).
process.env.AGENT_CODEC_KEYS = `example:${randomBytes(32).toString('base64')}`;
process.env.LEDGER_URL = `sqlite:${join(DATA, 'ledger.db')}`;
delete process.env.AGENT_OPERATORS_FILE;

let failed = false;
function check(ok: boolean, what: string): void {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failed = true;
}

const lines = (file: string): string[] =>
  existsSync(join(DATA, file)) ? readFileSync(join(DATA, file), 'utf8').split('\n').filter(Boolean) : [];

function agentctl(args: string[]): { code: number | null; out: string } {
  const r = spawnSync(AGENTCTL, args, {
    encoding: 'utf8',
    env: { ...process.env, TEMPORAL_ADDRESS: ADDRESS },
  });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

function startWorker(modelUrl: string, kill: boolean): ChildProcess {
  return spawn(process.env.TSX ?? 'tsx', [join(__dirname, 'worker.ts')], {
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

type Outcome = {
  run: { terminal_state: string; reason: string | null; cached: number };
  executions: Record<string, number>;
};

/** A run's outcome: a COMPLETED run returns it; a stopped run's failure carries its RunResult. */
async function outcomeOf(h: WorkflowHandle): Promise<Outcome> {
  try {
    return (await h.result()) as Outcome;
  } catch (err) {
    const run = runResultOf(err);
    if (!run) throw err;
    return { run, executions: {} } as Outcome;
  }
}

/** Polls `agentctl approvals list --run` until the run waits on a call whose args match. */
async function pendingApproval(
  runId: string,
  to: string,
): Promise<{ args: { to: string }; argsDigest: string }> {
  for (let i = 0; i < 100; i++) {
    const r = agentctl(['approvals', 'list', '--run', runId, '--json']);
    if (r.code === 0) {
      const pending = (JSON.parse(r.out) as { pending: Array<{ args: { to: string }; argsDigest: string }> })
        .pending;
      const p = pending.find((x) => x.args?.to === to);
      if (p) return p;
    }
    await new Promise((res) => setTimeout(res, 300));
  }
  throw new Error(`${runId} never waited for an approval of a payment to ${to}`);
}

const until = async (what: string, ok: () => boolean): Promise<void> => {
  for (let i = 0; i < 200 && !ok(); i++) await new Promise((r) => setTimeout(r, 100));
  if (!ok()) throw new Error(`timed out waiting for ${what}`);
};

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
    const client = new Client({
      connection: await Connection.connect({ address: ADDRESS }),
      dataConverter: dataConverterOf(loadPayloadCodec(process.env)),
    });
    const start = (name: string, model: string) =>
      client.workflow.start('paymentsAgent', {
        taskQueue: TASK_QUEUE,
        workflowId: `strands-agents-${name}-${process.pid}-${Date.now()}`,
        args: [{ prompt: 'Handle the order.', model }],
      });

    console.log(
      '--- pay: the worker is killed after the payment, the model re-sends it with a new request id',
    );
    const pay = await start('pay', 'pay-model');
    const died = await firstExit;
    // tsx runs the worker in a child process: its SIGKILL shows as tsx's exit status 137.
    check(
      (died === 'SIGKILL' || died === 137) && existsSync(join(DATA, 'killed')),
      `the first worker was killed after the payment (${String(died)})`,
    );
    second = startWorker(model.baseURL, false);
    const paid = await outcomeOf(pay);
    const a7 = lines('pay.log').filter((l) => l.startsWith('A-7 ')).length;
    check(a7 === 1, `pay counter ${a7}: paid once across the kill and the re-plan`);
    check(
      paid.run.terminal_state === 'COMPLETED' && paid.run.cached === 1,
      `the run completed, the re-sent payment answered by the guard (${paid.run.terminal_state}, cached ${paid.run.cached})`,
    );

    console.log(
      '--- timeouts: every attempt of a payment times out after its side effect, the model re-plans',
    );
    const timed = await outcomeOf(await start('timeouts', 'timeout-model'));
    const t1 = lines('pay.log').filter((l) => l.startsWith('T-1 ')).length;
    check(t1 === 1, `pay counter ${t1}: paid once across 4 timed-out attempts and the re-plan`);
    check(timed.run.terminal_state === 'COMPLETED', `the run ended ${timed.run.terminal_state}`);

    console.log('--- lookup: the model repeats a lookup on every turn');
    const lookup = await start('lookup', 'lookup-model');
    const looked = await outcomeOf(lookup);
    const reads = lines('lookup_order.log').filter((l) => l === 'A-1').length;
    check(reads === 2, `lookup counter ${reads}: stopped before the third run`);
    check(
      looked.run.terminal_state === 'STOPPED_LOOP_GUARD' && looked.run.reason === 'same_call_repeat',
      `the run stopped ${looked.run.terminal_state} ${looked.run.reason}`,
    );
    check(
      model.requests('lookup-model') === 3,
      `the agent's loop ended at the stop (${model.requests('lookup-model')} model calls)`,
    );
    const report = agentctl(['report', lookup.workflowId]);
    console.log(`--- agentctl report ${lookup.workflowId}\n${report.out}`);
    check(report.code === 0 && /same_call_repeat/.test(report.out), 'agentctl report shows the StopReport');
    const trace = agentctl(['trace', lookup.workflowId]);
    check(trace.code === 0 && /lookup_order/.test(trace.out), 'agentctl trace shows the calls');

    console.log('--- approval: a payment and its twin under the same call id, in one model response');
    const before = lines('pay.log').length;
    const h = await start('approval', 'approval-twin');
    await pendingApproval(h.workflowId, 'alice');
    check(lines('pay.log').length === before, 'the payment waits for its approval (counter unchanged)');
    const approve = (reason: string) =>
      agentctl(['approvals', 'approve', h.workflowId, '--reason', reason, '--resume']);
    const approved = approve('invoice checked');
    check(approved.code === 0, `agentctl approvals approve --resume (exit ${approved.code})`);
    if (approved.code !== 0) console.log(approved.out);
    const twin = await pendingApproval(h.workflowId, 'mallory');
    const paidTo = lines('pay.log').slice(before);
    check(paidTo.length === 1 && /alice 1000$/.test(paidTo[0] ?? ''), 'the approved payment ran once');
    check(
      !paidTo.some((l) => l.includes('mallory')),
      `twin counter 0: the twin waits for its own approval (${twin.argsDigest})`,
    );
    const own = approve('the second payee checked too');
    check(own.code === 0, `the twin's own approval (exit ${own.code})`);
    const out = await outcomeOf(h);
    const twins = lines('pay.log')
      .slice(before)
      .filter((l) => l.includes('mallory')).length;
    check(twins === 1, `twin counter ${twins} after its own approval`);
    check(out.run.terminal_state === 'COMPLETED', `the run ended ${out.run.terminal_state}`);

    console.log('--- stop/resume: agentctl stop during a slow lookup, then agentctl resume');
    const s = await start('stop', 'stop-model');
    await until('the slow lookup', () => lines('lookup_order.log').includes('HOLD'));
    const stopped = agentctl(['stop', s.workflowId, '--reason', 'runaway']);
    check(stopped.code === 0, `agentctl stop (exit ${stopped.code})`);
    if (stopped.code !== 0) console.log(stopped.out);
    for (let i = 0; i < 100 && !/STOPPED|operator_stop/.test(agentctl(['status', s.workflowId]).out); i++)
      await new Promise((r) => setTimeout(r, 200));
    const afterStop = lines('lookup_order.log').filter((l) => l.startsWith('C-')).length;
    check(afterStop === 0, `no lookup ran after the stop (counter ${afterStop})`);
    const resumed = agentctl(['resume', s.workflowId, '--reason', 'checked']);
    check(resumed.code === 0, `agentctl resume (exit ${resumed.code})`);
    if (resumed.code !== 0) console.log(resumed.out);
    const ended = await outcomeOf(s);
    check(ended.run.terminal_state === 'COMPLETED', `the resumed run ended ${ended.run.terminal_state}`);
    const c = lines('lookup_order.log').filter((l) => l.startsWith('C-')).length;
    check(c === 2, `after the resume the loop went on (${c} lookups)`);
  } finally {
    second?.kill('SIGTERM');
    if (first.exitCode === null && first.signalCode === null) first.kill('SIGKILL');
    await model.close();
  }
  if (failed) process.exit(1);
  console.log('strands-agents OK');
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
