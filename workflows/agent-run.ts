/**
 * The agent-run workflow (docs/spec.md §7): plan → guard.before → tool → guard.after,
 * until a terminal state; a stop keeps its checkpoint and waits durably for a `resume`
 * whose precondition an activity re-verifies; long runs continue as new. The state lives
 * in {@link RunState}; the planner and every tool are activities; the guard is pure and
 * gets workflow time.
 */
import {
  ActivityFailure,
  allHandlersFinished,
  ApplicationFailure,
  condition,
  continueAsNew,
  isCancellation,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { PlanOutput } from '../activities/types';
import {
  checkpointQuery,
  reportQuery,
  resumeSignal,
  resumeUpdate,
  runInputSchema,
  statusQuery,
  stopSignal,
  traceQuery,
  type RunInput,
  type RunResult,
} from '../common/contracts';
import { GuardReason, TerminalState, type GuardCall, type ToolResult } from '../guard';
import { toObservation } from './observation';
import { runActivities } from './run-activities';
import { RunState } from './run-state';

/** Wait before re-planning after RETRYABLE/PENDING without a server-given time. */
export const DEFAULT_WAIT_MS = 1000;

/** Runs one agent job under the loop guard. */
export async function agentRun(rawInput: RunInput): Promise<RunResult> {
  const input = runInputSchema.parse(rawInput);
  const acts = runActivities(input, workflowInfo().workflowId);
  const run = new RunState(input, workflowInfo().workflowId, acts);
  setHandler(resumeSignal, (raw) => run.onResumeSignal(raw));
  setHandler(resumeUpdate, (raw) => run.resume(raw), { validator: (raw) => run.validateResume(raw) });
  setHandler(stopSignal, (raw) => run.onStopSignal(raw));
  setHandler(statusQuery, () => run.status());
  setHandler(reportQuery, () => run.report());
  setHandler(checkpointQuery, () => run.checkpoint());
  setHandler(traceQuery, (args) => run.tracePage(args));

  if (run.needsWorldVersion) run.startAt(await acts.currentProgress());
  run.publish();
  for (;;) {
    // Stopped: wait for a verified resume, then continue from the checkpoint.
    if (run.stopped && !(await run.waitForResume())) return run.finish();
    if (run.historyIsLong()) {
      await condition(allHandlersFinished);
      await continueAsNew<typeof agentRun>({ ...rawInput, checkpoint: run.checkpoint() });
    }
    if (run.applyStopRequest()) continue;

    // Plan. The checkpoint keeps the planner as it was before a proposal that did not run,
    // so a resumed run asks again (the same call may be exactly right once the world changed).
    const memoryBeforeTurn = run.memory;
    let planned: PlanOutput;
    try {
      planned = await acts.planTurn(run.memory, run.observation);
    } catch (err) {
      if (!(err instanceof ActivityFailure) || isCancellation(err)) throw err;
      // A planner that cannot answer (no key, bad auth, a broken reply, retries exhausted) is
      // a person's problem, not a reason to lose the run: stop with a checkpoint and wait.
      const cause = err.cause instanceof ApplicationFailure ? err.cause : null;
      const detail = `planner failed: ${cause?.type ? `${cause.type}: ` : ''}${cause?.message ?? err.message}`;
      const code = cause?.type ?? 'activity_failure';
      run.runtimeStop(GuardReason.PLANNER_FAILED, TerminalState.NEEDS_HUMAN, code, detail);
      continue;
    }
    run.memory = planned.memory;
    const { turn, proposal: p } = planned;
    if (turn.type === 'finish') {
      run.note('complete', 'planner_finished');
      return run.finish(TerminalState.COMPLETED, turn.summary);
    }
    if (turn.type === 'exhausted' || !p) {
      run.runtimeStop(GuardReason.PLANNER_EXHAUSTED, TerminalState.PARTIAL);
      continue;
    }
    // The kill switch is checked after planning too: a stop that arrived while the planner
    // was thinking must still prevent the next tool call.
    if (run.stopRequested) {
      run.memory = memoryBeforeTurn;
      continue;
    }
    const index = turn.scriptIndex ?? run.proposals;
    run.proposals += 1;
    const call: GuardCall = {
      tool: p.tool,
      fingerprint: p.fingerprint,
      operationKey: p.operationKey,
      usage: turn.usage,
    };
    const traced = {
      tool: p.tool,
      fingerprint: p.fingerprint,
      args: p.canonicalArgs,
      operation_key: p.operationKey,
    };
    const blocked = { tool: p.tool, fingerprint: p.fingerprint, args: p.args };

    if (!input.guardEnabled) {
      // Benchmarks only: the guard as a pass-through.
      const { result } = await acts.runTool(p);
      run.executed += 1;
      run.decide({ index, tool: p.tool, decision: 'execute', after: 'continue' });
      run.observation = toObservation(turn.callId, p.tool, result, false);
      if (result.kind === 'SUCCESS' && result.terminal) return run.finish(TerminalState.COMPLETED);
      continue;
    }

    // Guard, before. The persistent ledger is the one truth about completed writes.
    if (p.ledger && p.operationKey) run.guard.markCompleted(p.operationKey, p.ledger.fingerprint);
    const before = run.guard.before(call, Date.now());
    const refused = before.decision === 'stop' ? before.reason : null;
    run.record({
      ...traced,
      phase: 'before',
      result_kind: null,
      error_code: null,
      decision: before.decision,
      reason: refused,
    });
    if (before.decision === 'stop') {
      run.decide({ index, tool: p.tool, decision: 'stop' });
      // A guard stop ends the planner's turn; the refusal is never fed back as text to retry.
      run.memory = memoryBeforeTurn;
      run.stop(before.terminalState, before.reason, blocked, p.operationKey);
      continue;
    }

    // Tool: a cached return runs nothing; a rejected proposal is its own result.
    const isCached = before.decision === 'return_cached_success';
    let result: ToolResult;
    let progressVersion = run.guard.progressVersion;
    if (isCached) {
      run.cached += 1;
      result = run.cachedResult(p);
    } else if (p.rejection) {
      run.executed += 1;
      result = p.rejection;
    } else {
      run.executed += 1;
      const out = await acts.runTool(p);
      result = out.result;
      if (p.fixture) progressVersion = p.fixture.progressVersion ?? run.guard.progressVersion;
      else if (out.progressVersion !== null) progressVersion = out.progressVersion;
    }

    // Guard, after.
    const after = run.guard.after(call, result, progressVersion, Date.now());
    const errorCode = result.kind === 'SUCCESS' ? null : (result.code ?? null);
    const reason = after.decision === 'stop' ? after.reason : null;
    run.record({
      ...traced,
      phase: 'after',
      result_kind: result.kind,
      error_code: errorCode,
      decision: after.decision,
      reason,
    });
    run.decide({ index, tool: p.tool, decision: before.decision, after: after.decision });
    run.publish();
    // The call ran: after a resume the planner sees its result (the FATAL it got, say).
    run.observation = toObservation(turn.callId, p.tool, result, isCached);
    if (after.decision === 'stop') {
      // The StopReport is built from the guard alone, exactly as the offline replay builds it.
      run.stop(after.terminalState, after.reason, blocked, p.operationKey);
      if (result.kind === 'FATAL') run.setStopDetail(result.message ?? null);
      continue;
    }
    if (after.decision === 'complete') {
      const data = result.kind === 'SUCCESS' ? (result.data as { summary?: unknown } | undefined) : undefined;
      return run.finish(TerminalState.COMPLETED, typeof data?.summary === 'string' ? data.summary : null);
    }
    if (after.decision === 'retry_after_backoff' || after.decision === 'wait_bounded') {
      // The server-given wait, as a durable timer that ends early when an operator stops the run.
      await condition(() => run.stopRequested, after.retryAfterMs ?? DEFAULT_WAIT_MS);
    }
  }
}
