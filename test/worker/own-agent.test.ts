/**
 * A user's own agent on a worker with none of the demo (issue 16): their own SQLite ticket
 * store and tools, `openWorkerDeps({ ledgerUrl, tools })`, no world, no progress hook. It can
 * (a) run read, read, write without a false `no_progress`, (b) have a `same_call_repeat` stop
 * on a read resumed after its own store changed (no demo command), (c) offer only its own
 * tools, (d) approve from its own code; and a progress source that throws or goes backwards
 * stops the run infrastructure_fault (never FAILED). Real dev server, real SQLite.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { z } from 'zod';
import { Worker } from '@temporalio/worker';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { ApprovalStore } from '../../storage/approvals';
import { ToolCounters, type ProgressSource } from '../../activities/progress';
import { SqlLedger } from '../../storage/ledger';
import { defineTool, type AnyTool } from '../../tools/define-tool';
import { reportQuery, resumeUpdate, statusQuery, type RunInput } from '../../common/contracts';
import { TerminalState } from '../../guard';
import { agentRun } from '../../workflows';
import { createAgentWorker, openWorkerDeps, type WorkerDeps } from '../../worker/create-worker';
import { workflowBundle } from '../helpers/run-harness';
import { waitFor } from '../helpers/run-inputs';
import { createTestEnv, testDataConverter, uniqueId, uniqueTaskQueue } from '../helpers/temporal-env';
import { runResult } from '../helpers/run-result';

/** The user's own store and tools, with call counters of their own. */
function ticketDesk() {
  const dir = mkdtempSync(join(tmpdir(), 'alg-own-'));
  const db = new DatabaseSync(join(dir, 'tickets.db'));
  db.exec('CREATE TABLE tickets (id TEXT PRIMARY KEY, title TEXT NOT NULL)');
  db.prepare('INSERT INTO tickets VALUES (?, ?)').run('INC-0', 'db slow');
  const calls = { search_tickets: 0, file_ticket: 0, page_oncall: 0 };
  const tools: AnyTool[] = [
    defineTool({
      name: 'search_tickets',
      description: 'Search open tickets by title.',
      effect: 'read',
      schema: z.object({ query: z.string().min(1) }).strict(),
      execute(a) {
        calls.search_tickets += 1;
        return {
          data: db
            .prepare('SELECT id, title FROM tickets WHERE title LIKE ? ORDER BY id')
            .all(`%${a.query}%`),
        };
      },
    }),
    defineTool({
      name: 'file_ticket',
      description: 'File a ticket.',
      effect: 'write',
      schema: z.object({ id: z.string().min(1), title: z.string().min(1) }).strict(),
      operationKey: (a) => `ticket:${a.id}`,
      execute(a) {
        calls.file_ticket += 1;
        db.prepare('INSERT INTO tickets VALUES (?, ?)').run(a.id, a.title);
        return { data: { filed: a.id } };
      },
    }),
    defineTool({
      name: 'page_oncall',
      description: 'Page the on-call engineer.',
      effect: 'write',
      requiresApproval: true,
      schema: z.object({ incident: z.string().min(1) }).strict(),
      operationKey: (a) => `page:${a.incident}`,
      execute(a) {
        calls.page_oncall += 1;
        return { data: { paged: a.incident } };
      },
    }),
    defineTool({
      name: 'close_triage',
      description: 'Finish the triage with a summary.',
      effect: 'read',
      schema: z.object({ summary: z.string().min(1) }).strict(),
      execute: (a) => ({ data: { summary: a.summary }, terminal: true }),
    }),
  ];
  return { dir, db, calls, tools };
}

const run = (calls: { tool: string; args: Record<string, unknown> }[]): RunInput => ({
  goal: 'triage',
  planner: { kind: 'scripted', live: true, script: { calls } },
  resumeWindowMs: 60_000,
  timeouts: { plannerStartToCloseMs: 10_000, toolStartToCloseMs: 10_000, toolHeartbeatMs: 5_000 },
});

