/**
 * The agent-run workflow (SPEC §7): planner → guard.before → tool → guard.after, until a
 * terminal state. Deterministic: the planner and every tool are activities; the guard is
 * pure and gets workflow time; a stop keeps a checkpoint and waits durably for a
 * `resume` whose precondition is re-verified by an activity.
 */
import {
  ActivityFailure,
  allHandlersFinished,
  ApplicationFailure,
  condition,
  continueAsNew,
  isCancellation,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
  type ActivityOptions,
} from '@temporalio/workflow';
import type { Activities } from '../activities/create-activities';
import type { PlanOutput, ProposalInfo, RunToolOutput } from '../activities/types';
import {
  checkpointQuery,
  reportQuery,
  resumeRequestSchema,
  resumeSignal,
  resumeUpdate,
  runInputSchema,
  statusQuery,
  stopRequestSchema,
  stopSignal,
  traceQuery,
  type Checkpoint,
  type ResumeAnswer,
  type ResumeRequest,
  type RunDecision,
  type RunInput,
  type RunPhase,
  type RunResult,
  type RunStatus,
  type StopRequest,
  type TracePageArgs,
} from '../common/contracts';
import { NON_RETRYABLE_PLANNER_ERRORS, type Observation } from '../common/planner';
import { redact } from '../common/redact';
import { AGENT_GUARD_REASON, AGENT_STATE, AGENT_STEPS } from '../common/search-attributes';
import {
  BUDGET_REASONS,
  buildStopReport,
  LoopGuard,
  TerminalState,
  type GuardCall,
  type StopReport,
  type ToolResult,
  type TraceRecord,
  parseReplayFile,
} from '../guard';

/** FATAL codes from the ledger that need a person, beyond SPEC §2's three. */
const RUNTIME_NEEDS_HUMAN = ['outcome_unknown', 'idempotency_conflict'];
/** Wait before re-planning after RETRYABLE/PENDING without a server-given time. */
const DEFAULT_WAIT_MS = 1000;
const MAX_DECISIONS_KEPT = 5000;
/** What a checkpoint carries of the trace and decisions: it travels in continue-as-new input. */
const CHECKPOINT_TRACE = 200;
const CHECKPOINT_DECISIONS = 1000;

interface StopInfo {
  terminalState: TerminalState;
  reason: string;
  report: StopReport;
  blockedTool: string | null;
  /** The args of the call that ended the run, so resume can re-check that call's precondition. */
  blockedArgs: unknown;
  operationKey: string | null;
}

