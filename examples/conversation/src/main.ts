/**
 * conversation: a conversation run from outside, as a user of the packed package. The app's own worker
 * (its own SQLite address book, `update_address` and `complete_task`) and a local Chat
 * Completions server (src/model-server.ts) hold one conversation, driven the way a person and an
 * operator drive it:
 *  (a) `npx agentctl start --planner openai … --conversation --max-ms 8000` starts it;
 *  (b) `npx agentctl replies RUN --wait` prints the agent's question and `npx agentctl status RUN`
 *      shows the question being waited on; the person then takes longer than --max-ms;
 *  (c) `npx agentctl send RUN ""` is refused (exit 3, `empty message`);
 *  (d) `npx agentctl send RUN "C-42"` answers it; the agent makes its write and asks for a
 *      confirmation (a text reply, read with `npx agentctl replies RUN --after SEQ --wait`);
 *  (e) `sendMessage` from 'agent-loop-guard/client' says "yes": the agent calls complete_task;
 *  (f) the run is COMPLETED although the person's waits were longer than its wall-clock budget,
 *      `update_address` ran exactly once (the app's own counter) and the row is in its store;
 *  (g) a message to the finished run is refused (exit 3, `the conversation is closed`), and one
 *      to an unknown run is exit 1;
 *  (h) a second run, stopped by `npx agentctl stop` while it waits for the person, refuses a
 *      message (exit 3: it waits for an operator, not a person) and writes nothing.
 * Exits 0 only when all of that is what happened.
 *
 * Environment: TEMPORAL_ADDRESS (default localhost:7233).
 */
import { mkdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { NativeConnection } from '@temporalio/worker';
import { createAgentWorker, loadConnectionOptions, openWorkerDeps, waitForAgentRun } from 'agent-loop-guard';
// A person's client needs this import alone: the connection with the workers' payload codec, and the messages.
import { connectClient, sendMessage } from 'agent-loop-guard/client';
import { agentctl, type CtlResult } from './agentctl';
import { openAddressBook } from './addresses';
import { CONFIRM, QUESTION, ADDRESS, startModelServer } from './model-server';

const ROOT = resolve(__dirname, '..');
const DATA = join(ROOT, 'data');
const TASK_QUEUE = 'conversation-example';
/**
 * The run's wall-clock budget: the person takes longer than this before answering (the agent's
 * own time, ~1.5 s on an idle machine, keeps a margin for a loaded CI machine).
 */
const MAX_MS = 8000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main(): Promise<boolean> {
  rmSync(DATA, { recursive: true, force: true });
  mkdirSync(DATA, { recursive: true });
  const book = openAddressBook(join(DATA, 'addresses.db'));
  const ledgerUrl = `sqlite:${join(DATA, 'agent.db')}`;
  const model = await startModelServer();
  process.env.AGENT_MODEL_ENDPOINTS = JSON.stringify({
    'local-model': { provider: 'openai', baseURL: model.baseURL },
  });
  process.env.AGENT_PRICE_TABLE = JSON.stringify({ 'conv-model': { inputPerMTok: 0, outputPerMTok: 0 } });
  const { connectionOptions, namespace } = loadConnectionOptions();
  const connection = await NativeConnection.connect(connectionOptions);
  const client = await connectClient();
  const deps = await openWorkerDeps({ ledgerUrl, tools: book.tools, configPath: null });
  // The operator's shell: the same Temporal address and task queue, the ledger for counters.
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    TEMPORAL_TASK_QUEUE: TASK_QUEUE,
    LEDGER_URL: ledgerUrl,
  };
  const ctl = async (...args: string[]): Promise<CtlResult> => {
    const r = await agentctl(ROOT, env, args);
    const out = (r.stdout + r.stderr).trim().split('\n').join('\n       ');
    console.log(
      `  $ agentctl ${args.map((a) => (/^[\w.=/-]+$/.test(a) ? a : JSON.stringify(a))).join(' ')}  (exit ${r.code}, ${r.ms} ms)\n       ${out}`,
    );
    return r;
  };
  const checks: [string, boolean][] = [];
  const check = (what: string, ok: boolean) => {
    checks.push([what, ok]);
    console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  };
  try {
    const worker = await createAgentWorker({ connection, namespace, taskQueue: TASK_QUEUE, deps });
    await worker.runUntil(async () => {
      const runId = `conversation-${process.pid}-${Date.now()}`;
      // (a)
      const started = await ctl(
        'start',
        '--planner',
        'openai',
        '--model',
        'conv-model',
        '--endpoint',
        'local-model',
        '--goal',
        `Change the customer's address to ${ADDRESS}. Ask them for their customer id first.`,
        '--conversation',
        '--idle-timeout',
        '60',
        '--max-ms',
        String(MAX_MS),
        '--id',
        runId,
        '--json',
      );
      check('(a) agentctl start --conversation started the run', started.code === 0);
      const t0 = Date.now();

      // (b)
      const asked = await ctl('replies', runId, '--wait', '30');
      check(`(b) replies --wait printed the question`, asked.code === 0 && asked.stdout.includes(QUESTION));
      const status = await ctl('status', runId);
      check(
        '(b) status shows the question being waited on',
        status.code === 0 && /waiting for person/i.test(status.stdout) && status.stdout.includes(QUESTION),
      );
      // The person is slow: longer than the run's whole wall-clock budget.
      await sleep(Math.max(0, MAX_MS + 1500 - (Date.now() - t0)));

      // (c)
      const empty = await ctl('send', runId, '');
      check(
        '(c) an empty message is refused with exit 3 and its reason',
        empty.code === 3 && /empty message/.test(empty.stderr),
      );
      check('(c) and nothing was written', book.calls.update_address === 0);

      // (d)
      const answered = await ctl('send', runId, 'C-42');
      check(
        '(d) send "C-42" was taken as the answer to the question',
        answered.code === 0 && /^answer/.test(answered.stdout.trim()) && answered.stdout.includes(QUESTION),
      );
      const seq = Math.max(0, ...[...asked.stdout.matchAll(/#(\d+)/g)].map((m) => Number(m[1])));
      const confirm = await ctl('replies', runId, '--after', String(seq), '--wait', '30');
      check('(d) replies --after --wait printed the confirmation question', confirm.stdout.includes(CONFIRM));
      check('(d) update_address ran once', book.calls.update_address === 1);

      // (e)
      const yes = await sendMessage(client.client, runId, 'yes');
      check(
        `(e) sendMessage("yes"): ${yes.accepted ? yes.action : 'refused'}: ${yes.reason}`,
        yes.accepted && yes.action === 'answer',
      );

      // (f)
      const done = await waitForAgentRun(client.client, runId, { untilWaiting: true, timeoutMs: 30_000 });
      const waited = Date.now() - t0;
      check(
        `(f) the run is ${done.outcome.terminal_state} ${done.outcome.reason ?? ''} after ${waited} ms with --max-ms ${MAX_MS}`,
        done.outcome.terminal_state === 'COMPLETED' && waited > MAX_MS,
      );
      check(
        `(f) update_address ran exactly once (${book.calls.update_address})`,
        book.calls.update_address === 1,
      );
      const row = book.db.prepare('SELECT address FROM addresses WHERE id = ?').get('C-42') as
        { address: string } | undefined;
      check('(f) the address of C-42 is in the store', row?.address === ADDRESS);
      const did = model.requests.map((r) => r.did).join(',');
      check(
        `(f) the model's turns: ${did}`,
        did === 'ask_human,update_address,text,complete_task' &&
          model.requests.every((r) => r.tools.includes('ask_human') && r.tools.includes('update_address')),
      );
      const all = await ctl('replies', runId, '--all');
      check(
        '(f) replies --all shows both sides',
        all.code === 0 && all.stdout.includes('C-42') && all.stdout.includes('yes'),
      );

      // (g)
      const late = await ctl('send', runId, 'one more thing');
      check(
        "(g) a message to the finished run is refused with exit 3 and its reason, in the run's words",
        late.code === 3 && late.stderr.includes('the conversation is closed (run COMPLETED)'),
      );
      const unknown = await ctl('send', `${runId}-nope`, 'hello');
      check('(g) a message to an unknown run is exit 1', unknown.code === 1 && /no run/.test(unknown.stderr));
      const after = await sendMessage(client.client, runId, 'again');
      check(`(g) sendMessage to the finished run is refused: ${after.reason}`, !after.accepted);
      check('(g) update_address still ran once', book.calls.update_address === 1);

      // (h) A run that waits for an operator, not the person: stopped while it asked.
      const stoppedId = `${runId}-stopped`;
      await ctl(
        'start',
        '--planner',
        'openai',
        '--model',
        'conv-model',
        '--endpoint',
        'local-model',
        '--goal',
        'Change an address.',
        '--conversation',
        '--id',
        stoppedId,
        '--json',
      );
      await ctl('replies', stoppedId, '--wait', '30');
      const stop = await ctl('stop', stoppedId, '--actor', 'oncall', '--reason', 'wrong customer');
      check('(h) agentctl stop while the agent waits for the person: ACCEPTED', stop.code === 0);
      const toStopped = await ctl('send', stoppedId, 'C-43');
      check(
        '(h) a message to a run that waits for an operator is refused with exit 3 and its reason',
        toStopped.code === 3 && /waits for an operator, not a person/.test(toStopped.stderr),
      );
      check('(h) and nothing was written for C-43', book.calls.update_address === 1);
    });
    return checks.every(([, ok]) => ok);
  } finally {
    await client.close();
    await connection.close();
    await deps.close();
    await model.close();
    book.db.close();
  }
}

main().then(
  (ok) => process.exit(ok ? 0 : 1),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
