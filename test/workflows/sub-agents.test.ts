/**
 * Sub-agents (docs/spec.md §7.14) on a real dev server with the real demo tools: a scripted
 * parent delegates with `spawn_agent`, the child runs as a child workflow with a budget
 * reserved out of the parent's, its usage is charged back, its stop makes the parent wait,
 * resuming the child continues the parent, and the root's kill switch stops the subtree.
 */
import { resumeUpdate, statusQuery, stopSignal, type RunStatus } from '../../common/contracts';
import { startHarness, type Harness } from '../helpers/run-harness';
import { live, waitFor, type ScriptCall } from '../helpers/run-inputs';
import { agentctl, cliEnv } from '../client/cli-helpers';
import { readInbox } from '../../client/console/inbox';
import { runResult } from '../helpers/run-result';

const write = (id: string): ScriptCall => ({ tool: 'write_record', args: { id, body: `body ${id}` } });
const done = (summary: string): ScriptCall => ({ tool: 'complete_task', args: { summary } });
const spawn = (goal: string, tools: string[], calls: ScriptCall[], budget?: Record<string, number>) => ({
  tool: 'spawn_agent',
  args: { goal, tools, script: { calls }, ...(budget ? { budget } : {}) },
});
const tree = { subAgents: {}, resumeWindowMs: 60_000 };

