/**
 * Workspace reports in the pure guard (docs/spec.md §3 "Workspace reports"): a call that changed
 * the workspace is progress even when it printed nothing; the same edit re-applied on top of
 * itself is steered, then stopped (`reapplied_edit`); a report that cannot be read stops the
 * run NEEDS_HUMAN `workspace_unknown`, never FAILED. The state survives a checkpoint.
 */
import {
  CODING_PROFILE,
  guardProfile,
  LoopGuard,
  parseReplayFile,
  replay,
  ReplayFormatError,
  workspaceOf,
  type GuardCall,
  type ToolResult,
} from '../../guard';

const shell = (command: string): GuardCall => ({
  tool: 'shell',
  fingerprint: `shell:${command}`,
  effect: 'read',
});

/** A shell tool's result: the output is not modelled (the progress version stays), only the report. */
const ran = (before: string, after: string, size: number): ToolResult => ({
  kind: 'SUCCESS',
  data: { exitCode: 0, output: '' },
  workspace: { before, after, size },
});

/** Drives one proposal; answers what before() said, and after()'s stop when it stopped. */
function step(g: LoopGuard, c: GuardCall, result: ToolResult, at: number): string {
  const b = g.before(c, at);
  if (b.decision === 'stop' || b.decision === 'steer') return `${b.decision}:${b.reason}`;
  const a = g.after(c, result, 0, at);
  return a.decision === 'stop' ? `after-stop:${a.reason}` : b.decision;
}

