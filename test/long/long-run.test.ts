/**
 * Issue 9: a long LLM run COMPLETES, per provider. A real worker (test/helpers/run-harness.ts)
 * with the real planners talks through the official SDKs to the long-run model server
 * (scripts/long-model/server.ts): one ~3 KB `write_record` note per turn, a 300,000-character
 * context window, `contextTokens: 100000` (≈ 300,000 characters at the planner's 3 chars a
 * token). Without compaction the conversation outgrows the window after ~90 turns; with it
 * every request fits, the model is asked exactly once per turn, and write_record runs
 * exactly once per note. The two providers' runs go side by side (each waits on the server
 * and its model most of the time), not one after the other.
 */
import type { RunInput } from '../../common/contracts';
import { longRunGoal, startLongModelServer, type LongModelServer } from '../../scripts/long-model/server';
import { startHarness, type Harness } from '../helpers/run-harness';
import { runResult } from '../helpers/run-result';

const TURNS = 1000;
const WINDOW_CHARS = 300_000;
const KINDS = ['openai', 'anthropic'] as const;
type Kind = (typeof KINDS)[number];

const ENV_KEYS = ['OPENAI_BASE_URL', 'OPENAI_API_KEY', 'ANTHROPIC_BASE_URL', 'ANTHROPIC_API_KEY'] as const;
const savedEnv = Object.fromEntries(ENV_KEYS.map((k) => [k, process.env[k]]));

// The two providers run side by side, each with its own model server (its stats are its
// run's alone) and its own harness: a fresh ledger and world, since the two runs' notes (same
// ids and bodies, so the same operation keys) would otherwise be ledger hits, not executions.
const models = {} as Record<Kind, LongModelServer>;

beforeAll(async () => {
  for (const kind of KINDS)
    models[kind] = await startLongModelServer({ turns: TURNS, noteChars: 3000, windowChars: WINDOW_CHARS });
  // The planners read their endpoint and key from process.env on every turn.
  process.env.OPENAI_BASE_URL = models.openai.baseURL;
  process.env.OPENAI_API_KEY = 'dummy';
  process.env.ANTHROPIC_BASE_URL = models.anthropic.origin;
  process.env.ANTHROPIC_API_KEY = 'dummy';
});

afterAll(async () => {
  for (const kind of KINDS) await models[kind]?.close();
  for (const k of ENV_KEYS) {
    if (savedEnv[k] === undefined) delete process.env[k];
    else process.env[k] = savedEnv[k];
  }
});

function input(kind: Kind): RunInput {
  return {
    goal: longRunGoal(TURNS),
    planner: { kind, model: 'long-model', contextTokens: 100_000 } as RunInput['planner'],
    // A long job sets budgets of its own: the llm profile's tokens and cost fit a usual run (issue 29).
    guard: { maxSteps: TURNS + 50, maxMs: 1e12, maxTokens: 1e12, maxCostUsd: 1e9 },
    resumeWindowMs: 300,
  };
}

describe('a run of 1,000 note-writing turns, per provider (side by side)', () => {
  test.concurrent.each(KINDS)(
    '%s: COMPLETES with write_record executed exactly 1,000 times and no request refused',
    async (kind) => {
      const model = models[kind];
      const h: Harness = await startHarness();
      try {
        const run = await h.start(input(kind));
        const result = await runResult(run);
        const stats = model.stats();
        const mine = stats.perRequest;

        if (result.terminal_state !== 'COMPLETED')
          throw new Error(
            `run ended ${result.terminal_state} (${result.reason}) after ${result.executed} calls; last note ${stats.lastNote}, ${stats.refusedForContext} refused`,
          );
        expect(result.terminal_state).toBe('COMPLETED');
        expect(await h.counters(run.workflowId)).toEqual({ write_record: TURNS, complete_task: 1 });
        expect(mine.every((r) => r.protocol === kind)).toBe(true);
        // One model request per turn plus the final answer; none refused, none malformed.
        expect(stats.requests).toBe(TURNS + 1);
        expect(stats.refusedForContext).toBe(0);
        expect(stats.protocolErrors).toBe(0);
        expect(stats.finished).toBe(1);
        expect(mine.map((r) => r.note)).toEqual([...Array.from({ length: TURNS }, (_, i) => i + 1), 0]);
        expect(Math.max(...mine.map((r) => r.chars))).toBeLessThanOrEqual(WINDOW_CHARS);
        // The last request holds far less than the 1,000 notes written: compaction really ran.
        expect(mine[TURNS - 1]!.chars).toBeLessThan(TURNS * 3000);
      } finally {
        await h.close();
      }
    },
    540_000,
  );
});
