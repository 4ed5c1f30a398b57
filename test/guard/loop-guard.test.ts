/**
 * The LoopGuard state machine, rule by rule (docs/spec.md §3). Each `describe` is one rule; the
 * order tests pit two rules against each other on a call both would refuse.
 */
import {
  buildStopReport,
  GuardSequenceError,
  LoopGuard,
  normalizeCall,
  stopReportSchema,
  type AfterResult,
  type BeforeResult,
  type GuardCall,
  type GuardConfigInput,
  type LoopGuardOptions,
  type ToolResult,
} from '../../guard';

const OK: ToolResult = { kind: 'SUCCESS' };

function call(tool: string, args: unknown = {}, extra: Partial<GuardCall> = {}): GuardCall {
  return { tool, fingerprint: normalizeCall(tool, args).fingerprint, ...extra };
}

interface Step {
  before: BeforeResult;
  after?: AfterResult;
}

/** One proposal: before(), and after() unless refused. `pv` defaults to "unchanged". */
function step(g: LoopGuard, c: GuardCall, result: ToolResult = OK, pv?: number, now = 0): Step {
  const before = g.before(c, now);
  if (before.decision === 'stop') return { before };
  return { before, after: g.after(c, result, pv ?? g.progressVersion, now) };
}

function guard(config: GuardConfigInput = {}, options: LoopGuardOptions = {}): LoopGuard {
  return new LoopGuard(config, options);
}

const A = call('search', { q: 'a' });
const B = call('search', { q: 'b' });
const C = call('search', { q: 'c' });
const POLL = call('job_state', { id: 'j1' });
const pending = (retryAfterMs?: number): ToolResult =>
  retryAfterMs === undefined
    ? { kind: 'PENDING', code: 'running' }
    : { kind: 'PENDING', code: 'running', retryAfterMs };

describe('configuration', () => {
  it('uses the seed-compatible defaults', () => {
    expect(guard().config).toEqual({
      maxSteps: 20,
      maxMs: 60_000,
      sameCallLimit: 2,
      steerLimit: 0,
      noProgressLimit: 3,
      maxWaitPolls: 10,
      maxTokens: Infinity,
      maxCostUsd: Infinity,
      keepFailures: false,
      noProgressGrace: 0,
    });
  });

  it('rejects an unknown config key instead of ignoring it', () => {
    expect(() => new LoopGuard({ maxStep: 3 } as GuardConfigInput)).toThrow();
  });

  it('reads a null budget as no limit', () => {
    expect(guard({ maxTokens: null, maxCostUsd: null }).config.maxTokens).toBe(Infinity);
  });
});

describe('before() rule 1: step budget', () => {
  it('stops once steps reach maxSteps', () => {
    const g = guard({ maxSteps: 2 });
    step(g, A, OK, 1);
    step(g, B, OK, 2);
    expect(g.before(C, 0)).toEqual({
      decision: 'stop',
      reason: 'step_budget',
      terminalState: 'STOPPED_LOOP_GUARD',
    });
    expect(g.stepCount).toBe(2);
  });

  it('beats the repeat rule when both would fire', () => {
    const g = guard({ maxSteps: 2 });
    step(g, A);
    step(g, A);
    expect(g.before(A, 0)).toMatchObject({ decision: 'stop', reason: 'step_budget' });
  });
});

describe('before() rule 2: wall clock', () => {
  it('stops at exactly maxMs after the run started, not before', () => {
    const g = guard({ maxMs: 1000 }, { startMs: 5000 });
    expect(step(g, A, OK, 1, 5999).before.decision).toBe('execute');
    expect(g.before(B, 6000)).toMatchObject({ decision: 'stop', reason: 'wall_clock_budget' });
  });

  it('beats the token budget', () => {
    const g = guard({ maxMs: 10, maxTokens: 1 });
    expect(g.before(call('x', {}, { usage: { tokens: 5 } }), 10)).toMatchObject({
      reason: 'wall_clock_budget',
    });
    expect(g.usage.tokens).toBe(0);
  });
});

