/**
 * A coding agent, durable (docs/real-agents.md "Coding agents"): an LLM run through the official
 * OpenAI SDK against a local server that speaks Chat Completions, with the shell tool of
 * tools/shell.ts on a real git repository. The assertions are the runtime's own counters and
 * the file on disk, not only the states:
 * - a model that appends the same block again and again is steered at the third application,
 *   told twice, then stopped `reapplied_edit`: the shell ran twice, the file holds two copies;
 * - edits through the shell that print nothing, each followed by the same test command, are
 *   progress: a run of 9 such calls completes with no steer (without workspace reports the third
 *   test run was refused as a repeat);
 * - a fingerprint that throws stops the run NEEDS_HUMAN `workspace_unknown` after the one call,
 *   never FAILED, nothing run twice;
 * - a command that never returns is killed at the tool's timeout and answered; the same hang
 *   again is steered, then stopped, and each ran once inside its one activity attempt;
 * - at the `coding` profile (the run's `guard`) a healthy 70-call run is not ended by step_budget.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunResult } from '../../common/contracts';
import { guardProfile } from '../../guard';
import { shellTool } from '../../tools/shell';
import { startOpenAIServer, type OpenAIServer } from '../../testing/openai-server';
import { startHarness, type Harness } from '../helpers/run-harness';

const KEY_ENV = 'CODING_LLM_KEY';
const planner = (endpoint: string) =>
  ({ kind: 'openai', model: 'gpt-4o-mini', maxTokens: 256, endpoint }) as const;
const APPEND = "cat >> app.py <<'EOF'\ndef helper():\n    return 42\nEOF";
const call = (name: string, command: string) => ({ name, arguments: JSON.stringify({ command }) });
const finish = { name: 'complete_task', arguments: '{"summary":"done"}' };

function repo(): string {
  const dir = mkdtempSync(join(tmpdir(), 'coding-agent-'));
  const git = (...a: string[]) => execFileSync('git', ['-C', dir, ...a], { stdio: 'ignore' });
  git('init', '-q');
  writeFileSync(join(dir, 'app.py'), 'x = 1\n');
  git('add', '.');
  git('-c', 'user.email=t@t', '-c', 'user.name=t', 'commit', '-qm', 'base');
  return dir;
}

describe('a coding agent (durable, OpenAI protocol, a real shell on a git repository)', () => {
  let h: Harness;
  let dir: string;
  const servers: OpenAIServer[] = [];

  beforeAll(async () => {
    process.env[KEY_ENV] = 'sk-test-coding';
    dir = repo();
    // Appends the same block forever, note or not.
    const reapplier = await startOpenAIServer(() => ({ tool_calls: [call('shell', APPEND)] }));
    // Edits silently and re-runs the same test after each edit, then finishes.
    const editor = await startOpenAIServer((i) => {
      const steps = [
        call('shell', 'grep -c x app.py'),
        call('shell', "sed -i 's/x = 1/x = 2/' app.py"),
        call('shell', 'grep -c x app.py'),
        call('shell', "sed -i 's/x = 2/x = 3/' app.py"),
        call('shell', 'grep -c x app.py'),
        call('shell', "sed -i 's/x = 3/x = 4/' app.py"),
        call('shell', 'grep -c x app.py'),
        call('shell', "sed -i 's/x = 4/x = 5/' app.py"),
        call('shell', 'grep -c x app.py'),
      ];
      return { tool_calls: [steps[i] ?? finish] };
    });
    const broken = await startOpenAIServer(() => ({ tool_calls: [call('broken_shell', 'true')] }));
    // Runs a command that never returns, again and again.
    const hanging = await startOpenAIServer(() => ({ tool_calls: [call('quick_shell', 'sleep 600')] }));
    // 70 distinct edits (the demo world's progress source sees no shell call: the workspace
    // reports are the progress), then finishes.
    const long = await startOpenAIServer((i) => ({
      tool_calls: [i < 70 ? call('shell', `echo step ${i} > notes-${i}.txt`) : finish],
    }));
    servers.push(reapplier, editor, broken, long, hanging);
    const ep = (s: OpenAIServer) => ({ provider: 'openai', baseURL: s.baseURL, apiKeyEnv: KEY_ENV });
    process.env.AGENT_MODEL_ENDPOINTS = JSON.stringify({
      'code-reapplier': ep(reapplier),
      'code-editor': ep(editor),
      'code-broken': ep(broken),
      'code-long': ep(long),
      'code-hanging': ep(hanging),
    });
    h = await startHarness({
      tools: [
        shellTool({ cwd: dir, timeoutMs: 20_000 }),
        shellTool({ cwd: dir, name: 'quick_shell', timeoutMs: 400 }),
        shellTool({
          cwd: dir,
          name: 'broken_shell',
          fingerprint: () => {
            throw new Error('workspace unreadable');
          },
        }),
      ],
    });
  });
  afterAll(async () => {
    await h?.close();
    for (const s of servers) await s.close();
    rmSync(dir, { recursive: true, force: true });
    delete process.env[KEY_ENV];
    delete process.env.AGENT_MODEL_ENDPOINTS;
  });

  it('the same append re-applied: steered twice, stopped reapplied_edit; the shell ran twice, two copies on disk', async () => {
    const run = await h.start({
      goal: 'add a helper',
      planner: planner('code-reapplier'),
      resumeWindowMs: 500,
    });
    const result: RunResult = await run.result();
    expect(result).toMatchObject({
      terminal_state: 'STOPPED_LOOP_GUARD',
      reason: 'reapplied_edit',
      executed: 2,
    });
    expect(result.decisions.map((d) => `${d.decision}${d.reason ? `:${d.reason}` : ''}`)).toEqual([
      'execute',
      'execute',
      'steer:reapplied_edit',
      'steer:reapplied_edit',
      'stop',
    ]);
    // The counter did not move past the catch point.
    expect(await h.counters(run.workflowId)).toEqual({ shell: 2 });
    expect(readFileSync(join(dir, 'app.py'), 'utf8').match(/def helper/g)).toHaveLength(2);
    expect(result.report?.unmet_precondition).toMatch(/grew the workspace 2 times in a row/);
    execFileSync('git', ['-C', dir, 'checkout', '-q', '--', 'app.py']);
  });

  it('silent edits are progress: edit, test, edit, test … completes with no steer', async () => {
    const run = await h.start({ goal: 'fix x', planner: planner('code-editor'), resumeWindowMs: 500 });
    const result: RunResult = await run.result();
    expect(result.terminal_state).toBe('COMPLETED');
    expect(result.decisions.filter((d) => d.decision === 'steer' || d.reason)).toEqual([]);
    expect(await h.counters(run.workflowId)).toEqual({ shell: 9, complete_task: 1 });
    expect(readFileSync(join(dir, 'app.py'), 'utf8')).toBe('x = 5\n');
    execFileSync('git', ['-C', dir, 'checkout', '-q', '--', 'app.py']);
  });

  it('a fingerprint that throws: NEEDS_HUMAN workspace_unknown after one call, never FAILED', async () => {
    const run = await h.start({ goal: 'anything', planner: planner('code-broken'), resumeWindowMs: 500 });
    const result: RunResult = await run.result();
    expect(result).toMatchObject({ terminal_state: 'NEEDS_HUMAN', reason: 'workspace_unknown', executed: 1 });
    expect(result.report?.unmet_precondition).toMatch(/workspace unreadable/);
    expect(await h.counters(run.workflowId)).toEqual({ broken_shell: 1 });
  });

  it('a command that never returns: killed at the tool timeout and answered; the same hang again is steered, then stopped', async () => {
    const run = await h.start({ goal: 'wait', planner: planner('code-hanging'), resumeWindowMs: 500 });
    const result: RunResult = await run.result();
    expect(result).toMatchObject({
      terminal_state: 'STOPPED_LOOP_GUARD',
      reason: 'same_call_repeat',
      executed: 2,
    });
    // Each run was the one activity attempt (killed inside it), never retried by Temporal.
    expect(await h.counters(run.workflowId)).toEqual({ quick_shell: 2 });
  });

  it('at the coding profile a healthy 70-call run completes (the llm profile ends it at 50 steps)', async () => {
    const run = await h.start({
      goal: 'a long task',
      planner: planner('code-long'),
      guard: guardProfile('coding'),
      resumeWindowMs: 500,
    });
    const result: RunResult = await run.result();
    expect(result.terminal_state).toBe('COMPLETED');
    expect(await h.counters(run.workflowId)).toEqual({ shell: 70, complete_task: 1 });
  }, 120_000);
});
