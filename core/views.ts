/**
 * What operators read of a guarded run, on any engine (docs/spec.md §7): the `status`, `report`,
 * `checkpoint` and `trace` queries and the RunResult, built from the core's {@link GuardedRun}.
 * An engine adds only its own parts (an `agentRun`'s goal, planner memory, sub-agents and
 * conversation: workflows/run-views.ts). Views only read the run; none changes it. Workflow code.
 */
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import type { Checkpoint, RunResult, RunStatus } from '../common/contracts';
import { redactText } from '../common/redact';
import { AGENT_GUARD_REASON, AGENT_STATE, AGENT_STEPS } from '../common/search-attributes';
import { stoppedAt, TerminalState, type StopReport, type TracePage, type TracePageArgs } from '../guard';
import { boundTrace, CHECKPOINT_TRACE_BYTES } from './checkpoint-bounds';
import { isTerminal } from './phase';
import type { GuardedRun } from './run';

/** The newest trace records a checkpoint carries at most (then bounded in bytes). */
export const CHECKPOINT_TRACE_RECORDS = 200;
/** The decisions and operator request ids a checkpoint carries. */
export const CHECKPOINT_DECISIONS = 1000;
export const CHECKPOINT_REQUEST_IDS = 1000;

/**
 * The `AgentState` a run shows: the state it ended in (`ended`, or its phase once terminal),
 * else its stop's terminal state while one is in force, else RUNNING (a resumed run included).
 */
export function agentStateOf(run: GuardedRun, ended: TerminalState | null = null): string {
  if (ended) return ended;
  if (isTerminal(run.phase)) return run.phase;
  return run.stopInForce?.terminalState ?? 'RUNNING';
}

/** The search attributes every engine upserts: `AgentState`, `AgentGuardReason`, `AgentSteps`. */
export function searchAttributesOf(
  run: GuardedRun,
  ended: TerminalState | null = null,
): SearchAttributeUpdatePair[] {
  return [
    { key: AGENT_STATE, value: agentStateOf(run, ended) },
    { key: AGENT_GUARD_REASON, value: run.stopInForce?.reason ?? '' },
    { key: AGENT_STEPS, value: run.guard.stepCount },
  ];
}

/** The `status` query's fields every engine has. */
export function statusOf(run: GuardedRun, goal = ''): RunStatus {
  const { phase, guard } = run;
  return {
    workflowId: run.runId,
    phase,
    terminalState: isTerminal(phase) ? phase : (run.stopInForce?.terminalState ?? null),
    guardReason: run.stopInForce?.reason ?? null,
    steps: guard.stepCount,
    steers: guard.steers.length,
    executed: run.executed,
    cached: run.cached,
    ...(run.reconciled ? { reconciled: run.reconciled } : {}),
    proposals: run.proposals,
    progressVersion: guard.progressVersion,
    noProgress: guard.noProgressCount,
    usage: { ...guard.usage },
    lastDecision: run.trace.lastDecision,
    waitingForResume: phase === 'WAITING',
    goal,
  };
}

/** The `report` query: the StopReport in force. */
export function reportOf(run: GuardedRun): StopReport | null {
  return run.stopInForce?.report ?? null;
}

/** The `trace` query: one page of the decisions kept. */
export function traceOf(run: GuardedRun, args: TracePageArgs = {}): TracePage {
  return run.trace.page(args);
}

/** How much of the run a checkpoint carries (it travels in continue-as-new input). */
export interface CheckpointBounds {
  readonly decisions: number;
  readonly requestIds: number;
  /** The most bytes of JSON its trace carries (core/checkpoint-bounds.ts; default 64 KB). */
  readonly traceBytes?: number;
  /** The records to carry instead of the newest 200: bounded in bytes all the same. */
  readonly trace?: Checkpoint['trace'];
}

/** A checkpoint's bounds on every engine unless it says otherwise (an agentRun's lean checkpoint does). */
export const DEFAULT_CHECKPOINT_BOUNDS: CheckpointBounds = {
  decisions: CHECKPOINT_DECISIONS,
  requestIds: CHECKPOINT_REQUEST_IDS,
};

/** The checkpoint's fields every engine has; an engine spreads its own parts over it. */
export function checkpointOf(
  run: GuardedRun,
  bounds: CheckpointBounds = DEFAULT_CHECKPOINT_BOUNDS,
): Checkpoint {
  const stop = run.stopInForce;
  return {
    v: 1,
    guard: run.guard.toJSON(),
    plannerMemory: null,
    observation: null,
    proposals: run.proposals,
    executed: run.executed,
    cached: run.cached,
    ...(run.reconciled ? { reconciled: run.reconciled } : {}),
    decisions: run.decisions.slice(-bounds.decisions),
    // The newest records within the byte bound, long args as previews: the copy that travels.
    trace: boundTrace(
      bounds.trace ?? run.trace.newest(CHECKPOINT_TRACE_RECORDS),
      bounds.traceBytes ?? CHECKPOINT_TRACE_BYTES,
    ),
    traceTotal: run.trace.total,
    seenRequestIds: [...run.seenRequestIds].slice(-bounds.requestIds),
    stop: stop
      ? {
          terminalState: stop.terminalState,
          reason: stop.reason,
          report: stop.report,
          blockedArgs: stop.blockedArgs,
          operationKey: stop.operationKey,
        }
      : null,
    ...(run.approvalStop ? { approvalStop: run.approvalStop } : {}),
  };
}

/** The run's result in `state`; `checkpoint`: what a stopped run leaves (null when completed). */
export function resultOf(
  run: GuardedRun,
  state: TerminalState,
  summary: string | null,
  checkpoint: Checkpoint | null,
): RunResult {
  const stop = run.stopInForce;
  const { decisions } = run;
  const completed = state === TerminalState.COMPLETED;
  const said = summary ?? (completed ? null : (stop?.detail ?? null));
  return {
    workflow_id: run.runId,
    terminal_state: state,
    reason: completed ? null : (stop?.reason ?? null),
    executed: run.executed,
    cached: run.cached,
    ...(run.reconciled ? { reconciled: run.reconciled } : {}),
    stopped_at: stoppedAt(state, stop?.reason ?? null, decisions[decisions.length - 1]?.index),
    decisions,
    report: completed ? null : (stop?.report ?? null),
    summary: said === null ? null : redactText(said),
    ...(!completed && stop?.report.final_message !== undefined
      ? { final_message: stop.report.final_message }
      : {}),
    checkpoint: completed ? null : checkpoint,
  };
}