describe('before() rule 3: token and cost budgets', () => {
  it('allows a total equal to maxTokens and stops the proposal that goes above it', () => {
    const g = guard({ maxTokens: 100 });
    expect(step(g, call('a', {}, { usage: { tokens: 60 } }), OK, 1).before.decision).toBe('execute');
    expect(step(g, call('b', {}, { usage: { tokens: 40 } }), OK, 2).before.decision).toBe('execute');
    expect(g.before(call('c', {}, { usage: { tokens: 1 } }), 0)).toMatchObject({ reason: 'token_budget' });
    expect(g.usage.tokens).toBe(101);
  });

  it('stops on cost above maxCostUsd', () => {
    const g = guard({ maxCostUsd: 0.05 });
    step(g, call('a', {}, { usage: { costUsd: 0.03 } }), OK, 1);
    expect(g.before(call('b', {}, { usage: { costUsd: 0.03 } }), 0)).toMatchObject({ reason: 'cost_budget' });
  });

  it('counts the usage of a proposal that is then refused by a later rule', () => {
    const g = guard({ maxTokens: 100 });
    step(g, call('a', {}, { usage: { tokens: 10 } }));
    step(g, call('a', {}, { usage: { tokens: 10 } }));
    expect(g.before(call('a', {}, { usage: { tokens: 10 } }), 0)).toMatchObject({
      reason: 'same_call_repeat',
    });
    expect(g.usage.tokens).toBe(30);
  });

  it('answers rule 3 alone after a charge, as the next before() would decide', () => {
    const g = guard({ maxTokens: 100, maxCostUsd: 1 });
    g.charge({ steps: 0, tokens: 100, costUsd: 0.5 });
    expect(g.usageBudgetExceeded()).toBeNull();
    g.charge({ steps: 0, tokens: 1, costUsd: 0 });
    expect(g.usageBudgetExceeded()).toBe('token_budget');
    expect(g.before(call('a', {}), 0)).toMatchObject({ reason: 'token_budget' });
    const c = guard({ maxCostUsd: 0.05 });
    c.charge({ steps: 0, tokens: 0, costUsd: 0.06 });
    expect(c.usageBudgetExceeded()).toBe('cost_budget');
  });

  it('beats the repeat rule', () => {
    const g = guard({ maxTokens: 12 });
    const a = call('a', {}, { usage: { tokens: 5 } });
    step(g, a);
    step(g, a);
    expect(g.before(a, 0)).toMatchObject({ reason: 'token_budget' });
  });
});

