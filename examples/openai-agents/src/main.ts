/**
 * openai-agents: an agent on `@temporalio/openai-agents` with agent-loop-guard added
 * (src/workflows.ts). Starts the local Responses API server and a worker process that kills
 * itself after its first payment, restarts the worker, runs the scenarios and checks the tools'
 * own counters (their log files), reading the runs back with the packaged `agentctl`:
 *  - pay: the worker dies after the payment's side effect, the model re-sends it with a new
 *    request id: paid once;
 *  - lookup: the model repeats a lookup: stopped before the tool's third run (STOPPED_LOOP_GUARD);
 *  - approval: a payment approved with `agentctl approvals approve --resume`, then a twin
 *    (another payee and amount) under the approved call id, and in a second run under a new
 *    call id: each twin waits for its own approval (twin counter 0) and runs once after it;
 *  - spend: the tenant's cap (AGENT_SPEND_LIMITS) has no room for a model call: the run stops
 *    NEEDS_HUMAN spend_limit, the model is never asked, `agentctl spend status` shows the refusal.
 * Exits 0 only when all of that is what happened.
 *
 * Environment: TEMPORAL_ADDRESS (default localhost:7233), AGENTCTL (the packaged agentctl), TSX.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, openSync, readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { runResultOf } from 'agent-loop-guard';
import { dataConverterOf, loadPayloadCodec } from 'agent-loop-guard/worker';
import { startModelServer } from './model-server';

const ROOT = resolve(__dirname, '..');
const DATA = join(ROOT, 'data');
const ADDRESS = process.env.TEMPORAL_ADDRESS ?? 'localhost:7233';
const TASK_QUEUE = `openai-agents-${process.pid}`;
const AGENTCTL = process.env.AGENTCTL ?? join(ROOT, 'node_modules', '.bin', 'agentctl');

// One payload key for the worker, this client and every agentctl (their environment); no
// operators file: open mode, any stored approval counts (docs/approvals.md for signed ones).
process.env.AGENT_CODEC_KEYS = `example:${randomBytes(32).toString('base64')}`;
process.env.LEDGER_URL = `sqlite:${join(DATA, 'ledger.db')}`;
// The spend scenario's tenant: a cap below any model call's worst case (the workers read it).
process.env.AGENT_SPEND_LIMITS = JSON.stringify({
  'example-tenant': { maxUsd: 0.0001, windowMs: 3_600_000 },
});
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
    // stdout kept: what the SDK's default trace exporter prints there is checked below.
    stdio: ['ignore', openSync(join(DATA, 'worker.out'), 'a'), 'inherit'],
    env: {
      ...process.env,
      TEMPORAL_ADDRESS: ADDRESS,
      MODEL_URL: modelUrl,
      DATA_DIR: DATA,
      TASK_QUEUE,
      KILL_AFTER_WRITE: kill ? '1' : '0',
      // A deployed worker: the SDK's trace exporter is on (agents-core turns it off under NODE_ENV=test, which .ci/run sets).
      NODE_ENV: 'production',
    },
  });
}

type Outcome = {
  run: { terminal_state: string; reason: string | null; cached: number };
  executions: Record<string, number>;
};

/**
 * A run's outcome: a COMPLETED run returns it; a run that stopped closes as a failed workflow
 * whose typed failure carries its RunResult (`runResultOf`), with no executions to report.
 */
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
        workflowId: `openai-agents-${name}-${process.pid}-${Date.now()}`,
        args: [{ prompt: 'Handle order A-7.', model }],
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
    check(
      lines('pay.log').length === 1,
      `pay counter ${lines('pay.log').length}: paid once across the kill and the re-plan`,
    );
    check(
      paid.run.terminal_state === 'COMPLETED' && paid.run.cached === 1,
      `the run completed, the re-sent payment answered by the guard (${paid.run.terminal_state}, cached ${paid.run.cached})`,
    );

    console.log('--- lookup: the model repeats a lookup');
    const lookup = await start('lookup', 'lookup-model');
    const looked = await outcomeOf(lookup);
    check(
      lines('lookup_order.log').length === 2,
      `lookup counter ${lines('lookup_order.log').length}: stopped before the third run`,
    );
    check(
      looked.run.terminal_state === 'STOPPED_LOOP_GUARD' && looked.run.reason === 'same_call_repeat',
      `the run stopped ${looked.run.terminal_state} ${looked.run.reason}`,
    );
    check(
      model.requests('lookup-model') === 3,
      `the SDK's loop ended at the stop (${model.requests('lookup-model')} model calls)`,
    );
    const report = agentctl(['report', lookup.workflowId]);
    console.log(`--- agentctl report ${lookup.workflowId}\n${report.out}`);
    check(report.code === 0 && /same_call_repeat/.test(report.out), 'agentctl report shows the StopReport');
    const status = agentctl(['status', lookup.workflowId, '--json']);
    check(status.code === 0 && /STOPPED_LOOP_GUARD/.test(status.out), 'agentctl status reads the run');

    console.log("--- spend: the tenant's cap has no room for the model's first call");
    const lookupsBefore = lines('lookup_order.log').length;
    const spend = await start('spend', 'spend-model');
    const capped = await outcomeOf(spend);
    check(
      capped.run.terminal_state === 'NEEDS_HUMAN' && capped.run.reason === 'spend_limit',
      `the run stopped ${capped.run.terminal_state} ${capped.run.reason}`,
    );
    check(
      model.requests('spend-model') === 0 && lines('lookup_order.log').length === lookupsBefore,
      `the model was not called (${model.requests('spend-model')} requests) and no tool ran`,
    );
    const spent = agentctl(['spend', 'status', '--tenant', 'example-tenant', '--json']);
    const calls =
      spent.code === 0 ? (JSON.parse(spent.out) as { calls?: { refused?: number } }).calls : undefined;
    check(
      calls?.refused === 1,
      `agentctl spend status: the refused call is on record (${JSON.stringify(calls)})`,
    );

    for (const scenario of ['approval-same-id', 'approval-new-id']) {
      console.log(`--- ${scenario}: an approved payment, then its twin`);
      const before = lines('pay.log').length;
      const h = await start(scenario, scenario);
      await pendingApproval(h.workflowId, 'bob');
      check(lines('pay.log').length === before, 'the payment waits for its approval (counter unchanged)');
      const approve = (reason: string) =>
        agentctl(['approvals', 'approve', h.workflowId, '--reason', reason, '--resume']);
      const approved = approve('invoice checked');
      check(approved.code === 0, `agentctl approvals approve --resume (exit ${approved.code})`);
      if (approved.code !== 0) console.log(approved.out);
      const twin = await pendingApproval(h.workflowId, 'mallory');
      const paidTo = lines('pay.log').slice(before);
      check(paidTo.length === 1 && /bob 100$/.test(paidTo[0] ?? ''), 'the approved payment ran once');
      check(
        !paidTo.some((l) => l.includes('mallory')),
        `twin counter 0: the twin waits for its own approval (${twin.argsDigest})`,
      );
      const shown = agentctl(['status', h.workflowId]);
      check(shown.code === 0 && /approval_required/.test(shown.out), 'agentctl status shows the run waiting');
      // Its own approval (bound to its own digest) lets it run, once.
      const own = approve('the second payee checked too');
      check(own.code === 0, `the twin's own approval (exit ${own.code})`);
      const out = await outcomeOf(h);
      const twins = lines('pay.log')
        .slice(before)
        .filter((l) => l.includes('mallory')).length;
      check(twins === 1, `twin counter ${twins} after its own approval`);
      check(out.run.terminal_state === 'COMPLETED', `the run ended ${out.run.terminal_state}`);
    }
    // The SDK's default trace exporter printed the runs' spans to the workers' stdout: the
    // tools' spans are there, their inputs (payees, amounts) are not (guard.run's default).
    const spans = readFileSync(join(DATA, 'worker.out'), 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('[Exporter] Export span') && l.includes('"type":"function"'));
    check(spans.length > 0, `the trace exporter printed ${spans.length} tool spans`);
    check(!spans.some((l) => /mallory|49999|acme/.test(l)), 'no payment args in them');
  } finally {
    second?.kill('SIGTERM');
    if (first.exitCode === null && first.signalCode === null) first.kill('SIGKILL');
    await model.close();
  }
  if (failed) process.exit(1);
  console.log('openai-agents OK');
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
