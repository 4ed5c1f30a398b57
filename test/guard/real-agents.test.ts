/**
 * Issue 29 in the pure guard: failure memory that new reads cannot erase (`keepFailures`), the
 * `llm` profile, waits off the wall clock, and the replay's `profile` (file field and flag),
 * with the bad input of each: an unknown profile, a negative or non-numeric budget.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runReplay } from '../../client/replay';
import {
  guardProfile,
  LLM_PROFILE,
  LoopGuard,
  normalizeCall,
  parseReplayFile,
  replay,
  ReplayFormatError,
  UnknownProfileError,
  type GuardCall,
  type GuardConfigInput,
  type ToolResult,
} from '../../guard';

const OK: ToolResult = { kind: 'SUCCESS' };
const FAIL: ToolResult = { kind: 'PRECONDITION', code: 'tool_error', unmet: 'payment method not found' };
const write = (args: unknown): GuardCall => ({
  tool: 'book',
  fingerprint: normalizeCall('book', args).fingerprint,
  effect: 'write',
});
const read = (tool: string, args: unknown): GuardCall => ({
  tool,
  fingerprint: normalizeCall(tool, args).fingerprint,
  effect: 'read',
});

/** Runs `c` (before, and after unless refused) at progress version `pv`. */
function step(g: LoopGuard, c: GuardCall, result: ToolResult, pv = g.progressVersion): string {
  const b = g.before(c, 0);
  if (b.decision === 'stop' || b.decision === 'steer') return `${b.decision}:${b.reason}`;
  return g.after(c, result, pv, 0).decision;
}

const W = write({ flight: 'AA1', pay: 'card-9' });

describe('failure memory (keepFailures)', () => {
  const cfg: GuardConfigInput = { keepFailures: true, steerLimit: 2 };

  it('a failed write retried after a new read (a think, a calculator) is still precondition_unchanged', () => {
    const g = new LoopGuard(cfg);
    expect(step(g, W, FAIL)).toBe('needs_changed_precondition');
    // Fresh read content moves the progress version: a new window opens.
    expect(step(g, read('think', { t: 'let me retry' }), OK, 1)).toBe('continue');
    expect(step(g, W, FAIL)).toBe('steer:precondition_unchanged');
    expect(step(g, read('calculate', { e: '2+2' }), OK, 2)).toBe('continue');
    expect(step(g, W, FAIL)).toBe('steer:precondition_unchanged');
    expect(step(g, read('search', { q: '' }), OK, 3)).toBe('continue');
    expect(step(g, W, FAIL)).toBe('stop:precondition_unchanged');
    expect(g.stepCount).toBe(6); // 4 executions (W once, the three reads) + 2 steers
  });

  it('without keepFailures (the default) the read erases it: the same write runs again, as before', () => {
    const g = new LoopGuard({ steerLimit: 2 });
    expect(step(g, W, FAIL)).toBe('needs_changed_precondition');
    expect(step(g, read('think', { t: 'x' }), OK, 1)).toBe('continue');
    expect(step(g, W, FAIL)).toBe('needs_changed_precondition');
  });

  it('a committed write of the run clears it: the failed write may run again', () => {
    const g = new LoopGuard(cfg);
    expect(step(g, W, FAIL)).toBe('needs_changed_precondition');
    expect(step(g, write({ addPayment: 'card-9' }), OK, 1)).toBe('continue');
    expect(step(g, W, OK, 2)).toBe('continue');
  });

  it('a verified resume clears it', () => {
    const g = new LoopGuard(cfg);
    step(g, W, FAIL);
    expect(step(g, W, FAIL)).toBe('steer:precondition_unchanged');
    g.resume(0);
    expect(step(g, read('think', { t: 'y' }), OK, 1)).toBe('continue');
    expect(step(g, W, FAIL)).toBe('needs_changed_precondition');
  });

  it('a call that changed its args is another call: it runs', () => {
    const g = new LoopGuard(cfg);
    step(g, W, FAIL);
    step(g, read('think', { t: 'z' }), OK, 1);
    expect(step(g, write({ flight: 'AA1', pay: 'card-1' }), OK, 2)).toBe('continue');
  });

  it('survives toJSON/fromJSON (a checkpoint, a continue-as-new)', () => {
    const g = new LoopGuard(cfg);
    step(g, W, FAIL);
    step(g, read('think', { t: 'q' }), OK, 1);
    const json = JSON.parse(JSON.stringify(g.toJSON()));
    expect(json.config.keepFailures).toBe(true);
    expect(json.failures).toEqual([[W.fingerprint, 1]]);
    const back = LoopGuard.fromJSON(json);
    expect(step(back, W, FAIL)).toBe('steer:precondition_unchanged');
    // A state without the fields (written before issue 29) restores as before.
    const old = new LoopGuard({}).toJSON();
    expect('failures' in old || 'keepFailures' in old.config).toBe(false);
  });

  it('the legitimate reader is never refused: new pages after a failure keep running', () => {
    const g = new LoopGuard(cfg);
    step(g, W, FAIL);
    for (let page = 1; page <= 10; page++)
      expect(step(g, read('search', { cursor: page }), OK, page)).toBe('continue');
  });
});