/** Runs one agent job under the loop guard. */
export async function agentRun(rawInput: RunInput): Promise<RunResult> {
  const input = runInputSchema.parse(rawInput);
  const info = workflowInfo();
  const runId = info.workflowId;
  const t = input.timeouts;

  const planOptions: ActivityOptions = {
    startToCloseTimeout: t.plannerStartToCloseMs,
    retry: {
      initialInterval: '1s',
      maximumInterval: '30s',
      maximumAttempts: 5,
      nonRetryableErrorTypes: [...NON_RETRYABLE_PLANNER_ERRORS, 'TypeError'],
    },
  };
  const toolOptions: ActivityOptions = {
    startToCloseTimeout: t.toolStartToCloseMs,
    heartbeatTimeout: t.toolHeartbeatMs,
    // Tools classify their own errors; Temporal retries only lost attempts (crash, timeout),
    // and the ledger makes those retries safe for writes.
    retry: { initialInterval: '1s', maximumInterval: '20s', maximumAttempts: 10 },
  };
  const { plan, runTool } = proxyActivities<Activities>(planOptions);
  const { verifyPrecondition, currentProgress } = proxyActivities<Activities>({
    startToCloseTimeout: '1 minute',
    retry: { maximumAttempts: 5 },
  });

  // ---- state (restored from a checkpoint on continue-as-new / resume --from) ----
  const cp = input.checkpoint as Checkpoint | undefined;
  // A scripted run takes the file's own settings (config, completed, initial version) as
  // the replay does; explicit run settings win.
  const script =
    input.planner.kind === 'scripted' && input.planner.script !== undefined
      ? parseReplayFile(input.planner.script)
      : null;
  const live = input.planner.kind === 'scripted' && input.planner.live;
  const guardConfig = { ...(script?.config ?? {}), ...input.guard };
  const completedKeys = [...(script?.completed ?? []), ...input.completed];
  // Fixture mode measures progress by the script, as the offline replay does; live mode by the world.
  const initialVersion = input.initialProgressVersion ?? (live ? undefined : script?.initialProgressVersion);
  const newGuard = (initial: number): LoopGuard =>
    new LoopGuard(guardConfig, {
      startMs: Date.now(),
      initialProgressVersion: initial,
      completed: completedKeys,
      needsHumanCodes: RUNTIME_NEEDS_HUMAN,
    });
  // Built synchronously so queries and updates work from the first workflow task; a run
  // without a given initial version replaces it once the world has been read (below).
  let guard: LoopGuard = cp
    ? LoopGuard.fromJSON(cp.guard, { needsHumanCodes: RUNTIME_NEEDS_HUMAN })
    : newGuard(initialVersion ?? 0);
  let memory: unknown = cp?.plannerMemory ?? null;
  let observation: Observation | null = (cp?.observation as Observation | null) ?? null;
  let proposals = cp?.proposals ?? 0;
  let executed = cp?.executed ?? 0;
  let cached = cp?.cached ?? 0;
  const decisions: RunDecision[] = cp?.decisions ? [...cp.decisions] : [];
  let trace: TraceRecord[] = cp?.trace ? [...cp.trace] : [];
  let traceTotal = cp?.traceTotal ?? 0;
  const seenRequestIds = new Set<string>(cp?.seenRequestIds ?? []);
  const resumeAnswers = new Map<string, ResumeAnswer>();
  let stopInfo: StopInfo | null = cp?.stop
    ? {
        ...cp.stop,
        blockedTool: cp.stop.report.blocked_call?.tool ?? null,
        blockedArgs: null,
        operationKey: null,
      }
    : null;
  let phase: RunPhase = stopInfo ? 'STOPPED' : 'RUNNING';
  let finalState: TerminalState | null = null;
  let lastDecision: string | null = null;
  let stopRequested: StopRequest | null = null;
  let approvedResume: ResumeRequest | null = null;
  let verifying = false;
  /** The FATAL message of the current stop, if any (RunResult.summary; not in the StopReport). */
  let stopDetail: string | null = null;

  // ---- trace ----
  function record(rec: Omit<TraceRecord, 'run_id' | 'step' | 'at_ms' | 'progress_version'>): void {
    const full: TraceRecord = {
      run_id: runId,
      step: guard.stepCount,
      at_ms: Date.now(),
      progress_version: guard.progressVersion,
      ...rec,
      args: rec.args === undefined ? null : redact(rec.args),
    };
    trace.push(full);
    traceTotal += 1;
    if (trace.length > input.traceLimit) trace = trace.slice(trace.length - input.traceLimit);
    lastDecision = rec.reason ? `${rec.decision} (${rec.reason})` : rec.decision;
  }

  /** A run-level trace record (signals, resumes, planner ends): no call attached. */
  function note(
    decision: string,
    reason: string | null,
    extra: { args?: unknown; error_code?: string } = {},
  ): void {
    record({
      phase: 'run',
      tool: null,
      fingerprint: null,
      args: extra.args ?? null,
      result_kind: null,
      error_code: extra.error_code ?? null,
      operation_key: null,
      decision,
      reason,
    });
  }

  /** Why a signal payload was rejected, naming each field. */
  function zodReason(issues: ReadonlyArray<{ path: PropertyKey[]; message: string }>): string {
    return issues.map((i) => `${i.path.map(String).join('.') || '(payload)'}: ${i.message}`).join('; ');
  }

  function publish(): void {
    const state = finalState ?? (stopInfo ? stopInfo.terminalState : 'RUNNING');
    upsertSearchAttributes([
      { key: AGENT_STATE, value: state },
      { key: AGENT_GUARD_REASON, value: stopInfo?.reason ?? '' },
      { key: AGENT_STEPS, value: guard.stepCount },
    ]);
    setCurrentDetails(
      [
        `**state** ${state}${stopInfo ? ` · **reason** ${stopInfo.reason}` : ''}`,
        `**step** ${guard.stepCount} · **proposals** ${proposals} · **progress** v${guard.progressVersion}`,
        `**last decision** ${lastDecision ?? '—'}`,
        stopInfo?.report.blocked_call ? `**blocked call** ${stopInfo.report.blocked_call.fingerprint}` : '',
      ]
        .filter(Boolean)
        .join('\n'),
    );
  }

  function checkpoint(): Checkpoint {
    return {
      v: 1,
      guard: guard.toJSON(),
      plannerMemory: memory,
      observation,
      proposals,
      executed,
      cached,
      decisions: decisions.slice(-CHECKPOINT_DECISIONS),
      trace: trace.slice(-CHECKPOINT_TRACE),
      traceTotal,
      seenRequestIds: [...seenRequestIds].slice(-1000),
      stop: stopInfo
        ? { terminalState: stopInfo.terminalState, reason: stopInfo.reason, report: stopInfo.report }
        : null,
    };
  }

  // ---- messages ----
  async function handleResume(raw: ResumeRequest): Promise<ResumeAnswer> {
    const req = resumeRequestSchema.parse(raw);
    const prior = resumeAnswers.get(req.requestId);
    if (prior) return prior;
    if (seenRequestIds.has(req.requestId)) {
      return { accepted: false, reason: 'duplicate request id', progressVersion: guard.progressVersion };
    }
    seenRequestIds.add(req.requestId);
    const stop = stopInfo;
    let answer: ResumeAnswer;
    if (!stop || phase !== 'WAITING') {
      answer = { accepted: false, reason: 'run is not stopped', progressVersion: guard.progressVersion };
    } else {
      verifying = true;
      try {
        answer = await verifyResume(stop, req);
      } finally {
        verifying = false;
      }
    }
    resumeAnswers.set(req.requestId, answer);
    record({
      phase: 'run',
      tool: stop?.blockedTool ?? null,
      fingerprint: stop?.report.blocked_call?.fingerprint ?? null,
      args: { actor: req.actor, reason: req.reason, precondition: req.precondition },
      result_kind: null,
      error_code: null,
      operation_key: null,
      decision: answer.accepted ? 'resume_accepted' : 'resume_refused',
      reason: answer.reason,
    });
    if (answer.accepted) approvedResume = req;
    publish();
    return answer;
  }

  async function verifyResume(
    stop: StopInfo,
    req: ReturnType<typeof resumeRequestSchema.parse>,
  ): Promise<ResumeAnswer> {
    if (stop.reason === 'operator_stop') {
      return { accepted: true, reason: 'operator stop lifted', progressVersion: guard.progressVersion };
    }
    if (stop.reason === 'planner_failed') {
      // The planner's next answer is the verification: if it still fails, the run stops again.
      return {
        accepted: true,
        reason: 'the planner will be asked again',
        progressVersion: guard.progressVersion,
      };
    }
    if (BUDGET_REASONS.has(stop.reason)) {
      const raised = budgetRaised(stop.reason, req.raise ?? {});
      return {
        accepted: raised,
        reason: raised
          ? `budget raised (${JSON.stringify(req.raise)})`
          : `the ${stop.reason} was not raised (use --raise)`,
        progressVersion: guard.progressVersion,
      };
    }
    const v = await verifyPrecondition({
      runId,
      reason: stop.reason,
      checkpointProgressVersion: guard.progressVersion,
      blockedTool: stop.blockedTool,
      blockedArgs: stop.blockedArgs,
      operationKey: stop.operationKey,
      precondition: req.precondition,
    });
    return { accepted: v.changed, reason: v.detail, progressVersion: v.progressVersion };
  }

  function budgetRaised(reason: string, raise: Record<string, number | undefined>): boolean {
    const c = guard.config;
    const usage = guard.usage;
    switch (reason) {
      case 'step_budget':
        return (raise.maxSteps ?? 0) > guard.stepCount;
      case 'wall_clock_budget':
        // The clock restarts on resume, so any explicit new budget is a real change.
        return (raise.maxMs ?? 0) > 0;
      case 'token_budget':
        return (raise.maxTokens ?? 0) > usage.tokens;
      case 'cost_budget':
        return (raise.maxCostUsd ?? 0) > usage.costUsd;
      case 'wait_budget':
        return (raise.maxWaitPolls ?? 0) > c.maxWaitPolls;
      default:
        return false;
    }
  }

  setHandler(resumeSignal, async (raw) => {
    const parsed = resumeRequestSchema.safeParse(raw);
    if (!parsed.success) {
      note('signal_rejected', zodReason(parsed.error.issues), { error_code: 'invalid_signal' });
      return;
    }
    if (verifying) return void note('resume_refused', 'another resume is being verified');
    await handleResume(parsed.data);
  });
  setHandler(resumeUpdate, handleResume, {
    validator: (raw) => {
      const parsed = resumeRequestSchema.safeParse(raw);
      if (!parsed.success) {
        throw new Error(zodReason(parsed.error.issues));
      }
      if (resumeAnswers.has(parsed.data.requestId)) return;
      if (phase !== 'WAITING') throw new Error(`run is ${phase}, not waiting for resume`);
      if (verifying) throw new Error('another resume is being verified');
    },
  });
  setHandler(stopSignal, (raw) => {
    const parsed = stopRequestSchema.safeParse(raw);
    if (!parsed.success) {
      note('signal_rejected', zodReason(parsed.error.issues), { error_code: 'invalid_signal' });
      return;
    }
    if (seenRequestIds.has(parsed.data.requestId)) return;
    seenRequestIds.add(parsed.data.requestId);
    if (phase !== 'RUNNING') {
      note('stop_ignored', `run is ${phase}`, {
        args: { actor: parsed.data.actor, reason: parsed.data.reason },
      });
      return;
    }
    stopRequested = parsed.data;
  });
  setHandler(statusQuery, (): RunStatus => ({
    workflowId: runId,
    phase,
    terminalState: finalState ?? stopInfo?.terminalState ?? null,
    guardReason: stopInfo?.reason ?? null,
    steps: guard.stepCount,
    executed,
    cached,
    proposals,
    progressVersion: guard.progressVersion,
    noProgress: guard.noProgressCount,
    usage: guard.usage,
    lastDecision,
    waitingForResume: phase === 'WAITING',
    goal: input.goal,
  }));
  setHandler(reportQuery, () => stopInfo?.report ?? null);
  setHandler(checkpointQuery, () => checkpoint());
  setHandler(traceQuery, (args: TracePageArgs = {}) => {
    const filtered = trace.filter(
      (r) => (!args.decision || r.decision === args.decision) && (!args.reason || r.reason === args.reason),
    );
    const offset = Math.max(0, args.offset ?? 0);
    const limit = Math.min(1000, Math.max(1, args.limit ?? 100));
    return { total: traceTotal, kept: trace.length, records: filtered.slice(offset, offset + limit) };
  });

  // ---- the loop ----
  function stopWith(
    terminalState: TerminalState,
    reason: string,
    call: { tool: string; fingerprint: string; args?: unknown } | null,
    operationKey: string | null,
    unmet?: string | null,
  ): void {
    const report = buildStopReport(guard, {
      terminalState,
      reason,
      blockedCall: call ? { tool: call.tool, fingerprint: call.fingerprint } : null,
      ...(unmet ? { unmet } : {}),
    });
    stopInfo = {
      terminalState,
      reason,
      report,
      blockedTool: call?.tool ?? null,
      blockedArgs: call?.args ?? null,
      operationKey,
    };
    stopDetail = null;
    phase = 'STOPPED';
  }

  function result(summary: string | null): RunResult {
    const state = finalState ?? stopInfo?.terminalState ?? TerminalState.PARTIAL;
    const last = decisions[decisions.length - 1];
    return {
      workflow_id: runId,
      terminal_state: state,
      reason: state === TerminalState.COMPLETED ? null : (stopInfo?.reason ?? null),
      executed,
      cached,
      stopped_at:
        state === TerminalState.PARTIAL && stopInfo?.reason === 'planner_exhausted'
          ? null
          : (last?.index ?? null),
      decisions,
      report: state === TerminalState.COMPLETED ? null : (stopInfo?.report ?? null),
      summary: summary ?? (state === TerminalState.COMPLETED ? null : stopDetail),
      checkpoint: state === TerminalState.COMPLETED ? null : checkpoint(),
    };
  }

  if (!cp && initialVersion === undefined) guard = newGuard(await currentProgress(runId));
  publish();
  for (;;) {
    // A stopped run waits for a verified resume, then continues from its checkpoint.
    if (stopInfo) {
      const resumable =
        stopInfo.terminalState === TerminalState.STOPPED_LOOP_GUARD ||
        stopInfo.terminalState === TerminalState.NEEDS_HUMAN;
      if (!resumable) {
        finalState = stopInfo.terminalState;
        phase = finalState;
        publish();
        await condition(allHandlersFinished);
        return result(null);
      }
      phase = 'WAITING';
      publish();
      let resumed: boolean;
      try {
        resumed = await condition(() => approvedResume !== null, input.resumeWindowMs);
      } catch (err) {
        if (isCancellation(err)) {
          finalState = stopInfo.terminalState;
          return result(null);
        }
        throw err;
      }
      if (!resumed) {
        finalState = stopInfo.terminalState;
        phase = finalState;
        publish();
        await condition(allHandlersFinished);
        return result(null);
      }
      const req = resumeRequestSchema.parse(approvedResume);
      approvedResume = null;
      guard.resume(Date.now(), req.raise ?? {});
      stopInfo = null;
      stopRequested = null;
      phase = 'RUNNING';
      publish();
    }

    if (workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > input.maxHistoryEvents) {
      await condition(allHandlersFinished);
      await continueAsNew<typeof agentRun>({ ...rawInput, checkpoint: checkpoint() });
    }

    // Set by the stop signal handler; TypeScript cannot see handlers assign it.
    const kill = stopRequested as StopRequest | null;
    if (kill) {
      guard.forceStop('operator_stop');
      note('stop', 'operator_stop', { args: { actor: kill.actor, reason: kill.reason } });
      stopWith(
        TerminalState.STOPPED_LOOP_GUARD,
        'operator_stop',
        null,
        null,
        `operator ${kill.actor}: ${kill.reason}`,
      );
      stopRequested = null;
      continue;
    }

    // The checkpoint keeps the planner as it was before a proposal that did not run, so a
    // resumed run asks again (the same call may be exactly right once the world changed).
    const memoryBeforeTurn = memory;
    let planned: PlanOutput;
    try {
      planned = await planTurn();
    } catch (err) {
      if (!(err instanceof ActivityFailure) || isCancellation(err)) throw err;
      // A planner that cannot answer (no key, bad auth, a broken reply, retries exhausted) is
      // a person's problem, not a reason to lose the run: stop with a checkpoint and wait.
      const cause = err.cause instanceof ApplicationFailure ? err.cause : null;
      const detail = `planner failed: ${cause?.type ? `${cause.type}: ` : ''}${cause?.message ?? err.message}`;
      guard.forceStop('planner_failed', TerminalState.NEEDS_HUMAN);
      note('stop', 'planner_failed', { error_code: cause?.type ?? 'activity_failure' });
      stopWith(TerminalState.NEEDS_HUMAN, 'planner_failed', null, null, detail);
      continue;
    }
    memory = planned.memory;
    const turn = planned.turn;

    if (turn.type === 'finish') {
      note('complete', 'planner_finished');
      finalState = TerminalState.COMPLETED;
      phase = finalState;
      publish();
      await condition(allHandlersFinished);
      return result(turn.summary);
    }
    if (turn.type === 'exhausted' || !planned.proposal) {
      guard.forceStop('planner_exhausted', TerminalState.PARTIAL);
      note('stop', 'planner_exhausted');
      stopWith(TerminalState.PARTIAL, 'planner_exhausted', null, null);
      continue;
    }

    // The kill switch is checked after planning too: a stop that arrived while the planner
    // was thinking must still prevent the next tool call.
    if (stopRequested) {
      memory = memoryBeforeTurn;
      continue;
    }

    const p: ProposalInfo = planned.proposal;
    const index = turn.scriptIndex ?? proposals;
    proposals += 1;
    const call: GuardCall = {
      tool: p.tool,
      fingerprint: p.fingerprint,
      operationKey: p.operationKey,
      usage: turn.usage,
    };
    const base = {
      tool: p.tool,
      fingerprint: p.fingerprint,
      args: p.canonicalArgs,
      operation_key: p.operationKey,
    };

    if (!input.guardEnabled) {
      const out = await runToolActivity(p);
      executed += 1;
      decisions.push({ index, tool: p.tool, decision: 'execute', after: 'continue' });
      observation = toObservation(turn.callId, p.tool, out.result, false);
      if (out.result.kind === 'SUCCESS' && out.result.terminal) {
        finalState = TerminalState.COMPLETED;
        phase = finalState;
        publish();
        return result(null);
      }
      continue;
    }

    // The persistent ledger is the one truth about completed writes.
    if (p.ledger && p.operationKey) guard.markCompleted(p.operationKey, p.ledger.fingerprint);

    const before = guard.before(call, Date.now());
    record({
      ...base,
      phase: 'before',
      result_kind: null,
      error_code: null,
      decision: before.decision,
      reason: before.decision === 'stop' ? before.reason : null,
    });
    if (before.decision === 'stop') {
      decisions.push({ index, tool: p.tool, decision: 'stop' });
      // A guard stop ends the planner's turn; the refusal is never fed back as text to retry.
      memory = memoryBeforeTurn;
      stopWith(
        before.terminalState,
        before.reason,
        { tool: p.tool, fingerprint: p.fingerprint, args: p.args },
        p.operationKey,
      );
      continue;
    }

    let toolResult: ToolResult;
    let progressVersion = guard.progressVersion;
    const isCached = before.decision === 'return_cached_success';
    if (isCached) {
      cached += 1;
      toolResult = { kind: 'SUCCESS', data: p.ledger?.result ?? { alreadyCompleted: p.operationKey } };
    } else if (p.rejection) {
      executed += 1;
      toolResult = p.rejection;
    } else {
      executed += 1;
      const out = await runToolActivity(p);
      toolResult = out.result;
      if (p.fixture) progressVersion = p.fixture.progressVersion ?? guard.progressVersion;
      else if (out.progressVersion !== null) progressVersion = out.progressVersion;
    }

    const after = guard.after(call, toolResult, progressVersion, Date.now());
    const errorCode = toolResult.kind === 'SUCCESS' ? null : (toolResult.code ?? null);
    record({
      ...base,
      phase: 'after',
      result_kind: toolResult.kind,
      error_code: errorCode,
      decision: after.decision,
      reason: after.decision === 'stop' ? after.reason : null,
    });
    decisions.push({ index, tool: p.tool, decision: before.decision, after: after.decision });
    if (decisions.length > MAX_DECISIONS_KEPT * 2) decisions.splice(0, decisions.length - MAX_DECISIONS_KEPT);
    publish();

    // The call ran: after a resume the planner sees its result (the FATAL it got, say).
    observation = toObservation(turn.callId, p.tool, toolResult, isCached);
    if (after.decision === 'stop') {
      // The StopReport is built from the guard alone, exactly as the offline replay builds it
      // (a FATAL's message reaches `unmet_precondition` through the guard in both).
      stopWith(
        after.terminalState,
        after.reason,
        { tool: p.tool, fingerprint: p.fingerprint, args: p.args },
        p.operationKey,
      );
      if (toolResult.kind === 'FATAL') stopDetail = toolResult.message ?? null;
      continue;
    }
    if (after.decision === 'complete') {
      finalState = TerminalState.COMPLETED;
      phase = finalState;
      publish();
      await condition(allHandlersFinished);
      const data =
        toolResult.kind === 'SUCCESS' ? (toolResult.data as { summary?: unknown } | undefined) : undefined;
      return result(typeof data?.summary === 'string' ? data.summary : null);
    }
    if (after.decision === 'retry_after_backoff' || after.decision === 'wait_bounded') {
      // The server-given wait, as a durable timer: it survives worker restarts.
      // FIX (kill switch, SPEC §7 `stop`): the wait ends early when the operator stops the
      // run; with a plain sleep() a stop sent during a long wait took effect only after the
      // whole wait. condition() with a timeout schedules the same timer (cancelled on stop),
      // so histories recorded with sleep() still replay.
      await condition(() => stopRequested !== null, after.retryAfterMs ?? DEFAULT_WAIT_MS);
    }
  }

  /**
   * Asks the planner activity for the next turn. A scripted planner is sent only the one
   * call it is about to propose (its memory is the script index): sending the whole script
   * every turn would make history grow with the square of the script's length.
   */
  async function planTurn(): Promise<PlanOutput> {
    const raw = input.planner.kind === 'scripted' ? input.planner.script : undefined;
    if (input.planner.kind !== 'scripted' || typeof raw !== 'object' || raw === null) {
      return plan({ runId, goal: input.goal, planner: input.planner, memory, observation });
    }
    const offset = (memory as { next?: number } | null)?.next ?? 0;
    const { calls, ...head } = raw as { calls?: unknown[] };
    const call = Array.isArray(calls) ? calls[offset] : undefined;
    const out = await plan({
      runId,
      goal: input.goal,
      planner: { ...input.planner, script: { ...head, calls: call === undefined ? [] : [call] } },
      memory: { next: 0 },
      observation,
    });
    const next = offset + ((out.memory as { next?: number } | null)?.next ?? 0);
    const turn =
      out.turn.type === 'call'
        ? { ...out.turn, scriptIndex: offset + (out.turn.scriptIndex ?? 0) }
        : out.turn;
    return { ...out, turn, memory: { next } };
  }

  async function runToolActivity(p: ProposalInfo): Promise<RunToolOutput> {
    return runTool.executeWithOptions(
      { ...toolOptions, summary: `${p.tool} · ${p.fingerprint.slice(-16, -8)}` },
      [
        {
          runId,
          tool: p.tool,
          args: p.args,
          operationKey: p.operationKey,
          fingerprint: p.fingerprint,
          fixture: p.fixture,
        },
      ],
    );
  }
}

function toObservation(
  callId: string | undefined,
  tool: string,
  r: ToolResult,
  cachedResult: boolean,
): Observation {
  const base = {
    tool,
    kind: r.kind,
    ...(callId ? { callId } : {}),
    ...(cachedResult ? { cached: true } : {}),
  };
  switch (r.kind) {
    case 'SUCCESS':
      return { ...base, data: r.data };
    case 'PRECONDITION':
      return { ...base, code: r.code, unmet: r.unmet };
    case 'RETRYABLE':
    case 'PENDING':
      return { ...base, code: r.code, retryAfterMs: r.retryAfterMs };
    default:
      return { ...base, code: r.code };
  }
}
