/**
 * The coding half of bench:traces (bench/traces/coding.ts, coding-report.ts) on small records
 * written here in the two formats it reads (the real data stays out of the repository: see
 * bench/traces/coding/SOURCE.md): the workspace a shell tool would have reported, the labels,
 * the variants and what the replay makes of them.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { convertCoding, readCodingDir, WorkspaceSim } from '../../bench/traces/coding';
import { benchCoding, codingTotal } from '../../bench/traces/coding-report';

const APPEND = "cat >> app.py <<'EOF'\ndef helper():\n    return 42\nEOF";

/** A mini-swe-agent record: one bash block per reply, `<returncode>` answers. */
function mini(commands: Array<[string, number, string]>): unknown {
  const messages: unknown[] = [
    { role: 'system', content: 'sys' },
    { role: 'user', content: 'task' },
  ];
  commands.forEach(([cmd, rc, out], i) => {
    messages.push({
      role: 'assistant',
      content: `THOUGHT: step\n\n\`\`\`bash\n${cmd}\n\`\`\``,
      extra: { response: { created: 1000 + 10 * i, usage: { total_tokens: 1000, cost: 0.001 } } },
    });
    messages.push({ role: 'user', content: `<returncode>${rc}</returncode>\n<output>\n${out}</output>` });
  });
  messages.push({
    role: 'assistant',
    content: '```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached\n```',
  });
  return { messages, info: {} };
}

describe('bench:traces --coding', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'coding-traces-'));
    const sys = join(dir, 'mini-test');
    const traj = (id: string, json: unknown) => {
      mkdirSync(join(sys, 'trajs', id), { recursive: true });
      writeFileSync(join(sys, 'trajs', id, `${id}.traj.json`), JSON.stringify(json));
    };
    // Resolved, 60 distinct commands with silent edits and a test run after each.
    const long: Array<[string, number, string]> = [];
    for (let i = 0; i < 30; i++) {
      long.push([`sed -i 's/v${i}/v${i + 1}/' app.py`, 0, '']);
      long.push(['python -m pytest -q', i < 29 ? 1 : 0, i < 29 ? `1 failed (run ${i})\n` : 'passed\n']);
    }
    traj('r__long', mini(long));
    // Unresolved: the same append again and again.
    traj('r__reapply', mini(Array.from({ length: 8 }, () => [APPEND, 0, ''] as [string, number, string])));
    writeFileSync(
      join(sys, 'results_summary.json'),
      JSON.stringify({ instances: [{ instance_id: 'r__long', resolved: true }] }),
    );
    // A SWE-agent record: an `edit` whose reply names the file's growing line count.
    const swe = join(dir, 'sweagent-test');
    mkdirSync(join(swe, 'trajs'), { recursive: true });
    mkdirSync(join(swe, 'results'), { recursive: true });
    const edit = 'edit 1:1\nimport x;\nclass A {}\nend_of_edit';
    writeFileSync(
      join(swe, 'trajs', 's__edit.traj'),
      JSON.stringify({
        trajectory: [
          { action: 'create A.java', observation: '[File: /r/A.java (1 lines total)]' },
          ...[3, 5, 7, 9, 11].map((n) => ({
            action: edit,
            observation: `[File: /r/A.java (${n} lines total)]`,
          })),
          { action: 'submit', observation: '' },
        ],
        info: { model_stats: { tokens_sent: 7000, tokens_received: 700, instance_cost: 0.07 } },
      }),
    );
    writeFileSync(join(swe, 'results', 'results.json'), JSON.stringify({ resolved: [] }));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('reconstructs what a shell tool would report: a heredoc append grows, a substitution changes once', () => {
    const sim = new WorkspaceSim();
    const a = sim.apply(APPEND, '');
    const b = sim.apply(APPEND, '');
    expect(a.before).not.toBe(a.after);
    expect(b.before).toBe(a.after);
    expect(b.size).toBeGreaterThan(a.size);
    const s1 = sim.apply("sed -i 's/a/b/' x.py", '');
    const s2 = sim.apply("sed -i 's/a/b/' x.py", '');
    expect(s1.before).not.toBe(s1.after);
    expect(s2.before).toBe(s2.after);
    expect(sim.apply('ls -la', 'x').before).toBe(sim.fingerprint());
  });

  it('reads both formats with their labels, and labels the re-applied edits', () => {
    const recs = readCodingDir(dir);
    expect(recs.map((r) => [r.name, r.resolved, r.steps.length])).toEqual([
      ['mini-test/r__long', true, 61],
      ['mini-test/r__reapply', false, 9],
      ['sweagent-test/s__edit', false, 7],
    ]);
    const reapply = convertCoding(recs[1]!, 'workspace', 'coding');
    expect(reapply.loops).toEqual([{ kind: 'reapplied', indexes: [0, 1, 2] }]);
    expect(convertCoding(recs[2]!, 'workspace', 'coding').loops.map((l) => l.kind)).toContain('reapplied');
    // The naive variant throws on the recorded non-zero exits.
    const naive = convertCoding(recs[0]!, 'naive', 'llm');
    expect(naive.file.calls.filter((c) => c.result.kind === 'FATAL')).toHaveLength(29);
  });

  it('before: the long resolved run is stopped and a re-applied edit runs on; after: it completes and they are caught', () => {
    const recs = readCodingDir(dir);
    const before = codingTotal(benchCoding(recs, 'exit-as-result', 'llm').rows);
    expect(before.falseStops).toEqual({ step_budget: 1 });
    // The silent append repeats its empty output (same_call_repeat sees it); the SWE-agent edit's
    // reply names a new line count each time, so every result is new and it runs on.
    expect(before.loops.reapplied).toMatchObject({
      labelled: 2,
      caught: 1,
      missed: ['sweagent-test/s__edit'],
    });
    const after = codingTotal(benchCoding(recs, 'workspace', 'coding').rows);
    expect(after.falseStops).toEqual({});
    expect(after.loops.reapplied).toMatchObject({ labelled: 2, caught: 2 });
    expect(after.unresolvedStopped).toEqual({ reapplied_edit: 2 });
  });
});