describe('waits off the wall clock', () => {
  it('discounted waiting time does not count; busy time still stops the run on time', () => {
    const g = new LoopGuard({ maxMs: 10_000 }, { startMs: 0 });
    const poll = read('job', { id: 1 });
    expect(g.before(poll, 1_000).decision).toBe('execute');
    g.after(poll, { kind: 'PENDING', retryAfterMs: 60_000 }, 0, 1_000);
    // The workflow waited 60 s on its durable timer and takes it off the clock.
    g.discountWait(60_000);
    expect(g.remaining(61_000).ms).toBe(9_000);
    expect(g.before(poll, 61_000).decision).toBe('execute');
    g.after(poll, OK, 1, 61_000);
    // Busy from here: 9 more seconds of the agent's own time and the clock stops it.
    expect(g.before(read('x', {}), 70_000)).toMatchObject({ decision: 'stop', reason: 'wall_clock_budget' });
    expect(JSON.parse(JSON.stringify(g.toJSON())).startMs).toBe(60_000);
  });

  it('a negative or non-finite wait changes nothing', () => {
    const g = new LoopGuard({ maxMs: 1000 }, { startMs: 0 });
    g.discountWait(-5000);
    g.discountWait(Number.NaN);
    expect(g.remaining(500).ms).toBe(500);
  });
});

