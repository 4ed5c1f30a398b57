/**
 * Steer before stop in the pure guard (docs/spec.md §3.3): which refusals steer, what a steer
 * costs, the bound on a model that ignores every note, and the state across a checkpoint.
 */
import {
  LoopGuard,
  parseReplayFile,
  replay,
  ReplayFormatError,
  type GuardCall,
  type ToolResult,
} from '../../guard';

const OK: ToolResult = { kind: 'SUCCESS' };
const call = (fingerprint: string, operationKey: string | null = null): GuardCall => ({
  tool: fingerprint.split(':')[0] as string,
  fingerprint,
  operationKey,
});

/** Proposes `fp` until the guard stops; returns the before() decisions in order. */
function propose(guard: LoopGuard, fps: readonly string[], version = 0): string[] {
  const out: string[] = [];
  for (const [i, fp] of fps.entries()) {
    const b = guard.before(call(fp), i);
    out.push(b.decision === 'steer' || b.decision === 'stop' ? `${b.decision}:${b.reason}` : b.decision);
    if (b.decision === 'stop') break;
    if (b.decision === 'steer') continue;
    const a = guard.after(call(fp), OK, version, i);
    if (a.decision === 'stop') {
      out.push(`after-stop:${a.reason}`);
      break;
    }
  }
  return out;
}

describe('steering in the guard', () => {
  it('steerLimit 0 (the default) stops exactly as before', () => {
    const g = new LoopGuard({ noProgressLimit: 10 });
    expect(propose(g, ['s:a', 's:a', 's:a'])).toEqual(['execute', 'execute', 'stop:same_call_repeat']);
    expect(g.steers).toEqual([]);
    expect(g.toJSON()).not.toHaveProperty('steers');
    expect(g.toJSON().config).not.toHaveProperty('steerLimit');
  });

  it('a model that ignores every note stops within sameCallLimit + steerLimit + 1 proposals', () => {
    for (const steerLimit of [1, 2, 3]) {
      const g = new LoopGuard({ sameCallLimit: 2, steerLimit, noProgressLimit: 50 });
      const d = propose(
        g,
        Array.from({ length: 20 }, () => 's:a'),
      );
      expect(d).toHaveLength(2 + steerLimit + 1);
      expect(d.filter((x) => x === 'execute')).toHaveLength(2);
      expect(d.at(-1)).toBe('stop:same_call_repeat');
      // Each steer cost a step: the budgets see them.
      expect(g.stepCount).toBe(2 + steerLimit);
      expect(g.steers.map((s) => s.step)).toEqual(Array.from({ length: steerLimit }, (_, i) => 3 + i));
    }
  });

  it('a steered call stays out of the window and the no-progress count', () => {
    const g = new LoopGuard({ sameCallLimit: 2, steerLimit: 1, noProgressLimit: 3 });
    expect(propose(g, ['s:a', 's:a', 's:a'])).toEqual(['execute', 'execute', 'steer:same_call_repeat']);
    expect(g.windowSize).toBe(2);
    expect(g.noProgressCount).toBe(2);
    // A new call after the steer runs; then the no-progress rule stops it at the limit.
    const b = g.before(call('s:b'), 10);
    expect(b.decision).toBe('execute');
    expect(g.after(call('s:b'), OK, 0, 10)).toMatchObject({ decision: 'stop', reason: 'no_progress' });
  });

  it('A-B-A-B and an unchanged precondition steer too; budgets and conflicts never do', () => {
    const cycle = new LoopGuard({ steerLimit: 1, noProgressLimit: 50, sameCallLimit: 5 });
    expect(propose(cycle, ['a:1', 'b:1', 'a:1', 'b:1', 'a:1'])).toEqual([
      'execute',
      'execute',
      'execute',
      'steer:short_cycle',
      // The steered B never ran, so it is not in the last three: A runs (its third time).
      'execute',
    ]);

    const pre = new LoopGuard({ steerLimit: 1, noProgressLimit: 50 });
    expect(pre.before(call('d:1'), 0).decision).toBe('execute');
    pre.after(call('d:1'), { kind: 'PRECONDITION', unmet: 'no permission' }, 0, 0);
    expect(pre.before(call('d:1'), 1)).toMatchObject({ decision: 'steer', reason: 'precondition_unchanged' });
    expect(pre.before(call('d:1'), 2)).toMatchObject({ decision: 'stop', reason: 'precondition_unchanged' });

    const budget = new LoopGuard({ steerLimit: 5, maxSteps: 2, noProgressLimit: 50 });
    expect(propose(budget, ['s:a', 's:b', 's:c'])).toEqual(['execute', 'execute', 'stop:step_budget']);

    const conflict = new LoopGuard({ steerLimit: 5 }, { completed: [['k1', 'w:other']] });
    expect(conflict.before(call('w:mine', 'k1'), 0)).toMatchObject({
      decision: 'stop',
      reason: 'idempotency_conflict',
    });
    expect(conflict.steers).toEqual([]);
  });

  it('the step budget counts steers: a steer at the last step leaves none for the next call', () => {
    const g = new LoopGuard({ steerLimit: 2, maxSteps: 3, noProgressLimit: 50 });
    expect(propose(g, ['s:a', 's:a', 's:a', 's:b'])).toEqual([
      'execute',
      'execute',
      'steer:same_call_repeat',
      'stop:step_budget',
    ]);
  });

  it('steers survive a checkpoint: the restored guard stops where the original would', () => {
    const g = new LoopGuard({ steerLimit: 1, noProgressLimit: 50 });
    propose(g, ['s:a', 's:a', 's:a']);
    const json = JSON.parse(JSON.stringify(g.toJSON())) as ReturnType<LoopGuard['toJSON']>;
    expect(json.steers).toHaveLength(1);
    const restored = LoopGuard.fromJSON(json);
    expect(restored.config.steerLimit).toBe(1);
    expect(restored.before(call('s:a'), 5)).toMatchObject({ decision: 'stop', reason: 'same_call_repeat' });
    expect(g.before(call('s:a'), 5)).toMatchObject({ decision: 'stop', reason: 'same_call_repeat' });
  });

  it('a replay file with a steerLimit of the wrong type is refused naming the field', () => {
    const file = (steerLimit: unknown) => ({ config: { steerLimit }, calls: [{ tool: 's', args: {} }] });
    for (const bad of [-1, 1.5, '2', null]) {
      expect(() => parseReplayFile(file(bad))).toThrow(ReplayFormatError);
      expect(() => parseReplayFile(file(bad))).toThrow(/steerLimit/);
    }
    expect(parseReplayFile(file(2)).config?.steerLimit).toBe(2);
  });
});