describe('before() rule 4: honoured re-polls and the wait budget', () => {
  it('lets a PENDING call be polled again after retryAfterMs, beyond sameCallLimit', () => {
    const g = guard();
    expect(step(g, POLL, pending(100), undefined, 0).after).toEqual({
      decision: 'wait_bounded',
      retryAfterMs: 100,
    });
    for (const t of [100, 200, 300, 400]) {
      const s = step(g, POLL, pending(100), undefined, t);
      expect(s.before).toEqual({ decision: 'execute', honouredPoll: true });
      expect(s.after?.decision).toBe('wait_bounded');
    }
    expect(g.stepCount).toBe(5);
  });

  it('does not count an executed honoured re-poll as no progress', () => {
    const g = guard();
    step(g, POLL, pending(100), undefined, 0);
    expect(g.noProgressCount).toBe(1);
    step(g, POLL, pending(100), undefined, 100);
    step(g, POLL, pending(100), undefined, 200);
    expect(g.noProgressCount).toBe(1);
  });

  it('honours a RETRYABLE with retryAfterMs the same way', () => {
    const g = guard();
    const rl: ToolResult = { kind: 'RETRYABLE', code: 'rate_limited', retryAfterMs: 2000 };
    expect(step(g, A, rl, undefined, 0).after).toEqual({
      decision: 'retry_after_backoff',
      retryAfterMs: 2000,
    });
    expect(step(g, A, rl, undefined, 2000).before).toMatchObject({ decision: 'execute', honouredPoll: true });
    expect(step(g, A, rl, undefined, 4000).before).toMatchObject({ decision: 'execute', honouredPoll: true });
  });

  it('treats a re-poll proposed before retryAfterMs as an ordinary repeat', () => {
    const g = guard();
    step(g, POLL, pending(1000), undefined, 0);
    expect(step(g, POLL, pending(1000), undefined, 999).before).toEqual({
      decision: 'execute',
      honouredPoll: false,
    });
    expect(g.before(POLL, 1500)).toMatchObject({ reason: 'same_call_repeat' });
  });

  it('measures the wait from the latest execution, not the first', () => {
    const g = guard({ sameCallLimit: 3 });
    step(g, POLL, pending(1000), undefined, 0);
    step(g, POLL, pending(1000), undefined, 500);
    // 1000 ms after the first poll but only 500 after the latest: not honoured.
    expect(step(g, POLL, pending(1000), undefined, 1000).before).toMatchObject({ honouredPoll: false });
  });

  it('never honours a PENDING or RETRYABLE without retryAfterMs', () => {
    const g = guard();
    step(g, POLL, pending(), undefined, 0);
    expect(step(g, POLL, pending(), undefined, 50_000).before).toMatchObject({ honouredPoll: false });
    expect(g.before(POLL, 59_000)).toMatchObject({ reason: 'same_call_repeat' });
  });

  it('stops the honoured re-poll after maxWaitPolls honoured polls with wait_budget, not same_call_repeat', () => {
    const g = guard({ maxWaitPolls: 2 });
    step(g, POLL, pending(10), undefined, 0);
    step(g, POLL, pending(10), undefined, 10);
    step(g, POLL, pending(10), undefined, 20);
    expect(g.before(POLL, 30)).toEqual({
      decision: 'stop',
      reason: 'wait_budget',
      terminalState: 'STOPPED_LOOP_GUARD',
    });
  });

  it('starts a new honoured-poll count after progress', () => {
    const g = guard({ maxWaitPolls: 1 });
    step(g, POLL, pending(10), undefined, 0);
    step(g, POLL, pending(10), 1, 10); // honoured, and the job moved on: new window
    expect(step(g, POLL, pending(10), undefined, 20).before).toMatchObject({
      decision: 'execute',
      honouredPoll: true,
    });
    expect(g.before(POLL, 30)).toMatchObject({ reason: 'wait_budget' });
  });

  it('exempts an honoured re-poll from the short-cycle rule', () => {
    const g = guard({ noProgressLimit: 10 });
    step(g, POLL, pending(10), 1, 0); // window: POLL
    step(g, A, OK, undefined, 0); // POLL, A
    step(g, POLL, pending(10), undefined, 0); // too early: POLL, A, POLL
    expect(g.before(A, 0)).toMatchObject({ reason: 'short_cycle' });

    const h = guard({ noProgressLimit: 10 });
    step(h, A, OK, 1, 0);
    step(h, POLL, pending(10), undefined, 0);
    step(h, A, OK, undefined, 0); // window: A, POLL, A
    expect(h.before(POLL, 10)).toEqual({ decision: 'execute', honouredPoll: true });
  });

  it('ends a no-progress run of re-polls that were never honoured', () => {
    const g = guard({ sameCallLimit: 10 });
    step(g, POLL, pending(1000), undefined, 0);
    step(g, POLL, pending(1000), undefined, 1);
    expect(step(g, POLL, pending(1000), undefined, 2).after).toMatchObject({
      decision: 'stop',
      reason: 'no_progress',
    });
  });
});