describe("a user's own agent, with none of the demo", () => {
  let env: TestWorkflowEnvironment;
  const workers: { worker: Worker; running: Promise<void>; deps: WorkerDeps }[] = [];

  beforeAll(async () => {
    env = await createTestEnv();
  });
  afterAll(async () => {
    for (const w of workers) {
      w.worker.shutdown();
      await w.running;
      await w.deps.close();
    }
    await env?.teardown();
  });

  /** A worker of the user's, on its own task queue. */
  async function userWorker(tools: AnyTool[], dir: string, progress?: ProgressSource) {
    const deps = await openWorkerDeps({
      ledgerUrl: `sqlite:${join(dir, 'agent.db')}`,
      tools,
      configPath: null,
      ...(progress ? { progress } : {}),
    });
    const taskQueue = uniqueTaskQueue('own');
    const worker = await createAgentWorker({
      connection: env.nativeConnection,
      namespace: 'default',
      taskQueue,
      deps,
      dataConverter: testDataConverter(),
      workflowBundle: await workflowBundle(),
    });
    workers.push({ worker, running: worker.run(), deps });
    const start = (input: RunInput) =>
      env.client.workflow.start(agentRun, { taskQueue, workflowId: uniqueId('own'), args: [input] });
    const counters = new ToolCounters((deps.ledger as SqlLedger<unknown>).database());
    return { deps, start, counters };
  }

  it('(c) offers only its own tools and the built-in finishing tool: no tool store, no demo tools', async () => {
    const desk = ticketDesk();
    const { deps } = await userWorker(desk.tools, desk.dir);
    expect(deps.store).toBeNull();
    expect(deps.registry.descriptors().map((d) => d.name)).toEqual([
      'search_tickets',
      'file_ticket',
      'page_oncall',
      'close_triage',
      'complete_task',
    ]);
    await expect(openWorkerDeps({ tools: desk.tools, wordlUrl: 'x' } as never)).rejects.toThrow(
      /unknown option\(s\) wordlUrl/,
    );
  });

  it('(a) read, read, write with no progress hook completes: no false no_progress', async () => {
    const desk = ticketDesk();
    const { start, counters } = await userWorker(desk.tools, desk.dir);
    const handle = await start(
      run([
        { tool: 'search_tickets', args: { query: 'db' } },
        { tool: 'search_tickets', args: { query: 'db' } },
        { tool: 'file_ticket', args: { id: 'INC-1', title: 'db down' } },
        { tool: 'close_triage', args: { summary: 'filed INC-1' } },
      ]),
    );
    const result = await runResult(handle);
    expect(result).toMatchObject({ terminal_state: TerminalState.COMPLETED, reason: null });
    expect(desk.calls).toMatchObject({ search_tickets: 2, file_ticket: 1 });
    // The runtime counts every tool, the user's included.
    expect(await counters.of(handle.workflowId)).toEqual({
      close_triage: 1,
      file_ticket: 1,
      search_tickets: 2,
    });
  });

  it('(b) a same_call_repeat stop on a read resumes after the store changed, with no demo command', async () => {
    const desk = ticketDesk();
    const { start } = await userWorker(desk.tools, desk.dir);
    const search = { tool: 'search_tickets', args: { query: 'disk' } };
    const handle = await start(
      run([search, search, search, { tool: 'close_triage', args: { summary: 'ok' } }]),
    );
    await waitFor(
      () => handle.query(statusQuery),
      (s) => s.waitingForResume,
    );
    expect(await handle.query(reportQuery)).toMatchObject({ guard_reason: 'same_call_repeat' });
    // The third identical search never reached the store.
    expect(desk.calls.search_tickets).toBe(2);
    const resume = (requestId: string) =>
      handle.executeUpdate(resumeUpdate, { args: [{ actor: 'oncall', reason: 'look again', requestId }] });
    // Nothing changed: the verification re-runs the read (safe to repeat) and sees the same result.
    const refused = await resume('r-1');
    expect(refused).toMatchObject({
      accepted: false,
      reason: expect.stringMatching(/unchanged.*re-ran search_tickets/),
    });
    expect(desk.calls.search_tickets).toBe(3);
    // The user's own store changes; the same verification now sees new information.
    desk.db.prepare('INSERT INTO tickets VALUES (?, ?)').run('INC-9', 'disk full');
    const accepted = await resume('r-2');
    expect(accepted).toMatchObject({
      accepted: true,
      reason: expect.stringMatching(/moved.*re-ran search_tickets/),
    });
    expect((await runResult(handle)).terminal_state).toBe(TerminalState.COMPLETED);
  });

  it('(d) approves from its own code: the page runs once', async () => {
    const desk = ticketDesk();
    const { deps, start } = await userWorker(desk.tools, desk.dir);
    const handle = await start(
      run([
        { tool: 'page_oncall', args: { incident: 'INC-0' } },
        { tool: 'close_triage', args: { summary: 'paged' } },
      ]),
    );
    await waitFor(
      () => handle.query(statusQuery),
      (s) => s.waitingForResume,
    );
    const report = await handle.query(reportQuery);
    expect(report).toMatchObject({ guard_reason: 'approval_required' });
    expect(desk.calls.page_oncall).toBe(0);
    await ApprovalStore.over(deps.ledger).grant({
      runId: handle.workflowId,
      stopRef: report?.last_safe_checkpoint as string,
      tool: 'page_oncall',
      fingerprint: report?.blocked_call?.fingerprint as string,
      argsHash: report?.blocked_call?.args_digest as string,
      actor: 'oncall-lead',
      reason: 'sev1',
      ttlMs: 60_000,
    });
    const answer = await handle.executeUpdate(resumeUpdate, {
      args: [{ actor: 'oncall-lead', reason: 'approved', requestId: 'r-1' }],
    });
    expect(answer.accepted).toBe(true);
    expect((await runResult(handle)).terminal_state).toBe(TerminalState.COMPLETED);
    expect(desk.calls.page_oncall).toBe(1);
  });

  it('a progress source that throws stops the run infrastructure_fault, naming the source', async () => {
    const desk = ticketDesk();
    let reads = 0;
    const flaky: ProgressSource = {
      name: 'ticket-version',
      async version() {
        reads += 1;
        if (reads > 1) throw new Error('ticket store unreachable');
        return 0;
      },
    };
    const { start } = await userWorker(desk.tools, desk.dir, flaky);
    const handle = await start(run([{ tool: 'search_tickets', args: { query: 'db' } }]));
    await waitFor(
      () => handle.query(statusQuery),
      (s) => s.waitingForResume,
    );
    const status = await handle.query(statusQuery);
    expect(status).toMatchObject({
      terminalState: TerminalState.NEEDS_HUMAN,
      guardReason: 'infrastructure_fault',
    });
    const report = await handle.query(reportQuery);
    expect(report?.unmet_precondition).toMatch(
      /progress source ticket-version: version\(\) after search_tickets threw/,
    );
    await handle.terminate('test done');
  });

  it('a progress source that goes backwards stops the run infrastructure_fault, not no_progress', async () => {
    const desk = ticketDesk();
    let v = 10;
    const backwards: ProgressSource = { name: 'shrinking', version: async () => (v -= 3) };
    const { start } = await userWorker(desk.tools, desk.dir, backwards);
    const handle = await start(
      run([
        { tool: 'search_tickets', args: { query: 'a' } },
        { tool: 'search_tickets', args: { query: 'b' } },
        { tool: 'search_tickets', args: { query: 'c' } },
      ]),
    );
    await waitFor(
      () => handle.query(statusQuery),
      (s) => s.waitingForResume,
    );
    const report = await handle.query(reportQuery);
    expect(report).toMatchObject({ guard_reason: 'infrastructure_fault' });
    expect(report?.unmet_precondition).toMatch(
      /went backwards from \d+ to \d+ after a call of search_tickets/,
    );
    await handle.terminate('test done');
  });
});
