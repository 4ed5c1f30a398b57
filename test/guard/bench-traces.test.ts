/**
 * bench:traces (issue 29 item 5) cannot silently break: committed AgentDojo transcripts of real
 * models go through the converter (bench/traces/agentdojo.ts) and `runReplay` (the code of
 * `npm run replay`) at the `llm` profile, and the decisions are the ones docs/real-agents.md
 * reports. No Temporal: the replay is pure.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runReplay } from '../../client/replay';
import type { ReplayOutcome } from '../../guard';
import { benchTraces, labelRepeat, loopCaught } from '../../bench/traces';
import {
  AGENTDOJO_DIR,
  convertRun,
  datasetFiles,
  isWriteTool,
  labelLoop,
  readDataset,
  writeReplayFiles,
  type ConvertedRun,
} from '../../bench/traces/agentdojo';

const out = mkdtempSync(join(tmpdir(), 'bench-traces-test-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

/** Converts the named runs of one data set, writes them and replays them at `profile`. */
function decide(
  dataset: string,
  names: readonly string[],
  profile = 'llm',
): Map<string, { run: ConvertedRun; outcome: ReplayOutcome }> {
  const dir = join(out, `${dataset}-${profile}`);
  const runs = writeReplayFiles(datasetFiles(AGENTDOJO_DIR, [dataset]), dir).filter((c) =>
    names.includes(c.name.split('/').slice(1).join('/')),
  );
  expect(runs).toHaveLength(names.length);
  const lines: string[] = [];
  const errors: string[] = [];
  expect(
    runReplay(
      runs.map((r) => r.path),
      (l) => lines.push(l),
      (l) => errors.push(l),
      { profile },
    ),
  ).toBe(0);
  expect(errors).toEqual([]);
  return new Map(
    runs.map((r, i) => [r.name.split('/').slice(1).join('/'), { run: r, outcome: JSON.parse(lines[i]!) }]),
  );
}

const steps = (o: ReplayOutcome): string[] =>
  o.decisions.map((d) => `${d.decision}${d.reason ? `:${d.reason}` : ''}${d.after ? `>${d.after}` : ''}`);

describe('bench:traces converter', () => {
  it('turns a recorded GPT-4o run into a replay file: calls, writes with keys, observed progress, spread time, complete_task', () => {
    const raw = readDataset(join(AGENTDOJO_DIR, 'gpt-4o-2024-05-13.jsonl.gz')).find(
      (r) => r.path === 'runs/gpt-4o-2024-05-13/banking/user_task_0/none/none.json',
    )!;
    const c = convertRun(raw);
    expect(c.success).toBe(true);
    expect(c.turns).toBe(3);
    expect(c.file.profile).toBe('llm');
    expect(c.file.tools).toEqual({ send_money: { effect: 'write' } });
    expect(c.file.calls.map((x) => x.tool)).toEqual(['read_file', 'send_money', 'complete_task']);
    expect(c.file.calls[1]!.operationKey).toMatch(/^send_money:[0-9a-f]{16}$/);
    expect(c.file.calls.map((x) => x.progressVersion)).toEqual([1, 2, 2]);
    // 3.815 s over three model turns: each call when its turn ends.
    expect(c.file.calls.map((x) => x.atMs)).toEqual([1272, 2543, 3815]);
    expect(c.file.calls[2]!.result).toEqual({ kind: 'SUCCESS', terminal: true });
    // Deterministic: the same run converts to the same bytes.
    expect(JSON.stringify(convertRun(raw).file)).toBe(JSON.stringify(c.file));
    expect(c.loop).toBeNull();
  });

  it('names writes by verb and labels a failing-call loop by the rule', () => {
    expect(
      ['send_money', 'update_password', 'create_file', 'reserve_hotel', 'post_webpage'].every(isWriteTool),
    ).toBe(true);
    expect(
      ['get_balance', 'read_file', 'search_emails', 'list_files', 'check_restaurant_opening_hours'].some(
        isWriteTool,
      ),
    ).toBe(false);
    const fail = { kind: 'FATAL', code: 'tool_error', message: 'bad' } as const;
    const call = (tool: string, result: typeof fail | { kind: 'SUCCESS' }) => ({
      tool,
      args: { a: 1 },
      atMs: 0,
      result,
      progressVersion: 0,
    });
    const tools = { pay: { effect: 'write' as const } };
    // Three identical failures with a read between: a loop; a successful write between: not.
    expect(
      labelLoop({
        tools,
        calls: [call('x', fail), call('r', { kind: 'SUCCESS' }), call('x', fail), call('x', fail)],
      }),
    ).toEqual({
      tool: 'x',
      indexes: [0, 2, 3],
    });
    expect(
      labelLoop({
        tools,
        calls: [call('x', fail), call('x', fail), call('pay', { kind: 'SUCCESS' }), call('x', fail)],
      }),
    ).toBeNull();
  });
});