describe('before() rule 5: same call repeated in the window', () => {
  it('stops the third identical call in a window', () => {
    const g = guard();
    expect(step(g, A).after?.decision).toBe('continue');
    expect(step(g, A).after?.decision).toBe('continue');
    expect(g.before(A, 0)).toEqual({
      decision: 'stop',
      reason: 'same_call_repeat',
      terminalState: 'STOPPED_LOOP_GUARD',
    });
    expect(g.stepCount).toBe(2);
  });

  it('follows sameCallLimit', () => {
    const g = guard({ sameCallLimit: 1 });
    step(g, A);
    expect(g.before(A, 0)).toMatchObject({ reason: 'same_call_repeat' });
  });

  it('forgets repeats once progress opens a new window', () => {
    const g = guard();
    step(g, A);
    step(g, A);
    step(g, B, OK, 1);
    expect(g.windowSize).toBe(1);
    expect(step(g, A).before.decision).toBe('execute');
    expect(step(g, A).before.decision).toBe('execute');
  });

  it('counts the call that made progress as the first entry of the new window', () => {
    const g = guard();
    step(g, A, OK, 1);
    step(g, A);
    expect(g.before(A, 0)).toMatchObject({ reason: 'same_call_repeat' });
  });

  it('beats the short-cycle rule', () => {
    const g = guard({ noProgressLimit: 10 });
    for (const c of [B, C, A, B, A]) expect(step(g, c).before.decision).toBe('execute');
    // Window B C A B A: proposing B again completes A-B-A-B and is B's third occurrence.
    expect(g.before(B, 0)).toMatchObject({ reason: 'same_call_repeat' });
  });
});

describe('before() rule 6: short cycle', () => {
  it('stops the second B of A-B-A-B', () => {
    const g = guard();
    step(g, A, OK, 1);
    step(g, B);
    step(g, A);
    expect(g.before(B, 0)).toEqual({
      decision: 'stop',
      reason: 'short_cycle',
      terminalState: 'STOPPED_LOOP_GUARD',
    });
  });

  it('does not fire on A-B-A-C', () => {
    const g = guard();
    step(g, A, OK, 1);
    step(g, B);
    step(g, A);
    expect(g.before(C, 0).decision).toBe('execute');
  });

  it('needs x different from y (A-A-A is rule 5, not a cycle)', () => {
    const g = guard({ sameCallLimit: 5, noProgressLimit: 10 });
    step(g, A);
    step(g, A);
    step(g, A);
    expect(g.before(A, 0).decision).toBe('execute');
  });

  it('looks only inside the window', () => {
    const g = guard();
    step(g, A, OK, 1);
    step(g, B);
    step(g, A, OK, 2); // progress: window is just A
    expect(g.before(B, 0).decision).toBe('execute');
  });
});

describe('before() rule 7: precondition unchanged', () => {
  const unmet: ToolResult = { kind: 'PRECONDITION', code: 'approval_missing', unmet: 'approval for prod' };
  const DEPLOY = call('deploy', { env: 'prod' });

  it('refuses the same call after a PRECONDITION result until something progressed', () => {
    const g = guard();
    expect(step(g, DEPLOY, unmet).after).toEqual({ decision: 'needs_changed_precondition' });
    expect(g.before(DEPLOY, 0)).toMatchObject({ reason: 'precondition_unchanged' });
    expect(g.lastUnmetPrecondition).toBe('approval for prod');
  });

  it('allows it again once progress opened a new window', () => {
    const g = guard();
    step(g, DEPLOY, unmet);
    step(g, call('request_approval'), OK, 1);
    expect(g.before(DEPLOY, 0).decision).toBe('execute');
  });

  it('does not block other calls', () => {
    const g = guard();
    step(g, DEPLOY, unmet);
    expect(g.before(call('deploy', { env: 'staging' }), 0).decision).toBe('execute');
  });

  it('comes after the repeat rule', () => {
    const g = guard({ sameCallLimit: 1 });
    step(g, DEPLOY, unmet);
    expect(g.before(DEPLOY, 0)).toMatchObject({ reason: 'same_call_repeat' });
  });
});

