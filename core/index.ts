/**
 * The guarded core: what every engine and framework adapter of agent-loop-guard calls,
 * once, framework-neutral and workflow-safe (deterministic, no I/O of its own):
 *
 * - {@link GuardedRun} (core/run.ts): the guard, counters, capped decisions, trace, the stop in
 *   force with its StopReport, and the phase transitions (stop, wait, lift).
 * - {@link GuardedStep} (core/step.ts): `before` → steer / stop / cached / execute as one tagged
 *   outcome → the approval policy → (the adapter runs the tool) → {@link classify} into the five
 *   result kinds → `after`, recording the trace and applying any stop.
 * - {@link RunGate} (core/gate.ts): the stop / resume / veto gate (the kill switch, verified
 *   resumes, the wait for one), every refusal noted and audited once.
 * - {@link installRunHandlers} (core/handlers.ts) and the views (core/views.ts): the queries and
 *   updates `agentctl` uses (status, report, trace, checkpoint, resume, stop), the search
 *   attributes ({@link searchAttributesOf}) and the checkpoint bounded in bytes.
 * - {@link mayCallModel} (core/model-gate.ts): the run's budgets before a framework's model call;
 *   {@link guardOptionProblem} (core/guard-options.ts): the options every adapter checks alike.
 * - {@link FrameworkGuard} (core/framework-guard.ts): one framework loop's guard without any
 *   framework's types (each tool call one step, the approval wait, the budget and spend stops
 *   of core/budget-stops.ts, the views), which the AI SDK and OpenAI Agents adapters drive.
 *
 * An adapter keeps only its own loop: see ai-sdk/agent-guard.ts (the AI SDK drives the loop, each
 * tool call is one step) and workflows/agent-run.ts (a planner activity drives it).
 */
export { RunGate, type GateHooks } from './gate';
export { installRunHandlers, type EngineViews } from './handlers';
export { isTerminal, nextPhase, RESUMABLE } from './phase';
export {
  failureMessage,
  failureType,
  ResumeCheck,
  type GateActivities,
  type RefusalAudit,
} from './resume-check';
export { GuardedRun, MAX_DECISIONS_KEPT, type StopExtra } from './run';
export {
  classify,
  GuardedStep,
  ToolResultError,
  type BeforeOutcome,
  type StepCall,
  type Steered,
} from './step';
export { RecentCalls, steerObservation } from './steer-note';
export { approvalStopOf, type ApprovalStop, type BlockedCall, type Stop } from './stop';
export { RunTrace, type NumberedRecord, type TraceFields, type TraceStamp } from './trace';
export { guardOptionProblem, type SharedGuardOptions } from './guard-options';
export { mayCallModel } from './model-gate';
export {
  agentStateOf,
  checkpointOf,
  reportOf,
  resultOf,
  searchAttributesOf,
  statusOf,
  traceOf,
  type CheckpointBounds,
} from './views';
export { FrameworkGuard } from './framework-guard';
export { FrameworkRun } from './framework-run';
export {
  GUARD_ACTIVITY,
  GUARDED,
  guardRefusal,
  type FrameworkGuardOptions,
  type GuardedLoop,
  type GuardedWriteMeta,
  type GuardedWriteOutput,
  type GuardStopOutput,
  type WriteRule,
} from './framework-types';
export { BudgetStops, errorMessage, type ModelSpend } from './budget-stops';
export { SpendGate, spendOptionProblem, type GatedReservation, type ReportedTokens } from './spend-gate';
export { guardActivityProxy, type GuardActivities, type GuardVerifyOutput } from './guard-activities';
export { withGuardNote } from './tool-output';
