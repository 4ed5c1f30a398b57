/**
 * own-agent: a user's agent with none of the demo. A worker of its own hosts only its own
 * tools (`openWorkerDeps({ ledgerUrl, tools })`: no world database, no demo tools), and three
 * scripted runs in live mode show what the package promises for it:
 *  (a) read, read, write, done: COMPLETED, no false `no_progress`, with no progress hook;
 *  (b) a repeated read stops `same_call_repeat` before the store sees it; a resume is refused
 *      while the store is unchanged and accepted once it changed (no demo command);
 *  (c) the only tools offered are its own and the built-in finishing tool `complete_task`,
 *      which ends every run here (the app defines no finishing tool of its own);
 *  (d) a page that needs approval stops `approval_required` and is approved from this code;
 *  (e) an LLM planner (`kind: 'openai'`) against a local OpenAI-compatible server
 *      (src/model-server.ts) triages an incident with those tools and completes; the server
 *      saw only this worker's tools, no API key, and exactly the requests the run needed;
 *  (f) a run with `subAgents` delegates filing a ticket to a sub-agent (a child workflow with
 *      only the tools it was given and a budget out of the parent's): the ticket is filed once,
 *      and the package's tree view shows the child and what it spent.
 * Exits 0 only when all of that is what happened.
 *
 * Environment: TEMPORAL_ADDRESS (default localhost:7233). The model endpoint is set here, in
 * the worker's own environment, as an operator would set it: a run names it, never a URL.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { NativeConnection } from '@temporalio/worker';
import {
  approveRun,
  connectClient,
  createAgentWorker,
  loadConnectionOptions,
  openWorkerDeps,
  resumeAgentRun,
  startAgentRun,
  waitForAgentRun,
  type RunInput,
} from 'agent-loop-guard';
import { getAgentRunTree } from 'agent-loop-guard/client';
import { FINISHING_TOOL } from 'agent-loop-guard/worker';
import { startModelServer, triageSummary } from './model-server';
import { openTicketDesk } from './tickets';

const ROOT = resolve(__dirname, '..');
const DATA = join(ROOT, 'data');
const TASK_QUEUE = 'own-agent';
/** The package's demo tools: a user's worker must never offer them. */
const DEMO_TOOLS = [
  'search',
  'read_record',
  'write_record',
  'send_notification',
  'charge_payment',
  'start_job',
  'poll_job',
  'deploy',
  'transfer_funds',
];
/** The worker's built-in finishing tool (`complete_task`), offered beside its own tools on every run. */
const FINISH = FINISHING_TOOL;

const script = (calls: { tool: string; args: Record<string, unknown> }[]): RunInput => ({
  goal: 'Triage the incident',
  planner: { kind: 'scripted', live: true, script: { calls } },
  resumeWindowMs: 60_000,
});