describe('before() rule 8: the completed ledger', () => {
  const SEND = call('send', { to: 'ops', text: 'disk full' }, { operationKey: 'inc-1:notify' });

  it('answers a finished operation from the ledger without using a step', () => {
    const g = guard();
    step(g, SEND, OK, 1);
    const s = step(g, SEND, OK, 99);
    expect(s.before).toEqual({ decision: 'return_cached_success', honouredPoll: false });
    expect(s.after).toEqual({ decision: 'continue' });
    expect(g.stepCount).toBe(1);
    // The cached return ignored the claimed version and counted as no progress.
    expect(g.progressVersion).toBe(1);
    expect(g.noProgressCount).toBe(1);
  });

  it('lets the cached return enter the window, so the third proposal is a repeat', () => {
    const g = guard();
    step(g, SEND, OK, 1);
    step(g, SEND);
    expect(g.before(SEND, 0)).toMatchObject({ reason: 'same_call_repeat' });
  });

  it('stops a planner that only proposes finished operations with no_progress', () => {
    const g = guard({}, { completed: ['k1', 'k2', 'k3'] });
    expect(step(g, call('a', {}, { operationKey: 'k1' })).after?.decision).toBe('continue');
    expect(step(g, call('b', {}, { operationKey: 'k2' })).after?.decision).toBe('continue');
    expect(step(g, call('c', {}, { operationKey: 'k3' })).after).toMatchObject({ reason: 'no_progress' });
    expect(g.stepCount).toBe(0);
  });

  it('stops the same key with other args as idempotency_conflict, NEEDS_HUMAN', () => {
    const g = guard();
    step(g, SEND, OK, 1);
    const other = call('send', { to: 'ops', text: 'disk full!!' }, { operationKey: 'inc-1:notify' });
    expect(g.before(other, 0)).toEqual({
      decision: 'stop',
      reason: 'idempotency_conflict',
      terminalState: 'NEEDS_HUMAN',
    });
  });

  it('lets a key known only by name (resume) match any call', () => {
    const g = guard({}, { completed: ['inc-1:notify'] });
    expect(g.before(call('anything', { x: 1 }, { operationKey: 'inc-1:notify' }), 0).decision).toBe(
      'return_cached_success',
    );
  });

  it('keeps the fingerprint of a key given with one', () => {
    const g = guard({}, { completed: [['inc-1:notify', SEND.fingerprint]] });
    expect(g.before(call('send', { other: 1 }, { operationKey: 'inc-1:notify' }), 0)).toMatchObject({
      reason: 'idempotency_conflict',
    });
  });

  it('records a key only for a SUCCESS', () => {
    const g = guard({ noProgressLimit: 10 });
    step(g, call('w', { a: 1 }, { operationKey: 'k' }), { kind: 'RETRYABLE', code: 'x' });
    step(g, call('w', { a: 2 }, { operationKey: 'k' }), { kind: 'PRECONDITION', code: 'y' });
    expect(g.isCompleted('k')).toBe(false);
    step(g, call('w', { a: 3 }, { operationKey: 'k' }));
    expect(g.completedKeys()).toEqual(['k']);
  });
});

describe('before() rule 9: execute', () => {
  it('executes anything else and counts a step', () => {
    const g = guard();
    expect(g.before(A, 0)).toEqual({ decision: 'execute', honouredPoll: false });
    expect(g.stepCount).toBe(1);
  });
});

