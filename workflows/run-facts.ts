/**
 * What the run knows about itself, handed to the planner every turn (common/planner.ts
 * `RunFacts`): the run-state note of a compacted model request, the budgets left that the
 * money check before each model request reads (docs/spec.md §7.13), and whether the run keeps
 * room for a final word (§7.7). Bounded: counts and the newest few of each list. Workflow code.
 */
import type { RunFacts } from '../common/planner';
import { keepsFinalWordRoom } from './final-word';
import type { RunState } from './run-state';

/** How many completed keys, stops and refused resumes the planner's run facts name. */
const FACT_KEYS = 10;
const FACT_ITEMS = 5;

/** The run's facts for its next planner turn. */
export function runFacts(run: RunState): RunFacts {
  const g = run.guard;
  const trace = run.trace;
  const keys = g.completedKeys();
  const c = g.config;
  const budgetsLeft: { -readonly [K in keyof RunFacts['budgetsLeft']]: number } = {};
  if (Number.isFinite(c.maxSteps)) budgetsLeft.steps = Math.max(0, c.maxSteps - g.stepCount);
  if (Number.isFinite(c.maxTokens)) budgetsLeft.tokens = Math.max(0, c.maxTokens - g.usage.tokens);
  if (Number.isFinite(c.maxCostUsd)) budgetsLeft.costUsd = Math.max(0, c.maxCostUsd - g.usage.costUsd);
  const at = (r: { reason: string | null; step: number }) => `${r.reason ?? 'unknown'} (at step ${r.step})`;
  return {
    steps: g.stepCount,
    progressVersion: g.progressVersion,
    completedOperations: g.completedTotal,
    recentCompleted: keys.slice(-FACT_KEYS),
    stops: trace.recent(['stop'], FACT_ITEMS).map(at),
    refusedResumes: trace.recent(['resume_refused'], FACT_ITEMS).map(at),
    budgetsLeft,
    ...(keepsFinalWordRoom(run) ? { reserveFinalWord: true } : {}),
  };
}
