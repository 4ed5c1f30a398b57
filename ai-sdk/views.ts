/**
 * What agentctl and the console read of an AI SDK agent's guard (ai-sdk/agent-guard.ts): the
 * `status` and `checkpoint` queries and the workflow's result, in the shapes of an `agentRun`
 * (common/contracts.ts). Workflow code, pure.
 */
import { workflowInfo } from '@temporalio/workflow';
import type { Checkpoint, RunDecision, RunResult, RunStatus } from '../common/contracts';
import { TerminalState, type LoopGuard } from '../guard';
import type { Stop } from '../workflows/resume-check';

/** The guard's state the views are built from. */
export interface GuardViews {
  readonly guard: LoopGuard;
  readonly stop: Stop | null;
  /** Whether the run waits for a resume now (a gated call, or `untilResumed`). */
  readonly waiting: boolean;
  readonly proposals: number;
  readonly executed: number;
  readonly cached: number;
  readonly decisions: readonly RunDecision[];
  readonly lastDecision: string | null;
}

/** The `status` query's answer. */
export function statusOf(v: GuardViews): RunStatus {
  const s = v.stop;
  return {
    workflowId: workflowInfo().workflowId,
    phase: s ? s.terminalState : 'RUNNING',
    terminalState: s?.terminalState ?? null,
    guardReason: s?.reason ?? null,
    steps: v.guard.stepCount,
    steers: v.guard.steers.length,
    executed: v.executed,
    cached: v.cached,
    proposals: v.proposals,
    progressVersion: v.guard.progressVersion,
    noProgress: v.guard.noProgressCount,
    usage: { ...v.guard.usage },
    lastDecision: v.lastDecision,
    waitingForResume: s !== null && v.waiting,
    goal: '',
  };
}

/**
 * The `checkpoint` query's answer: what `agentctl approvals` reads (the stop, its blocked call
 * with its digest, and the call's args). It carries no seal: it is read, never given back.
 */
export function checkpointOf(v: GuardViews): Checkpoint {
  const s = v.stop;
  return {
    v: 1,
    guard: v.guard.toJSON(),
    plannerMemory: null,
    observation: null,
    proposals: v.proposals,
    executed: v.executed,
    cached: v.cached,
    decisions: [...v.decisions],
    trace: [],
    traceTotal: 0,
    seenRequestIds: [],
    stop: s
      ? {
          terminalState: s.terminalState,
          reason: s.reason,
          report: s.report,
          blockedArgs: s.blockedArgs,
          operationKey: s.operationKey,
        }
      : null,
  };
}

/** The workflow's result in the shape agentctl reads for a closed run. */
export function resultOf(v: GuardViews, summary: string | null): RunResult {
  const s = v.stop;
  const last = v.decisions[v.decisions.length - 1];
  return {
    workflow_id: workflowInfo().workflowId,
    terminal_state: s?.terminalState ?? TerminalState.COMPLETED,
    reason: s?.reason ?? null,
    executed: v.executed,
    cached: v.cached,
    stopped_at: s && last ? last.index : null,
    decisions: [...v.decisions],
    report: s?.report ?? null,
    summary,
    checkpoint: null,
    usage: {
      steps: v.guard.stepCount,
      tokens: v.guard.usage.tokens,
      cost_usd: v.guard.usage.costUsd,
    },
  } as RunResult;
}