describe('after() rule 1: progress and the window', () => {
  it('opens a new window and resets the no-progress count when the version rises', () => {
    const g = guard({ noProgressLimit: 10 });
    step(g, A);
    step(g, B);
    expect(g.windowSize).toBe(2);
    expect(g.noProgressCount).toBe(2);
    step(g, C, OK, 4);
    expect(g.windowSize).toBe(1);
    expect(g.noProgressCount).toBe(0);
    expect(g.progressVersion).toBe(4);
  });

  it('counts an unchanged or lower version as no progress', () => {
    const g = guard({ noProgressLimit: 10 }, { initialProgressVersion: 5 });
    step(g, A, OK, 5);
    step(g, B, OK, 3);
    expect(g.noProgressCount).toBe(2);
    expect(g.progressVersion).toBe(5);
  });

  it('reads a first result at the checkpoint version as no progress after a resume', () => {
    const g = guard({}, { initialProgressVersion: 7 });
    step(g, A, OK, 7);
    expect(g.noProgressCount).toBe(1);
  });
});

describe('after() rule 2: FATAL', () => {
  it.each(['permission_denied', 'policy_blocked', 'needs_human'])('ends NEEDS_HUMAN for %s', (code) => {
    const g = guard();
    expect(step(g, A, { kind: 'FATAL', code }).after).toEqual({
      decision: 'stop',
      reason: code,
      terminalState: 'NEEDS_HUMAN',
    });
  });

  it('ends FAILED for any other code, and reads a missing code as "fatal"', () => {
    expect(step(guard(), A, { kind: 'FATAL', code: 'disk_gone' }).after).toMatchObject({
      reason: 'disk_gone',
      terminalState: 'FAILED',
    });
    expect(step(guard(), A, { kind: 'FATAL' }).after).toMatchObject({
      reason: 'fatal',
      terminalState: 'FAILED',
    });
  });

  it('beats no_progress', () => {
    const g = guard();
    step(g, A);
    step(g, B);
    expect(step(g, C, { kind: 'FATAL', code: 'permission_denied' }).after).toMatchObject({
      terminalState: 'NEEDS_HUMAN',
    });
  });
});

describe('after() rule 3: SUCCESS and terminal', () => {
  it('completes on a terminal SUCCESS, even on the third no-progress result', () => {
    const g = guard();
    step(g, A);
    step(g, B);
    expect(step(g, C, { kind: 'SUCCESS', terminal: true }).after).toEqual({ decision: 'complete' });
  });

  it('records the key of a terminal write before completing', () => {
    const g = guard();
    step(g, call('w', {}, { operationKey: 'final' }), { kind: 'SUCCESS', terminal: true });
    expect(g.isCompleted('final')).toBe(true);
  });
});

describe('after() rule 4: no progress', () => {
  it('stops on the noProgressLimit-th result without progress', () => {
    const g = guard();
    step(g, A);
    step(g, B);
    expect(step(g, C).after).toEqual({
      decision: 'stop',
      reason: 'no_progress',
      terminalState: 'STOPPED_LOOP_GUARD',
    });
    expect(g.stepCount).toBe(3);
  });
});

describe('after() rule 5: what the runtime does next', () => {
  it('maps each result kind to its own decision', () => {
    expect(step(guard(), A, OK).after).toEqual({ decision: 'continue' });
    expect(step(guard(), A, { kind: 'RETRYABLE', code: 'x' }).after).toEqual({
      decision: 'retry_after_backoff',
    });
    expect(step(guard(), A, { kind: 'RETRYABLE', code: 'x', retryAfterMs: 5 }).after).toEqual({
      decision: 'retry_after_backoff',
      retryAfterMs: 5,
    });
    expect(step(guard(), A, { kind: 'PENDING', retryAfterMs: 7 }).after).toEqual({
      decision: 'wait_bounded',
      retryAfterMs: 7,
    });
    expect(step(guard(), A, { kind: 'PRECONDITION', unmet: 'x' }).after).toEqual({
      decision: 'needs_changed_precondition',
    });
  });
});