async function main(): Promise<boolean> {
  rmSync(DATA, { recursive: true, force: true });
  mkdirSync(DATA, { recursive: true });
  const desk = openTicketDesk(join(DATA, 'tickets.db'));
  const ledgerUrl = `sqlite:${join(DATA, 'agent.db')}`;
  // (e) The worker's model endpoint: a named one of its own configuration (docs/planners.md).
  // No apiKeyEnv: the local server needs no key, so none is sent (OPENAI_API_KEY only ever
  // goes to the official API). The planner reads these on every turn; set before the worker.
  const model = await startModelServer();
  process.env.AGENT_MODEL_ENDPOINTS = JSON.stringify({
    'local-model': { provider: 'openai', baseURL: model.baseURL },
  });
  // A local model costs nothing; pricing it says so (an unpriced model is warned about).
  process.env.AGENT_PRICE_TABLE = JSON.stringify({ 'triage-model': { inputPerMTok: 0, outputPerMTok: 0 } });
  const { connectionOptions, namespace } = loadConnectionOptions();
  const connection = await NativeConnection.connect(connectionOptions);
  const client = await connectClient();
  const deps = await openWorkerDeps({ ledgerUrl, tools: desk.tools, configPath: null });
  const checks: [string, boolean][] = [];
  const check = (what: string, ok: boolean) => {
    checks.push([what, ok]);
    console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  };
  try {
    check(
      `(c) only its own tools and the built-in ${FINISH} are offered: ${deps.registry.names().join(', ')}`,
      deps.registry.names().join(',') === [...desk.tools.map((t) => t.name), FINISH].join(','),
    );
    check('(c) no tool store of the demo was opened', deps.store === null);
    const worker = await createAgentWorker({ connection, namespace, taskQueue: TASK_QUEUE, deps });
    await worker.runUntil(async () => {
      const start = (input: RunInput) =>
        startAgentRun(client.client, {
          workflowId: `own-agent-${randomUUID()}`,
          taskQueue: TASK_QUEUE,
          input,
        });
      const settle = (h: { workflowId: string }, untilWaiting: boolean) =>
        waitForAgentRun(client.client, h.workflowId, { untilWaiting, timeoutMs: 60_000 });

      // (a)
      const a = await start(
        script([
          { tool: 'search_tickets', args: { query: 'db' } },
          { tool: 'search_tickets', args: { query: 'db' } },
          { tool: 'file_ticket', args: { id: 'INC-1', title: 'db down' } },
          { tool: FINISH, args: { summary: 'filed INC-1' } },
        ]),
      );
      const ra = (await settle(a, false)).outcome;
      check(
        `(a) read, read, write completed (${ra.terminal_state} ${ra.reason ?? ''})`,
        ra.terminal_state === 'COMPLETED',
      );
      check('(a) the ticket was filed once', desk.calls.file_ticket === 1);

      // (b)
      const search = { tool: 'search_tickets', args: { query: 'disk' } };
      const before = desk.calls.search_tickets;
      const b = await start(script([search, search, search, { tool: FINISH, args: { summary: 'disk ok' } }]));
      const rb = (await settle(b, true)).outcome;
      check(`(b) stopped ${rb.reason}`, rb.reason === 'same_call_repeat');
      check('(b) the third search never reached the store', desk.calls.search_tickets === before + 2);
      const refused = await resumeAgentRun(client.client, b.workflowId, {
        actor: 'oncall',
        reason: 'look again',
      });
      check(`(b) resume refused while unchanged: ${refused.reason}`, !refused.accepted);
      desk.db.prepare('INSERT INTO tickets (id, title) VALUES (?, ?)').run('INC-2', 'disk full');
      const accepted = await resumeAgentRun(client.client, b.workflowId, {
        actor: 'oncall',
        reason: 'INC-2 filed',
      });
      check(`(b) resume accepted after the store changed: ${accepted.reason}`, accepted.accepted);
      check('(b) and the run completed', (await settle(b, false)).outcome.terminal_state === 'COMPLETED');

      // (d)
      const d = await start(
        script([
          { tool: 'page_oncall', args: { incident: 'INC-2' } },
          { tool: FINISH, args: { summary: 'paged' } },
        ]),
      );
      const rd = (await settle(d, true)).outcome;
      check(
        `(d) stopped ${rd.reason} before paging`,
        rd.reason === 'approval_required' && desk.calls.page_oncall === 0,
      );
      const approved = await approveRun(client.client, d.workflowId, {
        actor: 'oncall-lead',
        reason: 'sev1, page now',
        resume: true,
        ledgerUrl,
      });
      check('(d) approved from code and resumed', approved.resume?.accepted === true);
      check('(d) the run completed', (await settle(d, false)).outcome.terminal_state === 'COMPLETED');
      check('(d) the page ran once', desk.calls.page_oncall === 1);

      // (e)
      const filedBefore = desk.calls.file_ticket;
      const e = await start({
        goal: 'Disk alerts on db-3. Search the tickets, file INC-7 "disk full" unless it is open, then close the triage.',
        planner: { kind: 'openai', model: 'triage-model', endpoint: 'local-model', maxTokens: 256 },
        resumeWindowMs: 60_000,
      });
      const se = await settle(e, false);
      const re = se.outcome;
      check(
        `(e) the LLM planner's run completed (${re.terminal_state} ${re.reason ?? ''})`,
        re.terminal_state === 'COMPLETED',
      );
      const own = [...desk.tools.map((t) => t.name), FINISH].sort();
      const offered = [...new Set(model.requests.flatMap((r) => r.tools))].sort();
      check(
        `(e) the model was offered only its own tools and ${FINISH}: ${offered.join(', ')}`,
        model.requests.every((r) => [...r.tools].sort().join(',') === own.join(',')),
      );
      check('(e) no demo tool reached the model', !offered.some((t) => DEMO_TOOLS.includes(t)));
      const asked = model.requests.map((r) => `${r.status} ${r.called ?? 'text'}`);
      check(
        `(e) ${model.requests.length} model requests: ${asked.join(', ')}`,
        asked.join(',') === `200 search_tickets,200 file_ticket,200 ${FINISH}`,
      );
      check(
        '(e) no API key was sent to the local server',
        model.requests.every((r) => r.auth === 'Bearer no-api-key'),
      );
      const inc7 = desk.db.prepare('SELECT title FROM tickets WHERE id = ?').get('INC-7') as
        { title: string } | undefined;
      check(
        '(e) file_ticket ran once and INC-7 is in the store',
        desk.calls.file_ticket === filedBefore + 1 && inc7?.title === 'disk full',
      );
      check(
        `(e) the run's summary is the model's: ${se.result?.summary ?? '(none)'}`,
        se.result?.summary === triageSummary('INC-7', ['INC-2']),
      );

      // (f)
      const filedBeforeF = desk.calls.file_ticket;
      const child = {
        calls: [
          { tool: 'file_ticket', args: { id: 'INC-9', title: 'cert expiry' } },
          { tool: FINISH, args: { summary: 'filed INC-9' } },
        ],
      };
      const f = await start({
        ...script([
          {
            tool: 'spawn_agent',
            // Only file_ticket: the finishing tool comes with every run.
            args: { goal: 'File INC-9', tools: ['file_ticket'], script: child },
          },
          { tool: FINISH, args: { summary: 'delegated INC-9' } },
        ]),
        subAgents: {},
        guard: { maxSteps: 10 },
      });
      const rf = (await settle(f, false)).outcome;
      check(
        `(f) the delegating run completed (${rf.terminal_state} ${rf.reason ?? ''})`,
        rf.terminal_state === 'COMPLETED',
      );
      check('(f) the sub-agent filed INC-9 once', desk.calls.file_ticket === filedBeforeF + 1);
      const tree = await getAgentRunTree(client.client, f.workflowId);
      const sub = tree.children[0];
      check(
        `(f) the tree: ${sub?.workflowId ?? '(no child)'} ${sub?.phase ?? ''}, ${sub?.steps ?? 0} of ${sub?.reserved?.steps ?? '-'} steps`,
        tree.children.length === 1 &&
          sub?.phase === 'COMPLETED' &&
          sub.steps === 2 &&
          sub.reserved?.steps === 9,
      );
      check("(f) the parent's steps include the child's", tree.steps === 1 + 2 + 1);
    });
    return checks.every(([, ok]) => ok);
  } finally {
    await client.close();
    await connection.close();
    await deps.close();
    await model.close();
    desk.db.close();
  }
}

main().then(
  (ok) => process.exit(ok ? 0 : 1),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
