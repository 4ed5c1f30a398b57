/**
 * Replays every trace in test/fixtures/traces through the offline replay (docs/spec.md §6) and
 * compares the outcome to the file's hand-derived `expect` block; then drives the real
 * CLI (`tsx client/replay-main.ts`) for its output and exit-code contract.
 *
 * The expectations were worked out rule by rule from docs/spec.md §3 when each fixture was
 * written, never copied from the program's output: a disagreement here means the guard
 * (or the fixture's reasoning) is wrong, and the fixture's `description` says why it
 * expects what it does.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { loadReplayFile, runReplay } from '../../client/replay';
import {
  normalizeCall,
  parseReplayFile,
  replay,
  scriptCallAt,
  stopReportSchema,
  type ReplayOutcome,
} from '../../guard';

const ROOT = resolve(__dirname, '../..');
const TRACES = join(ROOT, 'test/fixtures/traces');
const fixtureFiles = readdirSync(TRACES)
  .filter((f) => f.endsWith('.json'))
  .sort();

/** The `expect` block of a fixture: the replay output fields it asserts. */
interface Expectation {
  terminal_state: string;
  reason: string | null;
  executed: number;
  cached: number;
  stopped_at: number | null;
  decisions: Array<{ index: number; tool: string; decision: string; after?: string }>;
  /** `null`: the report must be null; an object: a subset the report must match. */
  report?: Record<string, unknown> | null;
}

function readFixture(file: string): { raw: Record<string, unknown>; expect: Expectation } {
  const raw = JSON.parse(readFileSync(join(TRACES, file), 'utf8')) as Record<string, unknown>;
  return { raw, expect: raw.expect as Expectation };
}

/** Runs the CLI exactly as an operator would; stdout/stderr as text. */
function cli(files: readonly string[]): { status: number | null; stdout: string; stderr: string } {
  const res = spawnSync('npx', ['tsx', 'client/replay-main.ts', ...files], {
    cwd: ROOT,
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
  });
  return { status: res.status, stdout: res.stdout, stderr: res.stderr };
}

describe('replay fixtures (hand-derived expectations)', () => {
  it('has the seed five and at least fifteen more fixtures', () => {
    expect(fixtureFiles.filter((f) => f.startsWith('seed-'))).toHaveLength(5);
    expect(fixtureFiles.length).toBeGreaterThanOrEqual(20);
  });

  it('covers every terminal state, every before() decision and every after() decision', () => {
    const states = new Set<string>();
    const before = new Set<string>();
    const after = new Set<string>();
    const reasons = new Set<string>();
    for (const file of fixtureFiles) {
      const { expect: e } = readFixture(file);
      states.add(e.terminal_state);
      if (e.reason) reasons.add(e.reason);
      for (const d of e.decisions) {
        before.add(d.decision);
        if (d.after) after.add(d.after);
      }
    }
    expect([...states].sort()).toEqual([
      'COMPLETED',
      'FAILED',
      'NEEDS_HUMAN',
      'PARTIAL',
      'STOPPED_LOOP_GUARD',
    ]);
    expect([...before].sort()).toEqual(['execute', 'return_cached_success', 'steer', 'stop']);
    expect([...after].sort()).toEqual([
      'complete',
      'continue',
      'needs_changed_precondition',
      'retry_after_backoff',
      'stop',
      'wait_bounded',
    ]);
    for (const reason of [
      'step_budget',
      'wall_clock_budget',
      'token_budget',
      'cost_budget',
      'wait_budget',
      'same_call_repeat',
      'short_cycle',
      'precondition_unchanged',
      'idempotency_conflict',
      'no_progress',
      'planner_exhausted',
      'permission_denied',
    ]) {
      expect(reasons).toContain(reason);
    }
  });

  describe.each(fixtureFiles)('%s', (file) => {
    const { raw, expect: want } = readFixture(file);
    let got: ReplayOutcome;

    beforeAll(() => {
      got = replay(parseReplayFile(raw));
    });

    it('has an expect block', () => {
      expect(want).toBeDefined();
    });

    it('ends in the expected terminal state with the expected reason', () => {
      expect({ terminal_state: got.terminal_state, reason: got.reason }).toEqual({
        terminal_state: want.terminal_state,
        reason: want.reason,
      });
    });

    it('executes, caches and stops exactly where expected', () => {
      expect({ executed: got.executed, cached: got.cached, stopped_at: got.stopped_at }).toEqual({
        executed: want.executed,
        cached: want.cached,
        stopped_at: want.stopped_at,
      });
    });

    it('makes the expected decision for every call read, and reads no further', () => {
      expect(got.decisions).toEqual(want.decisions);
    });

    it('reports as docs/spec.md §4 requires (null only for COMPLETED)', () => {
      if (got.terminal_state === 'COMPLETED') {
        expect(got.report).toBeNull();
        expect(got.reason).toBeNull();
      } else {
        const report = stopReportSchema.parse(got.report);
        expect(report.terminal_state).toBe(got.terminal_state);
        expect(report.guard_reason).toBe(got.reason);
        // Every executed call and every steer cost a step (docs/spec.md §3.3).
        expect(report.steps).toBe(got.executed + (report.steers?.length ?? 0));
      }
      if (want.report === null) expect(got.report).toBeNull();
      else if (want.report) expect(got.report).toMatchObject(want.report);
    });

    it('names the refused call by its fingerprint when a call ended the run', () => {
      if (got.terminal_state === 'COMPLETED' || got.stopped_at === null) return;
      const parsed = parseReplayFile(raw);
      const call = scriptCallAt(parsed.calls, got.stopped_at)!;
      const spec = parsed.tools?.[call.tool];
      const fp = normalizeCall(call.tool, call.args ?? {}, {
        defaults: spec?.defaults,
        nonSemantic: spec?.nonSemantic,
      }).fingerprint;
      expect(got.report?.blocked_call).toEqual({ tool: call.tool, fingerprint: fp });
    });

    it('gives the same line through runReplay as through replay()', () => {
      const lines: string[] = [];
      const errors: string[] = [];
      const code = runReplay(
        [join(TRACES, file)],
        (l) => lines.push(l),
        (l) => errors.push(l),
      );
      expect(code).toBe(0);
      expect(errors).toEqual([]);
      expect(lines).toEqual([JSON.stringify(got)]);
      expect(loadReplayFile(join(TRACES, file))).toEqual(parseReplayFile(raw));
    });
  });
});