describe('stops', () => {
  it('are sticky: every later proposal gets the same stop', () => {
    const g = guard();
    step(g, A);
    step(g, A);
    const first = g.before(A, 0);
    expect(g.before(B, 0)).toEqual(first);
    expect(g.stopped).toEqual({ reason: 'same_call_repeat', terminalState: 'STOPPED_LOOP_GUARD' });
  });

  it('can be forced by the runtime (planner exhausted, operator stop)', () => {
    const g = guard();
    expect(g.forceStop('planner_exhausted', 'PARTIAL')).toEqual({
      decision: 'stop',
      reason: 'planner_exhausted',
      terminalState: 'PARTIAL',
    });
    expect(g.before(A, 0)).toMatchObject({ reason: 'planner_exhausted' });
  });
});

describe('GuardSequenceError', () => {
  it('is thrown for before() twice without after()', () => {
    const g = guard();
    g.before(A, 0);
    expect(() => g.before(B, 0)).toThrow(GuardSequenceError);
  });

  it('is thrown for after() without before()', () => {
    expect(() => guard().after(A, OK, 0, 0)).toThrow(GuardSequenceError);
  });

  it('is thrown for after() of another call than the one let through', () => {
    const g = guard();
    g.before(A, 0);
    expect(() => g.after(B, OK, 0, 0)).toThrow(GuardSequenceError);
  });

  it('is thrown for after() of a refused call', () => {
    const g = guard({ maxSteps: 1 });
    step(g, A, OK, 1);
    expect(g.before(B, 0).decision).toBe('stop');
    expect(() => g.after(B, OK, 0, 0)).toThrow(GuardSequenceError);
  });
});

describe('toJSON / fromJSON', () => {
  it('round-trips through JSON text to an identical state', () => {
    const g = guard({ maxTokens: 500, maxWaitPolls: 3 }, { completed: ['done'], initialProgressVersion: 2 });
    step(g, call('w', {}, { operationKey: 'k', usage: { tokens: 10, costUsd: 0.01 } }), OK, 3);
    step(g, POLL, pending(100), undefined, 5);
    step(g, call('d'), { kind: 'PRECONDITION', unmet: 'x' });
    const json = JSON.parse(JSON.stringify(g.toJSON()));
    const restored = LoopGuard.fromJSON(json);
    expect(restored.toJSON()).toEqual(g.toJSON());
    expect(restored.config).toEqual(g.config);
    expect(restored.config.maxCostUsd).toBe(Infinity);
  });

  it('makes the same decisions after a restore as the original', () => {
    const script: Array<[GuardCall, ToolResult, number | undefined, number]> = [
      [POLL, pending(100), undefined, 100],
      [C, OK, undefined, 150],
      [POLL, pending(100), undefined, 200],
      [B, OK, undefined, 210],
      [A, OK, undefined, 220],
      [B, OK, undefined, 230],
      [A, OK, undefined, 240],
    ];
    const original = guard({ noProgressLimit: 10 });
    step(original, POLL, pending(100), undefined, 0);
    const restored = LoopGuard.fromJSON(JSON.parse(JSON.stringify(original.toJSON())));
    for (const [c, r, pv, t] of script)
      expect(step(restored, c, r, pv, t)).toEqual(step(original, c, r, pv, t));
    expect(original.stopped).toMatchObject({ reason: 'short_cycle' });
  });

  it('restores a state taken between before() and after()', () => {
    const g = guard();
    g.before(A, 0);
    const restored = LoopGuard.fromJSON(JSON.parse(JSON.stringify(g.toJSON())));
    expect(restored.after(A, OK, 1, 0)).toEqual({ decision: 'continue' });
    expect(() => restored.before(B, 0)).not.toThrow();
  });

  it('refuses a state of an unknown version', () => {
    expect(() => LoopGuard.fromJSON({ v: 2 } as never)).toThrow(TypeError);
  });
});

