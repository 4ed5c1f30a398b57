/**
 * Small builders of `RunInput`s for the workflow tests (scripted planner).
 *
 *  - {@link live}: the script only proposes; the registered demo tools really run and
 *    count their executions in the world DB (`h.counters(workflowId)`).
 *  - {@link fixture}: the script plays the planner AND the tools (docs/spec.md §6 file); the
 *    `runTool` activity counts one "execution" per tool name instead of running a tool.
 */
import type { RunInput } from '../../common/contracts';

/** One scripted proposal (docs/spec.md §6 call). */
export interface ScriptCall {
  tool: string;
  args?: Record<string, unknown>;
  operationKey?: string | null;
  atMs?: number;
  result?: Record<string, unknown>;
  progressVersion?: number;
  usage?: { tokens: number; costUsd: number };
}

/** Short, test-friendly defaults: a stopped run closes quickly, tools fail over fast. */
const base = {
  resumeWindowMs: 300,
  timeouts: { plannerStartToCloseMs: 10_000, toolStartToCloseMs: 10_000, toolHeartbeatMs: 5_000 },
} satisfies Partial<RunInput>;

/** Live mode: the real demo tools answer. */
export function live(calls: ScriptCall[], extra: Partial<RunInput> = {}): RunInput {
  return {
    goal: 'test (live)',
    planner: { kind: 'scripted', live: true, script: { calls } },
    ...base,
    ...extra,
  };
}

/** Fixture mode: the script's own results answer. */
export function fixture(
  calls: ScriptCall[],
  extra: Partial<RunInput> = {},
  script: Record<string, unknown> = {},
): RunInput {
  return {
    goal: 'test (fixture)',
    planner: { kind: 'scripted', script: { ...script, calls } },
    ...base,
    ...extra,
  };
}

/** `search` proposal. */
export const search = (query: string, more: Record<string, unknown> = {}): ScriptCall => ({
  tool: 'search',
  args: { query, ...more },
});

/**
 * Polls `probe` until `ok` holds; errors count as "not yet" (e.g. a query sent while the
 * worker has not yet picked up the run's first task).
 */
export async function waitFor<T>(
  probe: () => Promise<T>,
  ok: (v: T) => boolean,
  timeoutMs = 20_000,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (ok(v)) return v;
      last = v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > end)
      throw new Error(
        `waitFor timed out; last: ${last instanceof Error ? last.message : JSON.stringify(last)}`,
      );
    await new Promise((r) => setTimeout(r, 50));
  }
}