describe('sub-agents', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  const status = (id: string) => h.env.client.workflow.getHandle(id).query(statusQuery);

  it('runs a child with a reserved budget, charges its usage to the parent, and completes', async () => {
    const child = [
      { ...write('c1'), usage: { tokens: 100, costUsd: 0.25 } },
      write('c2'),
      done('child done'),
    ];
    const run = await h.start(
      live([spawn('write two records', ['write_record', 'complete_task'], child), done('parent done')], {
        ...tree,
        guard: { maxSteps: 10, maxCostUsd: 1 },
      }),
    );
    const result = await runResult(run);
    expect(result).toMatchObject({ terminal_state: 'COMPLETED', summary: 'parent done' });
    const childId = `${run.workflowId}/sub-1`;
    // The child's writes ran once, under the child's own run id.
    expect(await h.counters(childId)).toEqual({ write_record: 2, complete_task: 1 });
    expect(await h.counters(run.workflowId)).toEqual({ complete_task: 1 });
    const st = await status(run.workflowId);
    expect(st.children).toEqual([
      {
        workflowId: childId,
        goal: 'write two records',
        state: 'COMPLETED',
        reason: null,
        reserved: { steps: 9, tokens: null, costUsd: 1, ms: expect.any(Number) },
        used: { steps: 3, tokens: 100, costUsd: 0.25 },
      },
    ]);
    // The parent's totals include its child's: 1 spawn + 3 child steps + its own finish.
    expect(st.steps).toBe(5);
    expect(st.usage).toEqual({ tokens: 100, costUsd: 0.25 });
    expect(result.usage).toEqual({ steps: 5, tokens: 100, cost_usd: 0.25 });
    const childStatus = await status(childId);
    expect(childStatus.tree).toEqual({ rootId: run.workflowId, parentId: run.workflowId, depth: 1 });
  });

  it('refuses a spawn that asks for tools the parent lacks, more budget than is left, or too deep: nothing starts', async () => {
    const run = await h.start(
      live(
        [
          spawn('needs deploy', ['deploy'], [done('x')]),
          spawn('too rich', ['write_record'], [done('x')], { maxSteps: 50 }),
          spawn(
            'nested',
            ['spawn_agent', 'complete_task'],
            [spawn('grandchild', ['complete_task'], [done('g')])],
          ),
          done('parent done'),
        ],
        {
          ...tree,
          tools: ['write_record', 'complete_task', 'spawn_agent'],
          subAgents: { maxDepth: 1 },
          guard: { maxSteps: 10, noProgressLimit: 10 },
        },
      ),
    );
    const result = await runResult(run);
    expect(result.terminal_state).toBe('COMPLETED');
    const st = await status(run.workflowId);
    // Only the third spawn started a child; its own spawn was refused at depth 1 of 1.
    expect(st.children?.map((c) => c.workflowId)).toEqual([`${run.workflowId}/sub-1`]);
    expect(st.children?.[0]).toMatchObject({ state: 'PARTIAL' });
    const trace = await h.env.client.workflow.getHandle(run.workflowId).query('trace' as never, {} as never);
    const errors = (
      trace as { records: { phase: string; tool: string; error_code: string | null }[] }
    ).records
      .filter((r) => r.phase === 'after' && r.tool === 'spawn_agent')
      .map((r) => r.error_code);
    expect(errors).toEqual(['spawn_refused', 'spawn_refused', 'child_partial']);
    expect(await h.counters(`${run.workflowId}/sub-1/sub-1`)).toEqual({});
  });

  it("waits while its child waits for a person, refuses its own resume, and continues when the child's is accepted", async () => {
    const deploy = { tool: 'deploy', args: { service: 'subagents', version: '1.0' } };
    const run = await h.start(
      live(
        [
          spawn('deploy it', ['deploy', 'complete_task'], [deploy, deploy, done('deployed')]),
          done('parent done'),
        ],
        tree,
      ),
    );
    const childId = `${run.workflowId}/sub-1`;
    const parked = await waitFor(
      () => status(run.workflowId),
      (s: RunStatus) => s.phase === 'WAITING',
    );
    expect(parked).toMatchObject({ guardReason: 'child_stopped', terminalState: 'NEEDS_HUMAN' });
    expect(parked.children?.[0]).toMatchObject({ state: 'WAITING', reason: 'permission_denied' });
    // The approvals inbox lists both: the child to act on, the parent pointing at it.
    const inbox = await waitFor(
      () => readInbox(h.env.client, { linkOf: (id) => id, taskQueue: h.taskQueue }),
      (i) => i.waiting.some((w) => w.runId === run.workflowId) && i.waiting.some((w) => w.runId === childId),
    );
    expect(inbox.waiting.find((w) => w.runId === run.workflowId)).toMatchObject({
      reason: 'child_stopped',
      waitsOnChild: childId,
    });
    expect(inbox.waiting.find((w) => w.runId === childId)).toMatchObject({
      reason: 'permission_denied',
      waitsOnChild: null,
    });
    const report = await run.handle.query('report' as never);
    expect(JSON.stringify(report)).toContain(childId);
    expect(JSON.stringify(report)).toContain('permission_denied');

    const refused = await run.handle.executeUpdate(resumeUpdate, {
      args: [{ actor: 'ops', reason: 'go on', requestId: 'p1' }],
    });
    expect(refused).toMatchObject({ accepted: false });
    expect(refused.reason).toMatch(/resume the child/);

    await h.deps.world.grant('deploy:subagents');
    const accepted = await h.env.client.workflow.getHandle(childId).executeUpdate(resumeUpdate, {
      args: [{ actor: 'ops', reason: 'granted', requestId: 'c1' }],
    });
    expect(accepted).toMatchObject({ accepted: true });
    const result = await runResult(run);
    expect(result).toMatchObject({ terminal_state: 'COMPLETED', summary: 'parent done' });
    // The refused deploy did nothing; after the resume it ran once.
    expect(await h.worldCounters(childId)).toEqual({ deploy: 1, complete_task: 1 });
  });

  it("never repeats a write a re-spawned child's predecessor committed", async () => {
    // The first child commits its write, then runs out of its own budget (it ends: its budget
    // is a reservation); the parent spawns the same sub-task again with more budget.
    const child = [write('shared-1'), write('shared-2'), done('both written')];
    const run = await h.start(
      live(
        [
          spawn('write both', ['write_record', 'complete_task'], child, { maxSteps: 1 }),
          spawn('write both', ['write_record', 'complete_task'], child, { maxSteps: 5 }),
          done('parent done'),
        ],
        { ...tree, guard: { maxSteps: 10 } },
      ),
    );
    const result = await runResult(run);
    expect(result).toMatchObject({ terminal_state: 'COMPLETED', summary: 'parent done' });
    const [first, second] = [`${run.workflowId}/sub-1`, `${run.workflowId}/sub-2`];
    expect(await runResult(h.env.client.workflow.getHandle(first))).toMatchObject({
      terminal_state: 'STOPPED_LOOP_GUARD',
      reason: 'step_budget',
    });
    // shared-1 ran once, in the first child; the second child got it from the ledger.
    expect(await h.worldCounters(first)).toEqual({ write_record: 1 });
    expect(await h.worldCounters(second)).toEqual({ write_record: 1, complete_task: 1 });
    const st = await status(run.workflowId);
    expect(st.children?.map((c) => [c.state, c.reason, c.used?.steps])).toEqual([
      ['STOPPED_LOOP_GUARD', 'step_budget', 1],
      ['COMPLETED', null, 2],
    ]);
    // agentctl tree shows both children with their spend against their reservations.
    const cli = await agentctl(['tree', run.workflowId], cliEnv(h));
    expect(cli.code).toBe(0);
    expect(cli.stdout).toContain(`├─ ${first}  STOPPED_LOOP_GUARD  step_budget  steps 1/1`);
    expect(cli.stdout).toContain(`└─ ${second}  COMPLETED  -  steps 2/5`);
    const asJson = JSON.parse((await agentctl(['tree', run.workflowId, '--json'], cliEnv(h))).stdout);
    expect(asJson.children.map((c: { workflowId: string }) => c.workflowId)).toEqual([first, second]);
  });

  it("the root's kill switch stops every node of its tree", async () => {
    const deploy = { tool: 'deploy', args: { service: 'never-granted', version: '1.0' } };
    const grandchild = [deploy, done('g')];
    const child = [spawn('grandchild', ['deploy', 'complete_task'], grandchild), done('c')];
    const run = await h.start(
      live([spawn('child', ['spawn_agent', 'deploy', 'complete_task'], child), done('root done')], tree),
    );
    const childId = `${run.workflowId}/sub-1`;
    const grandchildId = `${childId}/sub-1`;
    await waitFor(
      () => status(run.workflowId),
      (s: RunStatus) => s.phase === 'WAITING' && s.guardReason === 'child_stopped',
    );
    await run.handle.signal(stopSignal, { actor: 'ops', reason: 'kill the tree', requestId: 'k1' });
    const root = await waitFor(
      () => status(run.workflowId),
      (s: RunStatus) => s.phase === 'WAITING' && s.guardReason === 'operator_stop',
    );
    expect(root.children?.[0]).toMatchObject({ state: 'STOPPED_LOOP_GUARD', reason: 'operator_stop' });
    const c = await runResult(h.env.client.workflow.getHandle(childId));
    const g = await runResult(h.env.client.workflow.getHandle(grandchildId));
    expect(c).toMatchObject({ terminal_state: 'STOPPED_LOOP_GUARD', reason: 'operator_stop' });
    expect(g).toMatchObject({ terminal_state: 'NEEDS_HUMAN', reason: 'permission_denied' });
    expect(await h.worldCounters(grandchildId)).toEqual({});
  });
});
