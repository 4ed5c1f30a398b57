/**
 * The activities a worker hosts, composed from one room each over a shared context
 * (activities/run/context.ts, the worker's dependencies resolved once):
 * - `plan` (ask the planner, validate and fingerprint its proposal): run/plan-activity.ts;
 * - `runTool` (run a tool; writes only through the ledger): run/run-tool-activity.ts;
 * - `verifyPrecondition` (re-check external state before a stopped run may resume),
 *   `currentProgress` and `checkPlanner`: run/verify-activity.ts;
 * - `reapLedger` (the ledger reaper's pass): reaper.ts;
 * - `saveTrace` (a long run's paged-out trace, once per continue-as-new): run/trace-activity.ts;
 * - `storeScript` (a long script's calls into the payload store): run/script-activity.ts;
 * - `verifyOperator` (operators/activities.ts) and the checkpoint seal (checkpoint-seal.ts);
 * - `markHistory`: does nothing; a run calls it as a local activity whose summary is a mark in
 *   its history (a refused call, an outcome that is not a plain success: workflows/history-marks.ts).
 */
import { checkpointKeyFromEnv, createCheckpointActivities } from './checkpoint-seal';
import { createOperatorActivities } from '../operators/activities';
import { createReaperActivities } from './reaper';
import { createActivityContext, type ActivityDeps } from './run/context';
import { createPlanActivity } from './run/plan-activity';
import { createRunToolActivity } from './run/run-tool-activity';
import { createVerifyActivity } from './run/verify-activity';
import { createTraceActivity } from './run/trace-activity';
import { ScriptCalls, type StoreScriptInput } from './run/script-activity';

export type { ActivityDeps } from './run/context';

/** Creates the activity functions over their dependencies. */
export function createActivities(deps: ActivityDeps) {
  const ctx = createActivityContext(deps);
  const scripts = new ScriptCalls(ctx.payloads);
  const { plan, prefetchPlan } = createPlanActivity(ctx, scripts);
  const { runTool } = createRunToolActivity(ctx, prefetchPlan);
  const { verifyPrecondition, currentProgress, checkPlanner, auditRefusal } = createVerifyActivity(ctx);
  const { saveTrace } = createTraceActivity(ctx);
  const { reapLedger } = createReaperActivities({ ledger: ctx.ledger, ...deps.reaper });
  return {
    plan,
    runTool,
    verifyPrecondition,
    currentProgress,
    reapLedger,
    checkPlanner,
    auditRefusal,
    saveTrace,
    storeScript: (input: StoreScriptInput) => scripts.storeScript(input),
    markHistory: async (): Promise<void> => undefined,
    ...createOperatorActivities(ctx.operators),
    ...createCheckpointActivities(deps.checkpointKey ?? checkpointKeyFromEnv()),
  };
}

/** The activity functions, for `proxyActivities<Activities>()`. */
export type Activities = ReturnType<typeof createActivities>;
