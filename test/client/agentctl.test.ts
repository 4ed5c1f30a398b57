/**
 * agentctl end to end: the real CLI process against the shared dev server, with an
 * in-process worker (test/helpers/run-harness.ts) on a unique task queue. The tests run side
 * by side (`it.concurrent`; each CLI process mostly waits on the server) with their own run
 * ids, except the two that change the world the others' resume checks read: those go last.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../devserver/dev-server';
import { runReplay } from '../../client/replay';
import { startHarness, type Harness } from '../helpers/run-harness';
import { uniqueId } from '../helpers/temporal-env';
import { agentctl, ROOT, cliEnv } from './cli-helpers';
import { runResult } from '../helpers/run-result';

const fixture = (name: string) => join(ROOT, 'test', 'fixtures', 'traces', `${name}.json`);

function replayOf(file: string): unknown {
  const lines: string[] = [];
  expect(
    runReplay(
      [file],
      (l) => lines.push(l),
      () => undefined,
    ),
  ).toBe(0);
  return JSON.parse(lines[0] as string);
}

describe('agentctl against a real server', () => {
  let h: Harness;
  let env: Record<string, string>;
  const tmp = mkdtempSync(join(tmpdir(), 'agentctl-'));

  beforeAll(async () => {
    h = await startHarness();
    env = cliEnv(h);
  });
  afterAll(async () => {
    await h?.close();
  });

  it.concurrent.each([
    ['jitter-same-fingerprint', 'STOPPED_LOOP_GUARD'],
    ['seed-05-repeated-notification', null],
    ['terminal-success-completed', 'COMPLETED'],
    // Files with their own config, completed keys and initial version: every knob must reach the run.
    ['cost-budget', 'STOPPED_LOOP_GUARD'],
    ['token-budget', 'STOPPED_LOOP_GUARD'],
    ['step-budget-beats-repeat', 'STOPPED_LOOP_GUARD'],
    ['semantic-changes-are-new-calls', null],
    ['resume-with-completed-keys', null],
  ])(
    'start --script %s --wait --json prints the replay object plus workflow_id and counters',
    async (name, state) => {
      const id = uniqueId(`ctl-${name}`);
      const r = await agentctl(['start', '--script', fixture(name), '--id', id, '--wait', '--json'], env);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      const out = JSON.parse(r.stdout) as Record<string, unknown>;
      const expected = replayOf(fixture(name)) as Record<string, unknown>;
      // The durable run adds how it ended (issue 30) and the blocked call's digest (issue 31).
      const { ended, finished_task, summary: _summary, ...rest } = out;
      expect(typeof ended).toBe('string');
      expect(typeof finished_task).toBe('boolean');
      const report = rest.report as { blocked_call?: Record<string, unknown> | null } | null;
      if (report?.blocked_call) {
        expect(report.blocked_call.args_digest).toMatch(/^sha256:[0-9a-f]{64}$/);
        delete report.blocked_call.args_digest;
      }
      expect(rest).toEqual({ ...expected, workflow_id: id, counters: await h.counters(id) });
      if (state) expect(out.terminal_state).toBe(state);
      expect(Object.keys(out.counters as object).length).toBeGreaterThan(0);
    },
  );

  describe('on a stopped run', () => {
    const id = uniqueId('ctl-stopped');
    beforeAll(async () => {
      const r = await agentctl(
        ['start', '--script', fixture('seed-01-exact-repeat'), '--id', id, '--wait', '--json'],
        env,
      );
      expect(r.code).toBe(0);
    });

    it.concurrent('status shows it waiting for resume', async () => {
      const json = await agentctl(['status', id, '--json'], env);
      expect(json.code).toBe(0);
      const s = JSON.parse(json.stdout) as Record<string, unknown>;
      expect(s).toMatchObject({
        workflowId: id,
        phase: 'WAITING',
        terminalState: 'STOPPED_LOOP_GUARD',
        guardReason: 'same_call_repeat',
        steps: 2,
        counters: { search: 2 },
      });
      const text = await agentctl(['status', id], env);
      expect(text.code).toBe(0);
      expect(text.stdout).toMatch(/phase\s+WAITING/);
      expect(text.stdout).toContain(`/namespaces/default/workflows/${id}`);
    });

    it.concurrent('report prints the StopReport', async () => {
      const json = await agentctl(['report', id, '--json'], env);
      expect(json.code).toBe(0);
      expect(JSON.parse(json.stdout)).toMatchObject({
        terminal_state: 'STOPPED_LOOP_GUARD',
        guard_reason: 'same_call_repeat',
        steps: 2,
        blocked_call: { tool: 'search' },
      });
      const text = await agentctl(['report', id], env);
      expect(text.stdout).toMatch(/guard reason\s+same_call_repeat/);
    });

    it.concurrent('trace shows which rule refused which call, with filters', async () => {
      const all = await agentctl(['trace', id], env);
      expect(all.code).toBe(0);
      expect(all.stdout.split('\n')[0]).toMatch(/^STEP\s+PHASE\s+TOOL\s+DECISION\s+REASON/);
      expect(all.stdout).toMatch(/before\s+search\s+stop\s+same_call_repeat/);
      const stops = await agentctl(['trace', id, '--decision', 'stop', '--json'], env);
      const page = JSON.parse(stops.stdout) as {
        records: { decision: string; reason: string; tool: string }[];
      };
      expect(page.records).toEqual([
        expect.objectContaining({ decision: 'stop', reason: 'same_call_repeat', tool: 'search' }),
      ]);
      const none = await agentctl(['trace', id, '--reason', 'short_cycle', '--json'], env);
      expect((JSON.parse(none.stdout) as { records: unknown[] }).records).toEqual([]);
    });

    it.concurrent('resume with nothing changed is refused: exit 3 with the reason', async () => {
      const r = await agentctl(['resume', id, '--actor', 'test', '--reason', 'nothing changed'], env);
      expect(r.code).toBe(3);
      expect(r.stdout).toMatch(/resume\s+REFUSED/);
      expect(r.stderr).toMatch(/resume refused: \S/);
      const refused = await agentctl(['trace', id, '--decision', 'resume_refused', '--json'], env);
      expect((JSON.parse(refused.stdout) as { records: unknown[] }).records).toHaveLength(1);
    });

    it.concurrent('stop on an already stopped run is refused (exit 3)', async () => {
      const r = await agentctl(['stop', id, '--reason', 'kill'], env);
      expect(r.code).toBe(3);
      expect(r.stderr).toContain('already stopped');
    });

    it.concurrent('list filters by AgentState / AgentGuardReason', async () => {
      let rows: { id: string; state: string; reason: string; steps: number }[] = [];
      for (let i = 0; i < 20; i++) {
        const r = await agentctl(
          [
            'list',
            '--state',
            'STOPPED_LOOP_GUARD',
            '--reason',
            'same_call_repeat',
            '--json',
            '--limit',
            '1000',
          ],
          env,
        );
        expect(r.code).toBe(0);
        rows = JSON.parse(r.stdout) as typeof rows;
        if (rows.some((x) => x.id === id)) break;
        await new Promise((res) => setTimeout(res, 500));
      }
      expect(rows.find((x) => x.id === id)).toMatchObject({
        state: 'STOPPED_LOOP_GUARD',
        reason: 'same_call_repeat',
        steps: 2,
      });
      const table = await agentctl(['list', '--state', 'STOPPED_LOOP_GUARD'], env);
      expect(table.stdout.split('\n')[0]).toMatch(/^ID\s+STATE\s+REASON\s+STEPS/);
      // The same list in the Web UI, as a link with the same query.
      expect(table.stdout).toMatch(
        /in the Temporal UI: http:\/\/\S+\/workflows\?query=\S*STOPPED_LOOP_GUARD/,
      );
      // --waiting: the open runs that wait for an operator hold this one (it waits for a resume).
      const waiting = await agentctl(['list', '--waiting', '--json', '--limit', '1000'], env);
      expect(waiting.code).toBe(0);
      expect((JSON.parse(waiting.stdout) as typeof rows).find((x) => x.id === id)).toMatchObject({
        state: 'STOPPED_LOOP_GUARD',
      });
      const both = await agentctl(['list', '--waiting', '--closed'], env);
      expect(both.code).toBe(2);
    });
  });

  it.concurrent('exit 4 with a hint when the server is unreachable', async () => {
    const port = await freePort();
    const r = await agentctl(['status', 'whatever'], { ...env, TEMPORAL_ADDRESS: `127.0.0.1:${port}` });
    expect(r.code).toBe(4);
    expect(r.stderr).toContain(`127.0.0.1:${port}`);
    expect(r.stderr).toContain('npm run dev:server');
  });

  it.concurrent('exit 2 on malformed arguments or input', async () => {
    const bad = join(tmp, 'bad.json');
    writeFileSync(bad, JSON.stringify({ calls: [{ args: {} }] }));
    const cases: string[][] = [
      ['start', '--max-steps', 'many', '--script', fixture('seed-01-exact-repeat')],
      ['start'],
      ['start', '--script', bad],
      ['start', '--planner', 'gpt'],
      ['start', '--planner', 'ai-sdk', '--goal', 'g', '--model', 'm'],
      ['resume'],
      ['frobnicate'],
      ['list', '--state', 'SLEEPING'],
      ['replay', bad],
    ];
    const runs = await Promise.all(cases.map((args) => agentctl(args, env)));
    cases.forEach((args, i) => {
      expect({ args, code: runs[i]?.code }).toEqual({ args, code: 2 });
      expect(runs[i]?.stderr).not.toBe('');
    });
  });

  it.concurrent('exit 1 for an unknown run', async () => {
    const r = await agentctl(['report', uniqueId('nope')], env);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('no run with id');
  });

  // These change the world (a new document, a grant), which the resume checks of the other
  // runs read: they go last, one after the other.
  describe('changing the world', () => {
    it('resume --from continues a closed run as a new run, after the world changed', async () => {
      const id = uniqueId('ctl-from');
      const script = join(ROOT, 'demo', 'scripts', 'research-loop.json');
      // The continued run inherits this window and must get its verified resume within it (a
      // resume whose check outlasts the window is answered accepted while the run closes): 3 s,
      // not 300 ms, now that the test server fires timers on time (the stock server made it ~1 s).
      const first = await agentctl(
        ['start', '--script', script, '--live', '--id', id, '--resume-window-ms', '3000', '--json', '--wait'],
        env,
      );
      expect(first.code).toBe(0);
      expect(JSON.parse(first.stdout)).toMatchObject({
        terminal_state: 'STOPPED_LOOP_GUARD',
        reason: 'same_call_repeat',
        counters: { search: 2 },
      });
      await runResult(h.env.client.workflow.getHandle(id)); // closes after the resume window
      const open = await agentctl(['resume', id], env);
      expect(open.code).toBe(3);
      expect(open.stderr).toContain(`resume --from ${id}`);
      await h.deps.world.addDoc(uniqueId('doc'), 'temporal', 'New fact', 'The world changed.');
      const r = await agentctl(
        ['resume', '--from', id, '--actor', 'test', '--reason', 'new docs', '--wait', '--json'],
        env,
      );
      expect(r.code).toBe(0);
      const out = JSON.parse(r.stdout) as Record<string, unknown>;
      expect(out).toMatchObject({ workflow_id: id, terminal_state: 'COMPLETED', resume: { accepted: true } });
      // Continued from the checkpoint (a new execution of the same id): the search the guard
      // refused is asked again once — the world changed, so now it finds the new document —
      // then the script's next call. The two searches before the stop are not repeated.
      expect(await h.counters(id)).toEqual({ search: 3, complete_task: 1 });
      expect(out).toMatchObject({ executed: 4 }); // 2 before the stop (from the checkpoint) + 2 after
    });

    it('world grant changes what verifyPrecondition sees, and world counters reads the real executions', async () => {
      const id = uniqueId('cli-world');
      const script = join(tmp, 'deploy.json');
      writeFileSync(
        script,
        JSON.stringify({
          calls: [
            { tool: 'deploy', args: { service: 'cli-svc', version: '1' } },
            { tool: 'deploy', args: { service: 'cli-svc', version: '1' } },
            { tool: 'complete_task', args: { summary: 'deployed' } },
          ],
        }),
      );
      const start = await agentctl(
        ['start', '--script', script, '--live', '--id', id, '--wait', '--json'],
        env,
      );
      expect(JSON.parse(start.stdout)).toMatchObject({
        terminal_state: 'NEEDS_HUMAN',
        reason: 'permission_denied',
      });
      const refused = await agentctl(['resume', id, '--actor', 'ci', '--reason', 'nothing yet'], env);
      expect(refused.code).toBe(3);
      expect((await agentctl(['world', 'grant', 'deploy:cli-svc'], env)).code).toBe(0);
      const accepted = await agentctl(['resume', id, '--actor', 'ci', '--reason', 'granted'], env);
      expect(accepted.code).toBe(0);
      await runResult(h.env.client.workflow.getHandle(id));
      const counters = await agentctl(['world', 'counters', id, '--json'], env);
      // The refused deploy never reached its write; the resumed one ran once.
      expect(JSON.parse(counters.stdout)).toEqual({ deploy: 1, complete_task: 1 });
    });
  });
});