describe('replay CLI (tsx client/replay-main.ts)', () => {
  let dir: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'alg-replay-'));
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('prints one JSON object for one file and exits 0', () => {
    const file = join(TRACES, 'seed-01-exact-repeat.json');
    const res = cli([file]);
    expect(res.status).toBe(0);
    expect(res.stderr).toBe('');
    const lines = res.stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    const out = JSON.parse(lines[0]!) as ReplayOutcome;
    expect(out).toMatchObject({
      terminal_state: 'STOPPED_LOOP_GUARD',
      reason: 'same_call_repeat',
      executed: 2,
      stopped_at: 2,
    });
  });

  it('prints one JSON line per file, in the order given', () => {
    const files = [...fixtureFiles].reverse().map((f) => join(TRACES, f));
    const res = cli(files);
    expect(res.status).toBe(0);
    const lines = res.stdout.trim().split('\n');
    expect(lines).toHaveLength(files.length);
    lines.forEach((line, i) => {
      const { expect: want } = readFixture(fixtureFiles[fixtureFiles.length - 1 - i]!);
      const got = JSON.parse(line) as ReplayOutcome;
      expect({ state: got.terminal_state, reason: got.reason, decisions: got.decisions }).toEqual({
        state: want.terminal_state,
        reason: want.reason,
        decisions: want.decisions,
      });
    });
  });

  const malformed: Array<[string, string, string]> = [
    ['bad JSON', '{"calls": [', '(json)|not valid JSON'],
    [
      'an unknown result kind',
      JSON.stringify({ calls: [{ tool: 'a', result: { kind: 'MAYBE' } }] }),
      'calls[0].result',
    ],
    ['a call without tool', JSON.stringify({ calls: [{ tool: 'a' }, { args: { q: 1 } }] }), 'calls[1].tool'],
    ['a non-numeric atMs', JSON.stringify({ calls: [{ tool: 'a', atMs: 'soon' }] }), 'calls[0].atMs'],
    ['an unknown config key', JSON.stringify({ config: { maxStep: 5 }, calls: [] }), 'maxStep'],
    ['a missing calls array', JSON.stringify({ name: 'x' }), 'calls'],
  ];

  it.each(malformed)(
    'rejects %s with exit 2, the file and the field on stderr and nothing on stdout',
    (_label, text, field) => {
      const file = join(dir, `bad-${_label.replace(/\W+/g, '-')}.json`);
      writeFileSync(file, text);
      const good = join(TRACES, 'seed-01-exact-repeat.json');
      // The good file comes first: it must not be printed either (validate all, then replay).
      const res = cli([good, file]);
      expect(res.status).toBe(2);
      expect(res.stdout).toBe('');
      expect(res.stderr).toContain(file);
      expect(res.stderr).toMatch(new RegExp(field.split('|').map(escapeRe).join('|')));
    },
  );

  it('replays a batch of 2,000 generated traces in one process, one line each', () => {
    const batch = join(dir, 'batch');
    mkdirSync(batch);
    const files: string[] = [];
    for (let i = 0; i < 2000; i++) {
      const file = join(batch, `t${String(i).padStart(4, '0')}.json`);
      writeFileSync(file, JSON.stringify(generatedTrace(i)));
      files.push(file);
    }
    const res = cli(files);
    expect(res.stderr).toBe('');
    expect(res.status).toBe(0);
    const lines = res.stdout.trim().split('\n');
    expect(lines).toHaveLength(2000);
    // Every line is exactly what the in-process replay says for that file, in order.
    lines.forEach((line, i) => {
      expect(line).toBe(JSON.stringify(replay(parseReplayFile(generatedTrace(i)))));
    });
  });
});

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** A small deterministic trace whose shape varies with `i` (repeats, cycles, polls, writes). */
function generatedTrace(i: number): Record<string, unknown> {
  const kinds = ['SUCCESS', 'RETRYABLE', 'PENDING', 'PRECONDITION', 'FATAL'] as const;
  const calls = [];
  const n = 1 + (i % 9);
  for (let j = 0; j < n; j++) {
    const kind = kinds[(i * 7 + j * 3) % 5 === 4 && j < n - 1 ? 0 : (i + j) % 4]!;
    const result: Record<string, unknown> = { kind };
    if (kind === 'RETRYABLE' || kind === 'PENDING') result.retryAfterMs = 100 * ((i + j) % 3);
    calls.push({
      tool: j % 3 === 2 ? 'send' : 'search',
      args: { q: `q${(i + j) % (2 + (i % 3))}` },
      operationKey: j % 3 === 2 ? `op-${i % 5}` : null,
      atMs: j * 100,
      result,
      progressVersion: (i + j) % 4 === 0 ? j : undefined,
    });
  }
  return {
    name: `gen-${i}`,
    config: { maxSteps: 5 + (i % 20) },
    tools: { send: { effect: 'write' } },
    calls,
  };
}
