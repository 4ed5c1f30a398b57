/**
 * Issue 9: a long LLM run COMPLETES, per provider. A real worker (test/helpers/run-harness.ts)
 * with the real planners talks through the official SDKs to the long-run model server
 * (scripts/long-model/server.ts): one ~3 KB `write_record` note per turn, a 300,000-character
 * context window, `contextTokens: 100000` (≈ 300,000 characters at the planner's 3 chars a
 * token). Without compaction the conversation outgrows the window after ~90 turns; with it
 * every request fits, the model is asked exactly once per turn, and write_record runs
 * exactly once per note.
 */
import type { RunInput } from '../../common/contracts';
import { longRunGoal, startLongModelServer, type LongModelServer } from '../../scripts/long-model/server';
import { startHarness, type Harness } from '../helpers/run-harness';

const TURNS = 1000;
const WINDOW_CHARS = 300_000;

const ENV_KEYS = ['OPENAI_BASE_URL', 'OPENAI_API_KEY', 'ANTHROPIC_BASE_URL', 'ANTHROPIC_API_KEY'] as const;
const savedEnv = Object.fromEntries(ENV_KEYS.map((k) => [k, process.env[k]]));

let h: Harness | undefined;
let model: LongModelServer;

beforeAll(async () => {
  model = await startLongModelServer({ turns: TURNS, noteChars: 3000, windowChars: WINDOW_CHARS });
  // The planners read their endpoint and key from process.env on every turn.
  process.env.OPENAI_BASE_URL = model.baseURL;
  process.env.OPENAI_API_KEY = 'dummy';
  process.env.ANTHROPIC_BASE_URL = model.origin;
  process.env.ANTHROPIC_API_KEY = 'dummy';
});

// A fresh ledger and world per provider: the second run's notes (same ids and bodies, so the
// same operation keys) would otherwise be ledger hits, not executions.
afterEach(async () => {
  await h?.close();
});

afterAll(async () => {
  await model?.close();
  for (const k of ENV_KEYS) {
    if (savedEnv[k] === undefined) delete process.env[k];
    else process.env[k] = savedEnv[k];
  }
});

function input(kind: 'openai' | 'anthropic'): RunInput {
  return {
    goal: longRunGoal(TURNS),
    planner: { kind, model: 'long-model', contextTokens: 100_000 } as RunInput['planner'],
    guard: { maxSteps: TURNS + 50, maxMs: 1e12 },
    resumeWindowMs: 300,
  };
}

describe.each(['openai', 'anthropic'] as const)('a %s run of 1,000 note-writing turns', (kind) => {
  test('COMPLETES with write_record executed exactly 1,000 times and no request refused', async () => {
    h = await startHarness();
    const before = model.stats();
    const run = await h!.start(input(kind));
    const result = await run.result();
    const after = model.stats();
    const mine = after.perRequest.slice(before.perRequest.length);

    if (result.terminal_state !== 'COMPLETED')
      throw new Error(
        `run ended ${result.terminal_state} (${result.reason}) after ${result.executed} calls; last note ${after.lastNote}, ${after.refusedForContext - before.refusedForContext} refused`,
      );
    expect(result.terminal_state).toBe('COMPLETED');
    expect(await h!.counters(run.workflowId)).toEqual({ write_record: TURNS });
    expect(mine.every((r) => r.protocol === kind)).toBe(true);
    // One model request per turn plus the final answer; none refused, none malformed.
    expect(after.requests - before.requests).toBe(TURNS + 1);
    expect(after.refusedForContext - before.refusedForContext).toBe(0);
    expect(after.protocolErrors - before.protocolErrors).toBe(0);
    expect(after.finished - before.finished).toBe(1);
    expect(mine.map((r) => r.note)).toEqual([...Array.from({ length: TURNS }, (_, i) => i + 1), 0]);
    expect(Math.max(...mine.map((r) => r.chars))).toBeLessThanOrEqual(WINDOW_CHARS);
    // The last request holds far less than the 1,000 notes written: compaction really ran.
    expect(mine[TURNS - 1]!.chars).toBeLessThan(TURNS * 3000);
  }, 540_000);
});