describe('workspace reports', () => {
  it('a call that changed the workspace is progress although it printed nothing; a test run after it runs', () => {
    // Without reports: `sed -i` prints nothing, the same empty output is no progress, and the test
    // run after it is refused as a repeat although the file changed.
    const blind = new LoopGuard(guardProfile('llm'));
    const plain: ToolResult = { kind: 'SUCCESS', data: { exitCode: 0, output: '' } };
    expect(step(blind, shell('pytest'), plain, 0)).toBe('execute');
    expect(step(blind, shell("sed -i 's/a/b/' x.py"), plain, 1)).toBe('execute');
    expect(step(blind, shell('pytest'), plain, 2)).toBe('execute');
    expect(step(blind, shell("sed -i 's/b/c/' x.py"), plain, 3)).toBe('execute');
    expect(step(blind, shell('pytest'), plain, 4)).toBe('steer:same_call_repeat');

    const g = new LoopGuard(guardProfile('llm'));
    expect(step(g, shell('pytest'), ran('w0', 'w0', 0), 0)).toBe('execute');
    expect(step(g, shell("sed -i 's/a/b/' x.py"), ran('w0', 'w1', 10), 1)).toBe('execute');
    expect(step(g, shell('pytest'), ran('w1', 'w1', 10), 2)).toBe('execute');
    expect(step(g, shell("sed -i 's/b/c/' x.py"), ran('w1', 'w2', 10), 3)).toBe('execute');
    expect(step(g, shell('pytest'), ran('w2', 'w2', 10), 4)).toBe('execute');
    expect(g.noProgressCount).toBe(1);
    expect(g.steers).toEqual([]);
  });

  it('the same edit re-applied, the workspace growing by its own duplicate each time: steered, then stopped', () => {
    const g = new LoopGuard(guardProfile('llm'));
    const edit = shell("cat >> x.py <<'EOF'\ndef f(): pass\nEOF");
    const seen: string[] = [];
    let ws = 0;
    let size = 100;
    let executed = 0;
    for (let i = 0; i < 10; i++) {
      const d = step(g, edit, ran(`w${ws}`, `w${ws + 1}`, size + 14), i);
      if (d === 'execute') {
        executed += 1;
        ws += 1;
        size += 14;
      }
      seen.push(d);
      if (d.startsWith('stop')) break;
    }
    // Two applications run (sameCallLimit 2); the third and fourth are steered (steerLimit 2); the fifth stops.
    expect(seen).toEqual([
      'execute',
      'execute',
      'steer:reapplied_edit',
      'steer:reapplied_edit',
      'stop:reapplied_edit',
    ]);
    expect(executed).toBe(2);
    expect(g.stopped).toEqual({ reason: 'reapplied_edit', terminalState: 'STOPPED_LOOP_GUARD' });
  });

  it('not a re-applied edit: another change between, the same size again, or no change', () => {
    const edit = shell('python gen.py');
    // Another call changed the workspace between two applications.
    const a = new LoopGuard(guardProfile('llm'));
    const between = [
      step(a, edit, ran('w0', 'w1', 10), 0),
      step(a, shell('echo x >> y'), ran('w1', 'w2', 12), 1),
      step(a, edit, ran('w2', 'w3', 20), 2),
      step(a, shell('echo z >> y'), ran('w3', 'w4', 22), 3),
      step(a, edit, ran('w4', 'w5', 30), 4),
    ];
    expect(between.every((d) => d === 'execute')).toBe(true);
    // A generator that rewrites its output: the workspace changes but does not grow.
    const b = new LoopGuard(guardProfile('llm'));
    const same = [0, 1, 2, 3].map((i) => step(b, edit, ran(`w${i}`, `w${i + 1}`, 10), i));
    expect(same.every((d) => d === 'execute')).toBe(true);
    // An edit that changes nothing any more (`sed -i` with nothing left to match) is a plain repeat.
    const c = new LoopGuard(guardProfile('llm'));
    expect(step(c, edit, ran('w0', 'w1', 10), 0)).toBe('execute');
    expect(step(c, edit, ran('w1', 'w1', 10), 1)).toBe('execute');
    expect(step(c, edit, ran('w1', 'w1', 10), 2)).toBe('steer:same_call_repeat');
  });

  it('a fingerprint that threw, or a report off the schema, stops NEEDS_HUMAN workspace_unknown (never FAILED)', () => {
    for (const workspace of [
      { error: 'git status: not a git repository' },
      { before: 'w0', after: 'w1', size: -3 },
      { before: 'w0', size: 3 },
      { before: 'w0', after: 'w1', size: 1, extra: true },
    ]) {
      const g = new LoopGuard(guardProfile('llm'));
      expect(g.before(shell('make'), 0).decision).toBe('execute');
      const a = g.after(shell('make'), { kind: 'SUCCESS', workspace } as unknown as ToolResult, 0, 0);
      expect(a).toEqual({ decision: 'stop', reason: 'workspace_unknown', terminalState: 'NEEDS_HUMAN' });
      expect(g.lastFatalMessage).toMatch(/workspace (fingerprint|report) of shell/);
      // Nothing runs after it.
      expect(g.before(shell('make'), 1).decision).toBe('stop');
      expect(g.stepCount).toBe(1);
    }
  });

  it('the re-applied edit memory survives a checkpoint', () => {
    const g = new LoopGuard(guardProfile('llm'));
    const edit = shell('ed');
    step(g, edit, ran('w0', 'w1', 10), 0);
    step(g, edit, ran('w1', 'w2', 20), 1);
    const json = JSON.parse(JSON.stringify(g.toJSON()));
    expect(json.reapplied).toEqual([['shell:ed', { times: 2, size: 20, after: 'w2' }]]);
    const back = LoopGuard.fromJSON(json);
    expect(step(back, edit, ran('w2', 'w3', 30), 2)).toBe('steer:reapplied_edit');
    // A verified resume starts the count again, as it opens a new window.
    back.forceStop('operator_stop');
    back.resume(10);
    expect(step(back, edit, ran('w2', 'w3', 30), 11)).toBe('execute');
    // A guard that never saw a report writes no key (older states stay byte for byte).
    expect(new LoopGuard().toJSON()).not.toHaveProperty('reapplied');
  });

  it('the coding profile: a healthy 130-call run is not ended by a budget; the repeat rules are the llm profile', () => {
    const g = new LoopGuard(CODING_PROFILE);
    for (let i = 0; i < 130; i++) {
      const b = g.before({ ...shell(`cmd ${i}`), usage: { tokens: 33_000, costUsd: 0.015 } }, i * 7_000);
      expect(b.decision).toBe('execute');
      g.after(shell(`cmd ${i}`), ran(`w${i}`, `w${i + 1}`, i), 0, i * 7_000);
    }
    const llm = guardProfile('llm');
    const coding = guardProfile('coding');
    for (const k of [
      'sameCallLimit',
      'noProgressLimit',
      'noProgressGrace',
      'steerLimit',
      'keepFailures',
    ] as const)
      expect(coding[k]).toBe(llm[k]);
    expect(coding.maxSteps).toBeGreaterThan(132);
  });

  it('replay files carry workspace reports; a malformed one is a format error naming the field', () => {
    const calls = [0, 1, 2, 3].map((i) => ({
      tool: 'shell',
      args: { command: 'cat >> a <<EOF\nx\nEOF' },
      result: { kind: 'SUCCESS', workspace: { before: `w${i}`, after: `w${i + 1}`, size: 2 * (i + 1) } },
    }));
    const out = replay(parseReplayFile({ profile: 'coding', calls }));
    expect(out.decisions.map((d) => d.reason ?? d.decision)).toEqual([
      'execute',
      'execute',
      'reapplied_edit',
      'reapplied_edit',
    ]);
    expect(() =>
      parseReplayFile({
        calls: [{ tool: 'shell', result: { kind: 'SUCCESS', workspace: { before: 'a' } } }],
      }),
    ).toThrow(ReplayFormatError);
  });

  it("a framework tool's output carries its report under `workspace` (AI SDK, OpenAI Agents); other data there is left alone", () => {
    const report = { before: 'w0', after: 'w1', size: 3 };
    expect(workspaceOf({ exitCode: 0, output: '', workspace: report })).toEqual({ workspace: report });
    expect(workspaceOf({ workspace: { error: 'no git' } })).toEqual({ workspace: { error: 'no git' } });
    for (const other of [{ workspace: 'acme-slack' }, { workspace: { id: 7 } }, 'text', null, [1], {}])
      expect(workspaceOf(other)).toEqual({});
  });
});