describe('the llm profile', () => {
  it('is what guardProfile("llm") gives, and an unknown name is a clear error', () => {
    expect(guardProfile('llm')).toEqual({ ...LLM_PROFILE });
    expect(new LoopGuard(guardProfile('llm')).config).toMatchObject({
      maxSteps: 50,
      maxMs: 1_200_000,
      maxTokens: 2_000_000,
      maxCostUsd: 10,
      sameCallLimit: 2,
      noProgressLimit: 3,
      steerLimit: 2,
      keepFailures: true,
    });
    expect(guardProfile('default')).toEqual({});
    expect(() => guardProfile('gpt')).toThrow(UnknownProfileError);
    expect(() => guardProfile('gpt')).toThrow('unknown guard profile "gpt" (known: default, llm, coding)');
  });

  // A real conversation's pace (docs/real-agents.md): a tool call every 16 s for 6 minutes.
  const conversation = {
    calls: Array.from({ length: 22 }, (_, i) => ({
      tool: 'lookup',
      args: { n: i },
      atMs: i * 16_000,
      progressVersion: i + 1,
    })),
  };

  it('a replay file decides at the profile it names; its config still wins key by key', () => {
    expect(replay(parseReplayFile(conversation))).toMatchObject({
      terminal_state: 'STOPPED_LOOP_GUARD',
      reason: 'wall_clock_budget',
      stopped_at: 4,
    });
    const llm = replay(parseReplayFile({ ...conversation, profile: 'llm' }));
    expect(llm).toMatchObject({ terminal_state: 'PARTIAL', executed: 22, profile: 'llm' });
    const capped = replay(parseReplayFile({ ...conversation, profile: 'llm', config: { maxSteps: 10 } }));
    expect(capped).toMatchObject({ reason: 'step_budget', executed: 10 });
    // The option (the --profile flag) wins over the file's field.
    expect(
      replay(parseReplayFile({ ...conversation, profile: 'default' }), { profile: 'llm' }),
    ).toMatchObject({
      executed: 22,
    });
    // No profile: the output is as before (no `profile` key).
    expect('profile' in replay(parseReplayFile(conversation))).toBe(false);
  });

  it('at the llm profile a recorded FATAL tool_error goes to the model, as in an LLM run', () => {
    const error = { kind: 'FATAL', code: 'tool_error', message: `not enough seats sk-${'a'.repeat(20)}` };
    const file = {
      calls: [
        { tool: 'book', args: { seat: '1A' }, operationKey: 'b-1A', result: error },
        { tool: 'book', args: { seat: '1A' }, operationKey: 'b-1A', result: error },
        { tool: 'book', args: { seat: '2B' }, operationKey: 'b-2B' },
      ],
    };
    // Before: the first error ends the run FAILED.
    expect(replay(parseReplayFile(file))).toMatchObject({ terminal_state: 'FAILED', reason: 'tool_error' });
    const llm = replay(parseReplayFile(file), { profile: 'llm' });
    expect(llm.decisions.map((d) => d.after ?? `${d.decision}:${d.reason}`)).toEqual([
      'needs_changed_precondition',
      'steer:precondition_unchanged',
      'continue',
    ]);
    // A declared FATAL (another code) still stops.
    const declared = {
      calls: [{ tool: 'book', args: {}, result: { kind: 'FATAL', code: 'flight_cancelled' } }],
    };
    expect(replay(parseReplayFile(declared), { profile: 'llm' })).toMatchObject({ terminal_state: 'FAILED' });
  });

  it('bad input: an unknown profile, a negative or non-numeric budget, each named', () => {
    const bad = (v: unknown) => {
      try {
        parseReplayFile(v);
      } catch (e) {
        expect(e).toBeInstanceOf(ReplayFormatError);
        return (e as Error).message;
      }
      throw new Error('parsed');
    };
    expect(bad({ ...conversation, profile: 'fast' })).toBe(
      'profile: unknown guard profile "fast" (known: default, llm, coding)',
    );
    expect(bad({ ...conversation, config: { maxMs: -1 } })).toMatch(/^config\.maxMs: /);
    expect(bad({ ...conversation, config: { maxSteps: 'ten' } })).toMatch(/^config\.maxSteps: /);
    expect(bad({ ...conversation, config: { maxTokens: -5 } })).toMatch(/^config\.maxTokens: /);
  });

  it('the CLI: --profile llm decides every file so; an unknown --profile exits 2 and prints nothing', () => {
    const dir = mkdtempSync(join(tmpdir(), 'real-agents-replay-'));
    const file = join(dir, 'conversation.json');
    writeFileSync(file, JSON.stringify(conversation));
    const out: string[] = [];
    const err: string[] = [];
    expect(
      runReplay(
        [file],
        (l) => out.push(l),
        (l) => err.push(l),
        { profile: 'llm' },
      ),
    ).toBe(0);
    expect(JSON.parse(out[0]!)).toMatchObject({ terminal_state: 'PARTIAL', profile: 'llm' });
    out.length = 0;
    expect(
      runReplay(
        [file],
        (l) => out.push(l),
        (l) => err.push(l),
        { profile: 'turbo' },
      ),
    ).toBe(2);
    expect(out).toEqual([]);
    expect(err.join('\n')).toContain('unknown guard profile "turbo"');
  });
});