describe('no_progress tells before it stops (noProgressGrace, issue 40)', () => {
  /** Runs `n` reads that never progress; answers each after() as `decision[:note]`. */
  function idle(g: LoopGuard, n: number, start = 0): string[] {
    const out: string[] = [];
    for (let i = start; i < start + n; i += 1) {
      const c = call(`r:${i}`);
      const b = g.before(c, i);
      if (b.decision !== 'execute') return [...out, `before-${b.decision}`];
      const a = g.after(c, OK, 0, i);
      out.push(a.decision === 'stop' ? `stop:${a.reason}` : a.steer ? `${a.decision}:note` : a.decision);
      if (a.decision === 'stop') break;
    }
    return out;
  }

  it('grace 0 (the default) stops at noProgressLimit, as before', () => {
    expect(idle(new LoopGuard({ noProgressLimit: 3 }), 5)).toEqual([
      'continue',
      'continue',
      'stop:no_progress',
    ]);
  });

  it('the first reach of the limit in a window is a note; the stop comes after grace more calls without progress', () => {
    const g = new LoopGuard({ noProgressLimit: 3, noProgressGrace: 2, steerLimit: 2 });
    expect(idle(g, 10)).toEqual(['continue', 'continue', 'continue:note', 'continue', 'stop:no_progress']);
    expect(g.steers).toEqual([{ reason: 'no_progress', fingerprint: 'r:2', step: 3 }]);
    // The note cost no step of its own and left the repeat rules' steers untouched.
    expect(g.stepCount).toBe(5);
    const refused = new LoopGuard({
      noProgressLimit: 3,
      noProgressGrace: 2,
      steerLimit: 1,
      sameCallLimit: 1,
    });
    expect(idle(refused, 3)).toEqual(['continue', 'continue', 'continue:note']);
    expect(refused.before(call('r:0'), 9)).toMatchObject({ decision: 'steer', steers: 1 });
  });

  it('the note carries the count and what is left; a new window notes again, once', () => {
    const g = new LoopGuard({ noProgressLimit: 2, noProgressGrace: 3 });
    const a0 = g.after(call('r:a'), OK, 0, (g.before(call('r:a'), 0), 0));
    expect(a0).toEqual({ decision: 'continue' });
    g.before(call('r:b'), 1);
    expect(g.after(call('r:b'), OK, 0, 1)).toEqual({
      decision: 'continue',
      steer: { reason: 'no_progress', count: 2, callsLeft: 3 },
    });
    expect(idle(g, 1, 2)).toEqual(['continue']); // count 3: no second note in the window
    g.before(call('w:x'), 5);
    g.after(call('w:x'), OK, 1, 5); // progress: a new window
    expect(idle(g, 5, 10)).toEqual(['continue', 'continue:note', 'continue', 'continue', 'stop:no_progress']);
    expect(g.steers.map((s) => s.reason)).toEqual(['no_progress', 'no_progress']);
  });

  it('survives a checkpoint: a restored guard notes and stops where the original would', () => {
    const a = new LoopGuard({ noProgressLimit: 3, noProgressGrace: 2 });
    const b = new LoopGuard({ noProgressLimit: 3, noProgressGrace: 2 });
    idle(a, 3);
    idle(b, 3);
    const json = JSON.parse(JSON.stringify(b.toJSON())) as ReturnType<LoopGuard['toJSON']>;
    expect(json.config.noProgressGrace).toBe(2);
    const restored = LoopGuard.fromJSON(json);
    expect(idle(restored, 5, 3)).toEqual(idle(a, 5, 3));
    expect(new LoopGuard().toJSON().config).not.toHaveProperty('noProgressGrace');
  });

  it('the replay gives the note on the executed call (reason no_progress) and stops after the grace', () => {
    const file = parseReplayFile({
      config: { noProgressLimit: 2, noProgressGrace: 1 },
      calls: [
        { tool: 'r', args: { i: 1 }, result: OK },
        { tool: 'r', args: { i: 2 }, result: OK },
        { tool: 'r', args: { i: 3 }, result: OK },
      ],
    });
    const outcome = replay(file);
    expect(outcome.decisions).toEqual([
      { index: 0, tool: 'r', decision: 'execute', after: 'continue' },
      { index: 1, tool: 'r', decision: 'execute', after: 'continue', reason: 'no_progress' },
      { index: 2, tool: 'r', decision: 'execute', after: 'stop' },
    ]);
    expect([outcome.reason, outcome.stopped_at]).toEqual(['no_progress', 2]);
  });
});