describe('bench:traces decisions at the llm profile', () => {
  it('a successful GPT-4o run COMPLETES, every call executed', () => {
    const { outcome } = decide('gpt-4o-2024-05-13', ['banking/user_task_0']).get('banking/user_task_0')!;
    expect(outcome.terminal_state).toBe('COMPLETED');
    expect(steps(outcome)).toEqual(['execute>continue', 'execute>continue', 'execute>complete']);
  });

  it('the labelled loop (Claude 3 Haiku retrying get_channels with a bad argument) is steered twice, then stopped; at the default profile the first error ends it FAILED', () => {
    const llm = decide('claude-3-haiku-20240307', ['slack/user_task_3', 'workspace/user_task_5']);
    const { run, outcome } = llm.get('slack/user_task_3')!;
    expect(run.success).toBe(true); // AgentDojo's check passed: a false stop, and a genuine loop
    expect(run.loop).toEqual({ tool: 'get_channels', indexes: [1, 2, 3, 5] });
    expect(steps(outcome)).toEqual([
      'execute>continue',
      'execute>needs_changed_precondition',
      'steer:precondition_unchanged',
      'steer:precondition_unchanged',
      'execute>continue',
      'stop',
    ]);
    expect([outcome.terminal_state, outcome.reason, outcome.stopped_at]).toEqual([
      'STOPPED_LOOP_GUARD',
      'short_cycle',
      5,
    ]);
    expect(loopCaught(run.loop!, outcome)).toBe(true);
    // The same calendar read eleven times running: rule B, steered twice, stopped at the third refusal.
    const repeat = llm.get('workspace/user_task_5')!;
    expect(labelRepeat(repeat.run.file)).toEqual({ tool: 'get_day_calendar_events', indexes: [0, 1, 2] });
    expect([repeat.outcome.reason, repeat.outcome.stopped_at, repeat.outcome.executed]).toEqual([
      'same_call_repeat',
      4,
      2,
    ]);

    const old = decide('claude-3-haiku-20240307', ['slack/user_task_3'], 'default').get('slack/user_task_3')!;
    expect([old.outcome.terminal_state, old.outcome.reason, old.outcome.stopped_at]).toEqual([
      'FAILED',
      'tool_error',
      1,
    ]);
  });

  it('no_progress tells before it stops (issue 40): the re-check of three reads and the recovery by changed formats complete; the run that goes on stops', () => {
    // GPT-4o-mini reads the car types of 3 companies again (nothing new), then answers.
    const recheck = decide('gpt-4o-mini-2024-07-18', ['travel/user_task_15']).get('travel/user_task_15')!;
    expect(recheck.run.success).toBe(true);
    expect(steps(recheck.outcome).slice(-2)).toEqual(['execute:no_progress>continue', 'execute>complete']);
    expect(recheck.outcome.terminal_state).toBe('COMPLETED');
    // Command R tries six date formats the tool rejects; the seventh works.
    const formats = decide('command-r', ['travel/injection_task_2']).get('travel/injection_task_2')!;
    expect(formats.outcome.terminal_state).toBe('COMPLETED');
    expect(formats.outcome.decisions.filter((d) => d.reason === 'no_progress')).toHaveLength(1);
    // GPT-3.5 sweeps the same reads and DMs again after the note: stopped within the grace.
    const sweep = decide('gpt-3.5-turbo-0125', ['slack/user_task_13']).get('slack/user_task_13')!;
    expect([sweep.outcome.reason, sweep.outcome.stopped_at]).toEqual(['no_progress', 22]);
    expect(loopCaught(labelRepeat(sweep.run.file)!, sweep.outcome)).toBe(true);
    // At the default profile (no grace) the re-check stops as it always did.
    const old = decide('gpt-4o-mini-2024-07-18', ['travel/user_task_15'], 'default').get(
      'travel/user_task_15',
    )!;
    expect([old.outcome.reason, old.outcome.stopped_at]).toEqual(['no_progress', 8]);
  });

  it('an identical write repeated on purpose is answered from the ledger (a key made of the args)', () => {
    const { outcome } = decide('gpt-4o-mini-2024-07-18', ['banking/injection_task_6']).get(
      'banking/injection_task_6',
    )!;
    expect(steps(outcome)).toEqual([
      'execute>continue',
      'return_cached_success>continue',
      'steer:same_call_repeat',
      'steer:same_call_repeat',
      'stop',
    ]);
    expect(outcome.executed).toBe(1); // send_money ran once; the four copies never reached the tool
  });

  it('the whole bench: its figures at the llm profile', () => {
    const { rows } = benchTraces();
    const sum = (f: (r: (typeof rows)[number]) => number): number => rows.reduce((a, r) => a + f(r), 0);
    const n = (o: Record<string, number>): number => Object.values(o).reduce((a, b) => a + b, 0);
    expect(rows).toHaveLength(22);
    expect(sum((r) => r.runs)).toBe(2760);
    expect(sum((r) => r.successful)).toBe(1583);
    // 7 before issue 40; no_progress now tells first: the re-check and the format recovery complete.
    expect(sum((r) => n(r.falseStops))).toBe(5);
    // The one left is a labelled loop (rule B): 8 duplicate DMs, stopped on a ledger-answered copy.
    expect(sum((r) => r.falseStops['STOPPED_LOOP_GUARD no_progress'] ?? 0)).toBe(1);
    expect(sum((r) => r.notes)).toBe(32);
    expect(sum((r) => r.ran)).toBe(10775); // 10,666 at noProgressGrace 0: the notes cost 109 calls
    expect(sum((r) => r.loopsA.labelled)).toBe(1);
    expect(sum((r) => r.loopsA.caught)).toBe(1);
    expect(sum((r) => r.loopsB.labelled)).toBe(26);
    expect(sum((r) => r.loopsB.caught)).toBe(26);
    // Nothing successful ran into a budget at the llm profile.
    expect(rows.flatMap((r) => Object.keys(r.falseStops)).filter((k) => /budget/.test(k))).toEqual([]);
  });

  it('the converter CLI output is what npm run replay reads (labels file beside)', () => {
    const dir = join(out, 'cli');
    writeReplayFiles(datasetFiles(AGENTDOJO_DIR, ['gemini-2.0-flash-001']), dir);
    const labels = readFileSync(join(dir, 'labels.jsonl'), 'utf8').trim().split('\n');
    expect(labels).toHaveLength(132);
    const first = JSON.parse(labels[0]!) as { file: string; success: boolean };
    const lines: string[] = [];
    expect(
      runReplay(
        [first.file],
        (l) => lines.push(l),
        () => undefined,
      ),
    ).toBe(0);
    expect((JSON.parse(lines[0]!) as ReplayOutcome).profile).toBe('llm'); // the file says so
  });
});