describe('resume()', () => {
  it('lifts the stop, opens a new window and keeps the progress version and the ledger', () => {
    const g = guard();
    step(g, call('w', {}, { operationKey: 'k' }), OK, 4);
    step(g, A);
    step(g, A);
    g.before(A, 0);
    expect(g.stopped).not.toBeNull();
    g.resume(1000);
    expect(g.stopped).toBeNull();
    expect(g.windowSize).toBe(0);
    expect(g.noProgressCount).toBe(0);
    expect(g.progressVersion).toBe(4);
    expect(g.isCompleted('k')).toBe(true);
    expect(g.before(A, 1000).decision).toBe('execute');
  });

  it('restarts the wall clock at the resume time', () => {
    const g = guard({ maxMs: 100 });
    step(g, A, OK, 1, 0);
    expect(g.before(B, 100)).toMatchObject({ reason: 'wall_clock_budget' });
    g.resume(5000);
    expect(g.before(B, 5099).decision).toBe('execute');
  });

  it('raises budgets but never lowers them', () => {
    const g = guard({ maxSteps: 1 });
    step(g, A, OK, 1);
    expect(g.before(B, 0)).toMatchObject({ reason: 'step_budget' });
    g.resume(0, { maxSteps: 3, maxMs: 10 });
    expect(g.config.maxSteps).toBe(3);
    expect(g.config.maxMs).toBe(60_000);
    expect(g.before(B, 0).decision).toBe('execute');
  });

  it('forgets pending re-poll timing, so the first poll after a resume is an ordinary call', () => {
    const g = guard();
    step(g, POLL, pending(10), undefined, 0);
    g.resume(100);
    expect(g.before(POLL, 100)).toEqual({ decision: 'execute', honouredPoll: false });
  });
});

describe('StopReport', () => {
  it('carries every docs/spec.md §4 field and validates against stopReportSchema', () => {
    const g = guard({}, { completed: ['earlier'] });
    step(g, call('w', {}, { operationKey: 'k' }), OK, 2);
    const D = call('deploy', { env: 'prod' });
    step(g, D, { kind: 'PRECONDITION', code: 'approval', unmet: 'approval for prod' });
    const stop = g.before(D, 0);
    expect(stop.decision).toBe('stop');
    if (stop.decision !== 'stop') return;
    const report = stopReportSchema.parse(
      buildStopReport(g, {
        terminalState: stop.terminalState,
        reason: stop.reason,
        blockedCall: { tool: D.tool, fingerprint: D.fingerprint },
      }),
    );
    expect(report).toEqual({
      terminal_state: 'STOPPED_LOOP_GUARD',
      guard_reason: 'precondition_unchanged',
      completed: ['earlier', 'k'],
      last_safe_checkpoint: 'checkpoint-2',
      unmet_precondition: 'approval for prod',
      resume_condition: expect.any(String),
      next_allowed_action: 'resume_from_checkpoint',
      steps: 2,
      last_progress_version: 2,
      blocked_call: { tool: 'deploy', fingerprint: D.fingerprint },
    });
  });

  it('offers no resume for FAILED and a partial delivery for PARTIAL', () => {
    const g = guard();
    step(g, A, { kind: 'FATAL', code: 'corrupt' });
    const failed = stopReportSchema.parse(buildStopReport(g, { terminalState: 'FAILED', reason: 'corrupt' }));
    expect(failed).toMatchObject({ resume_condition: null, next_allowed_action: 'none', blocked_call: null });
    const partial = stopReportSchema.parse(
      buildStopReport(guard(), { terminalState: 'PARTIAL', reason: 'planner_exhausted' }),
    );
    expect(partial.next_allowed_action).toBe('deliver_partial_result');
  });

  it('names the budget in the unmet precondition of a budget stop', () => {
    const g = guard({ maxSteps: 1 });
    step(g, A, OK, 1);
    g.before(B, 0);
    const report = buildStopReport(g, { terminalState: 'STOPPED_LOOP_GUARD', reason: 'step_budget' });
    expect(report.unmet_precondition).toContain('1');
    expect(report.resume_condition).toContain('step');
  });
});
