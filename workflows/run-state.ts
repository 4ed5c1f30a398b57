/**
 * The state of one agent run, as an explicit state machine (docs/spec.md §7). The
 * workflow function drives the loop; message handlers only delegate here; every change of
 * phase goes through one of four transitions:
 *
 * ```text
 *   RUNNING ──stop()──▶ STOPPED ──(resumable)──▶ WAITING ──lift()──▶ RUNNING
 *      │                   │                        │
 *      └─────finish()──────┴────────finish()────────┘──▶ COMPLETED | STOPPED_LOOP_GUARD
 *                                                       | NEEDS_HUMAN | FAILED | PARTIAL
 * ```
 *
 * `finish()` is the one exit: it publishes the terminal state, waits for every handler
 * to finish and builds the result. Workflow code: deterministic, no I/O of its own.
 */
import {
  ActivityFailure,
  allHandlersFinished,
  ApplicationFailure,
  CancellationScope,
  condition,
  isCancellation,
  patched,
  proxySinks,
  setCurrentDetails,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { PlanOutput, ProposalInfo, RunToolOutput } from '../activities/types';
import {
  resumeRequestSchema,
  stopRequestSchema,
  type Checkpoint,
  type ResolvedRunInput,
  type ResumeAnswer,
  type ResumeRequest,
  type RunDecision,
  type RunPhase,
  type RunResult,
  type RunStatus,
  type StopRequest,
} from '../common/contracts';
import {
  CONTEXT_EXHAUSTED_ERROR,
  LEDGER_UNAVAILABLE,
  type Observation,
  type PlannerTurn,
  type RunFacts,
} from '../common/planner';
import { redact, redactText } from '../common/redact';
import { AGENT_GUARD_REASON, AGENT_STATE, AGENT_STEPS } from '../common/search-attributes';
import type { AgentSinks } from '../common/telemetry';
import {
  buildStopReport,
  GuardReason,
  raiseKeyOf,
  LEDGER_NEEDS_HUMAN_CODES,
  LoopGuard,
  ResultCode,
  ruleOf,
  stoppedAt,
  TerminalState,
  type AfterResult,
  type BeforeResult,
  type GuardCall,
  type StopReport,
  type ToolResult,
  type TracePage,
  type TracePageArgs,
} from '../guard';
import { toObservation } from './observation';
import { isPayloadTooLarge, PAYLOAD_TOO_LARGE } from '../common/payload-limits';
import { boundObservation, boundTrace, checkpointTooLarge, fitResult } from './checkpoint-bounds';
import { failureMessage, failureType, ResumeCheck, type Stop } from './resume-check';
import type { RunActivities } from './run-activities';
import { RunTrace, type TraceFields, type TraceStamp } from './run-trace';
import { resolveRunSettings } from './run-settings';

/** Telemetry: not in history, not called on replay (common/telemetry.ts). */
const { agentTelemetry } = proxySinks<AgentSinks>();

/** Patch id: search attributes are no longer upserted after every step (docs/performance.md). */
const PATCH_NO_STEP_UPSERT = 'no-search-attribute-upsert-per-step';

/**
 * Patch id: operator requests are verified by an activity (signature and role), a raise is
 * for the stopping budget only, a planner_failed stop needs a health check, a stop while a
 * resume is verified vetoes it, and checkpoints are sealed. Runs recorded before run the old path.
 */
const PATCH_AUTHORITY = 'operator-authority-v1';

/** Patch id: the seal activity answers the seal only, not the sealed checkpoint (issue 9). */
const PATCH_LEAN_SEAL = 'lean-checkpoint-seal-v1';

/** Patch id: a progress version that goes backwards stops the run infrastructure_fault (issue 16). */
const PATCH_PROGRESS_MONOTONIC = 'progress-monotonic-v1';

const MAX_DECISIONS_KEPT = 5000;
/**
 * Plan-activity failures that are not the planner's: the stop reason each becomes (any
 * other failure is `planner_failed`).
 */
const PLAN_FAILURE_REASONS: Readonly<Record<string, GuardReason>> = {
  // The planner answered but the ledger or the conversation store could not be read.
  [LEDGER_UNAVAILABLE]: GuardReason.INFRASTRUCTURE_FAULT,
  // Even compacted, the next request does not fit the model's window.
  [CONTEXT_EXHAUSTED_ERROR]: GuardReason.CONTEXT_EXHAUSTED,
  // The planner's answer is too big for history (e.g. a huge reply).
  [PAYLOAD_TOO_LARGE]: GuardReason.PAYLOAD_TOO_LARGE,
};

/** How many completed keys, stops and refused resumes the planner's run facts name. */
const FACT_KEYS = 10;
const FACT_ITEMS = 5;
/** What a checkpoint carries of the trace and decisions: it travels in continue-as-new input. */
const CHECKPOINT_TRACE = 200;
const CHECKPOINT_DECISIONS = 1000;
const CHECKPOINT_REQUEST_IDS = 1000;

/** The call a stop names. */
export interface BlockedCall {
  readonly tool: string;
  readonly fingerprint: string;
  readonly args?: unknown;
}

/** A planner turn that proposes a call. */
export type CallTurn = Extract<PlannerTurn, { type: 'call' }>;

/** A proposal taken into the run: its index, the turn, the activity's view and the guard's call. */
export interface Proposal {
  readonly index: number;
  readonly turn: CallTurn;
  readonly p: ProposalInfo;
  readonly call: GuardCall;
}

/** The trace fields of a proposal (canonical args; redacted on record). */
const traced = (p: ProposalInfo) => ({
  tool: p.tool,
  fingerprint: p.fingerprint,
  args: p.canonicalArgs,
  operation_key: p.operationKey,
});

/** The call a stop names (its args, so resume can re-check its precondition). */
const blockedOf = (p: ProposalInfo): BlockedCall => ({
  tool: p.tool,
  fingerprint: p.fingerprint,
  args: p.args,
});

/** Stop reasons an approval lifts (the stops `agentctl approvals approve` binds to). */
const APPROVAL_STOPS: ReadonlySet<string> = new Set([
  GuardReason.APPROVAL_REQUIRED,
  ResultCode.APPROVAL_INVALID,
]);

/** The approval stop a lift leaves pending: its ref and blocked call; null for any other stop. */
function approvalStopOf(stop: Stop | null): { stopRef: string; fingerprint: string } | null {
  const ref = stop?.report.last_safe_checkpoint;
  const call = stop?.report.blocked_call;
  return stop && ref && call && APPROVAL_STOPS.has(stop.reason)
    ? { stopRef: ref, fingerprint: call.fingerprint }
    : null;
}

const RESUMABLE: ReadonlySet<TerminalState> = new Set([
  TerminalState.STOPPED_LOOP_GUARD,
  TerminalState.NEEDS_HUMAN,
]);

const isTerminal = (phase: RunPhase): phase is TerminalState =>
  phase !== 'RUNNING' && phase !== 'STOPPED' && phase !== 'WAITING';

const nullableRedacted = (text: string | null): string | null => (text === null ? null : redactText(text));

/** Why a message payload was rejected, naming each field. */
function zodReason(issues: ReadonlyArray<{ path: PropertyKey[]; message: string }>): string {
  return issues.map((i) => `${i.path.map(String).join('.') || '(payload)'}: ${i.message}`).join('; ');
}

/** One run's counters, trace, checkpoint and lifecycle. */
export class RunState {
  guard: LoopGuard;
  /** The planner's opaque memory, and what it observed of its last proposal. */
  memory: unknown;
  observation: Observation | null;
  proposals: number;
  executed: number;
  cached: number;
  private phase: RunPhase;
  private stop_: Stop | null;
  private readonly decisions: RunDecision[];
  private readonly trace: RunTrace;
  private readonly seenRequestIds: Set<string>;
  private readonly resumeAnswers = new Map<string, ResumeAnswer>();
  /** An operator's stop, applied before the next tool call. */
  private stopRequest: { req: StopRequest; pending: boolean } | null = null;
  /** Set when an operator's stop arrived while a resume was being verified: that resume is refused. */
  private vetoed = false;
  /**
   * The approval stop a resume has just lifted, until its blocked call runs (or the run stops
   * again): the one stop whose approval the plan activity may offer and runTool may use.
   */
  private approvalStop: { stopRef: string; fingerprint: string } | null;
  /** A resume the verification accepted, taken by the waiting loop. */
  private liftRequest: ResumeRequest | null = null;
  private verifying = false;
  /** True for a fresh run whose starting progress version must come from external state. */
  readonly needsWorldVersion: boolean;
  private readonly newGuard: (initial: number) => LoopGuard;
  /** Verifies resumes and operator requests (workflows/resume-check.ts). */
  private readonly check: ResumeCheck;

  constructor(
    private readonly input: ResolvedRunInput,
    private readonly runId: string,
    private readonly activities: RunActivities,
  ) {
    this.check = new ResumeCheck(activities, runId);
    const settings = resolveRunSettings(input);
    const cp = input.checkpoint as Checkpoint | undefined;
    const initial = settings.initialProgressVersion;
    this.needsWorldVersion = !cp && initial === undefined;
    this.newGuard = (initial) =>
      new LoopGuard(settings.guardConfig, {
        startMs: Date.now(),
        initialProgressVersion: initial,
        completed: settings.completed,
        needsHumanCodes: LEDGER_NEEDS_HUMAN_CODES,
      });
    // Built synchronously so queries and updates work from the first workflow task; a run
    // without a given initial version replaces it once the world has been read.
    this.guard = cp
      ? LoopGuard.fromJSON(cp.guard, { needsHumanCodes: LEDGER_NEEDS_HUMAN_CODES })
      : this.newGuard(initial ?? 0);
    this.memory = cp?.plannerMemory ?? null;
    this.observation = (cp?.observation as Observation | null) ?? null;
    this.proposals = cp?.proposals ?? 0;
    this.executed = cp?.executed ?? 0;
    this.cached = cp?.cached ?? 0;
    this.decisions = cp?.decisions ? [...cp.decisions] : [];
    this.trace = new RunTrace(input.traceLimit, cp?.trace ?? [], cp?.traceTotal ?? 0);
    this.seenRequestIds = new Set(cp?.seenRequestIds ?? []);
    this.stop_ = cp?.stop
      ? {
          ...cp.stop,
          blockedTool: cp.stop.report.blocked_call?.tool ?? null,
          blockedArgs: cp.stop.blockedArgs ?? null,
          operationKey: cp.stop.operationKey ?? null,
          detail: null,
        }
      : null;
    this.phase = this.stop_ ? 'STOPPED' : 'RUNNING';
    this.approvalStop = cp?.approvalStop ?? null;
  }

  /** Starts the guard at the world's version (a fresh live run). */
  startAt(progressVersion: number): void {
    this.guard = this.newGuard(progressVersion);
  }

  /** True while a stop is in force. */
  get stopped(): boolean {
    return this.stop_ !== null;
  }

  /** True when an operator's stop arrived and has not been applied yet. */
  get stopRequested(): boolean {
    return this.stopRequest !== null;
  }

  // ---- transitions ----

  /** RUNNING → STOPPED: the guard or the runtime stopped the run; the report is built from the guard. */
  stop(
    terminalState: TerminalState,
    reason: string,
    call: BlockedCall | null,
    operationKey: string | null,
    unmet?: string | null,
  ): void {
    const report = buildStopReport(this.guard, {
      terminalState,
      reason,
      blockedCall: call ? { tool: call.tool, fingerprint: call.fingerprint } : null,
      // The unmet text can quote args or a tool's message: redacted before it is reported.
      ...(unmet ? { unmet: redactText(unmet) } : {}),
    });
    this.approvalStop = null;
    this.stop_ = {
      terminalState,
      reason,
      report,
      blockedTool: call?.tool ?? null,
      blockedArgs: call?.args ?? null,
      operationKey,
      detail: null,
    };
    this.to('STOPPED');
    agentTelemetry.runEnd({ runId: this.runId, terminalState, reason, closed: false });
  }

  /**
   * STOPPED → WAITING → RUNNING: waits durably for a verified resume and lifts the stop.
   * False when the run must end instead: the stop is not resumable, the resume window
   * ran out, or the workflow was cancelled.
   */
  async waitForResume(): Promise<boolean> {
    const stop = this.stop_;
    if (!stop || !RESUMABLE.has(stop.terminalState)) return false;
    this.to('WAITING');
    this.publish();
    try {
      if (!(await condition(() => this.liftRequest !== null, this.input.resumeWindowMs))) return false;
    } catch (err) {
      if (isCancellation(err)) return false;
      throw err;
    }
    this.lift(resumeRequestSchema.parse(this.liftRequest));
    return true;
  }

  /** WAITING → RUNNING: continue from the checkpoint with a new window and a restarted clock. */
  private lift(req: ReturnType<typeof resumeRequestSchema.parse>): void {
    this.liftRequest = null;
    // Only the budget that stopped the run is raised (a raise for another budget was refused).
    const stopping = this.stop_ ? raiseKeyOf(this.stop_.reason) : null;
    const raise = patched(PATCH_AUTHORITY)
      ? stopping && req.raise?.[stopping] !== undefined
        ? { [stopping]: req.raise[stopping] }
        : {}
      : (req.raise ?? {});
    this.guard.resume(Date.now(), raise);
    this.approvalStop = approvalStopOf(this.stop_);
    this.stop_ = null;
    this.stopRequest = null;
    this.to('RUNNING');
    this.publish();
  }

  /**
   * The one exit: publishes the terminal state (the stop's, when no other is given),
   * waits for every message handler to finish, and returns the run's result.
   */
  async finish(state?: TerminalState, summary: string | null = null): Promise<RunResult> {
    const final = state ?? this.stop_?.terminalState ?? TerminalState.PARTIAL;
    this.to(final);
    this.publish();
    const reason = final === TerminalState.COMPLETED ? null : (this.stop_?.reason ?? null);
    agentTelemetry.runEnd({ runId: this.runId, terminalState: final, reason, closed: true });
    // Non-cancellable: a cancelled run still lets an in-flight resume answer.
    await CancellationScope.nonCancellable(() => condition(allHandlersFinished));
    // Bounded to one payload: a result above Temporal's limit would fail the workflow task forever.
    const { result } = fitResult(this.result(final, summary));
    if (!result.checkpoint || !patched(PATCH_AUTHORITY)) return result;
    // The checkpoint leaves in the result (for `resume --from`): sealed, so it comes back unforged.
    return {
      ...result,
      checkpoint: await CancellationScope.nonCancellable(() => this.seal(result.checkpoint!)),
    };
  }

  /**
   * The checkpoint, sealed by the worker (for continue-as-new input). Null when it would not
   * fit in one payload with `around` (the rest of that input): the run then stops NEEDS_HUMAN
   * payload_too_large instead of continuing as new (it never fails).
   */
  async sealedCheckpoint(around: unknown = {}): Promise<Checkpoint | null> {
    const cp = this.checkpoint();
    const tooLarge = checkpointTooLarge(cp, around);
    if (tooLarge !== null) {
      this.runtimeStop(
        GuardReason.PAYLOAD_TOO_LARGE,
        TerminalState.NEEDS_HUMAN,
        PAYLOAD_TOO_LARGE,
        `continue-as-new refused: ${tooLarge}`,
      );
      return null;
    }
    return patched(PATCH_AUTHORITY) ? this.seal(cp) : cp;
  }

  private async seal(cp: Checkpoint): Promise<Checkpoint> {
    try {
      if (patched(PATCH_LEAN_SEAL)) {
        // Only the seal comes back: the checkpoint crosses history once less (issue 9).
        const { seal: _old, ...rest } = cp;
        return { ...rest, seal: await this.activities.checkpointSeal(rest) };
      }
      return await this.activities.sealCheckpoint(cp);
    } catch (err) {
      if (!(err instanceof ActivityFailure) || isCancellation(err)) throw err;
      // Unsealed, the checkpoint can still continue this run's own chain; `resume --from` refuses it.
      return cp;
    }
  }

  private to(next: RunPhase): void {
    const from = this.phase;
    const allowed =
      (next === 'STOPPED' && from === 'RUNNING') ||
      (next === 'WAITING' && from === 'STOPPED') ||
      (next === 'RUNNING' && from === 'WAITING') ||
      (isTerminal(next) && !isTerminal(from));
    if (!allowed) throw new Error(`RunState: no transition from ${from} to ${next}`);
    this.phase = next;
  }

  // ---- the loop's bookkeeping ----

  /** Applies an operator's stop that arrived while the run was running (once verified). */
  async applyStopRequest(): Promise<boolean> {
    if (!this.stopRequest) return false;
    if (this.stopRequest.pending) await condition(() => !this.stopRequest?.pending);
    const kill = this.stopRequest?.req;
    if (!kill) return false; // refused: the operator was not authorised
    this.guard.forceStop(GuardReason.OPERATOR_STOP);
    this.note('stop', GuardReason.OPERATOR_STOP, { args: { actor: kill.actor, reason: kill.reason } });
    this.stop(
      TerminalState.STOPPED_LOOP_GUARD,
      GuardReason.OPERATOR_STOP,
      null,
      null,
      `operator ${kill.actor}: ${kill.reason}`,
    );
    this.stopRequest = null;
    return true;
  }

  /** A stop the runtime decides outside the guard's rules (planner failed or exhausted). */
  runtimeStop(
    reason: string,
    terminalState: TerminalState,
    errorCode?: string,
    unmet?: string,
    call: BlockedCall | null = null,
    operationKey: string | null = null,
  ): void {
    this.guard.forceStop(reason, terminalState);
    this.note('stop', reason, {
      ...(errorCode ? { error_code: errorCode } : {}),
      ...(call ? { tool: call.tool, fingerprint: call.fingerprint } : {}),
    });
    this.stop(terminalState, reason, call, operationKey, unmet);
  }

  /** The version the worker's progress source reported after this run's last call (not persisted). */
  private lastSourceVersion: number | null = null;

  /** The planner's memory before this turn: a proposal that does not run is asked again. */
  private memoryBeforeTurn: unknown = null;

  /** Asks the planner for its next turn; null when the planner failed and the run stopped. */
  async plan(): Promise<PlanOutput | null> {
    this.memoryBeforeTurn = this.memory;
    let planned: PlanOutput;
    try {
      planned = await this.activities.planTurn(
        this.memory,
        this.observation,
        this.facts(),
        this.approvalStop?.stopRef ?? null,
      );
    } catch (err) {
      if (!(err instanceof ActivityFailure) || isCancellation(err)) throw err;
      // A planner that cannot answer (no key, bad auth, a broken reply, retries exhausted) is
      // a person's problem, not a reason to lose the run: stop with a checkpoint and wait.
      const cause = err.cause instanceof ApplicationFailure ? err.cause : null;
      const known = cause?.type ? PLAN_FAILURE_REASONS[cause.type] : undefined;
      if (cause?.type && known) {
        this.runtimeStop(known, TerminalState.NEEDS_HUMAN, cause.type, failureMessage(err));
        return null;
      }
      const detail = `planner failed: ${cause?.type ? `${cause.type}: ` : ''}${failureMessage(err)}`;
      this.runtimeStop(
        GuardReason.PLANNER_FAILED,
        TerminalState.NEEDS_HUMAN,
        cause?.type ?? 'activity_failure',
        detail,
      );
      return null;
    }
    this.memory = planned.memory;
    return planned;
  }

  /**
   * What the run knows about itself, for the run-state note of a compacted model request
   * (bounded: counts and the newest few of each list).
   */
  private facts(): RunFacts {
    const g = this.guard;
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
      completedOperations: keys.length,
      recentCompleted: keys.slice(-FACT_KEYS),
      stops: this.trace.recent(['stop'], FACT_ITEMS).map(at),
      refusedResumes: this.trace.recent(['resume_refused'], FACT_ITEMS).map(at),
      budgetsLeft,
    };
  }

  /** Forgets the planner's last turn: the proposal never ran, so it will be asked again. */
  undoTurn(): void {
    this.memory = this.memoryBeforeTurn;
  }

  /** Takes a validated, fingerprinted proposal into the run. */
  propose(turn: CallTurn, p: ProposalInfo): Proposal {
    const index = turn.scriptIndex ?? this.proposals;
    this.proposals += 1;
    return {
      index,
      turn,
      p,
      call: { tool: p.tool, fingerprint: p.fingerprint, operationKey: p.operationKey, usage: turn.usage },
    };
  }

  /**
   * guard.before: whether the proposal may run (docs/spec.md §3). A refusal stops the run
   * and ends the planner's turn; it is never fed back as text for the model to retry.
   */
  before(x: Proposal): BeforeResult {
    const { p } = x;
    // The persistent ledger is the one truth about completed writes.
    if (p.ledger && p.operationKey) this.guard.markCompleted(p.operationKey, p.ledger.fingerprint);
    const before = this.guard.before(x.call, Date.now());
    const refused = before.decision === 'stop' ? before.reason : null;
    this.record({
      ...traced(p),
      phase: 'before',
      result_kind: null,
      error_code: null,
      decision: before.decision,
      reason: refused,
    });
    if (before.decision === 'stop') {
      this.decide({ index: x.index, tool: p.tool, decision: 'stop' });
      this.undoTurn();
      this.stop(before.terminalState, before.reason, blockedOf(p), p.operationKey);
      return before;
    }
    if (before.decision === 'execute' && p.approval?.required && !p.approval.approvalId) {
      // The guard lets it run, but a person must approve this exact call first: stop before
      // it runs, showing the call. The approval is bound to this stop and this fingerprint.
      const reason = GuardReason.APPROVAL_REQUIRED;
      this.decide({ index: x.index, tool: p.tool, decision: 'stop' });
      this.undoTurn();
      const unmet = `approval required for ${p.tool} ${JSON.stringify(redact(p.canonicalArgs))}`;
      this.runtimeStop(reason, TerminalState.NEEDS_HUMAN, undefined, unmet, blockedOf(p), p.operationKey);
      return { decision: 'stop', reason, terminalState: TerminalState.NEEDS_HUMAN };
    }
    return before;
  }

  /**
   * The tool step: a cached return runs nothing, a rejected proposal is its own result,
   * anything else runs as the tool activity. Returns the result and the progress version
   * read from external state (the script's, in fixture mode).
   */
  async execute(
    x: Proposal,
    cached: boolean,
  ): Promise<{ result: ToolResult; progressVersion: number } | null> {
    const { p } = x;
    const current = this.guard.progressVersion;
    if (cached) {
      this.cached += 1;
      return {
        result: { kind: 'SUCCESS', data: p.ledger?.result ?? { alreadyCompleted: p.operationKey } },
        progressVersion: current,
      };
    }
    this.executed += 1;
    if (p.rejection) return { result: p.rejection, progressVersion: current };
    let out: RunToolOutput;
    try {
      out = await this.activities.runTool(p);
    } catch (err) {
      if (!(err instanceof ActivityFailure) || isCancellation(err)) throw err;
      if (isPayloadTooLarge(err)) {
        // The tool's output could not pass through history (no payload store took it): stop
        // with the checkpoint; after an operator's resume the planner is asked again.
        this.undoTurn();
        this.runtimeStop(
          GuardReason.PAYLOAD_TOO_LARGE,
          TerminalState.NEEDS_HUMAN,
          PAYLOAD_TOO_LARGE,
          `tool ${p.tool}: ${failureMessage(err)}`,
          blockedOf(p),
          p.operationKey,
        );
        return null;
      }
      // Faults stop, they do not fail: the tool activity failed after all its retries (a
      // database or backend down). Stop with the checkpoint; the planner is asked again after
      // a resume, and a write it re-proposes is still behind the ledger.
      this.undoTurn();
      this.runtimeStop(
        GuardReason.INFRASTRUCTURE_FAULT,
        TerminalState.NEEDS_HUMAN,
        failureType(err),
        `tool ${p.tool} failed: ${failureMessage(err)}`,
        blockedOf(p),
        p.operationKey,
      );
      return null;
    }
    const version = p.fixture ? (p.fixture.progressVersion ?? current) : (out.progressVersion ?? current);
    const floor = this.lastSourceVersion;
    if (!p.fixture && out.progressVersion !== null) this.lastSourceVersion = out.progressVersion;
    if (!p.fixture && floor !== null && version < floor && patched(PATCH_PROGRESS_MONOTONIC)) {
      // A progress source that goes backwards is broken: never a false no_progress, never FAILED.
      this.undoTurn();
      this.runtimeStop(
        GuardReason.INFRASTRUCTURE_FAULT,
        TerminalState.NEEDS_HUMAN,
        'progress_went_backwards',
        `the progress version went backwards from ${floor} to ${version} after a call of ${p.tool}: the worker's progress source (or ${p.tool}'s progressVersion hook) must never decrease`,
        blockedOf(p),
        p.operationKey,
      );
      return null;
    }
    return { result: out.result, progressVersion: version };
  }

  /** guard.after: records the result (docs/spec.md §3); a stop keeps the FATAL's message. */
  after(x: Proposal, before: BeforeResult, result: ToolResult, progressVersion: number): AfterResult {
    const { p } = x;
    // The lifted stop's call has run (or was answered): its approvals are spent for good.
    if (this.approvalStop?.fingerprint === p.fingerprint) this.approvalStop = null;
    const after = this.guard.after(x.call, result, progressVersion, Date.now());
    const errorCode = result.kind === 'SUCCESS' ? null : (result.code ?? null);
    const reason = after.decision === 'stop' ? after.reason : null;
    this.record({
      ...traced(p),
      phase: 'after',
      result_kind: result.kind,
      error_code: errorCode,
      decision: after.decision,
      reason,
    });
    this.decide({
      index: x.index,
      tool: p.tool,
      decision: before.decision as RunDecision['decision'],
      after: after.decision,
    });
    // Runs recorded before this change upserted search attributes after every step.
    this.publish(!patched(PATCH_NO_STEP_UPSERT));
    // The call ran: after a resume the planner sees its result (the FATAL it got, say).
    this.observation = toObservation(
      x.turn.callId,
      p.tool,
      result,
      before.decision === 'return_cached_success',
    );
    if (after.decision === 'stop') {
      // The StopReport is built from the guard alone, exactly as the offline replay builds it.
      this.stop(after.terminalState, after.reason, blockedOf(p), p.operationKey);
      if (result.kind === 'FATAL' && this.stop_) this.stop_.detail = result.message ?? null;
    }
    return after;
  }

  /** Benchmarks only: the guard as a pass-through. True when the run completed. */
  async passThrough(x: Proposal): Promise<boolean> {
    const { result } = await this.activities.runTool(x.p);
    this.executed += 1;
    this.decide({ index: x.index, tool: x.p.tool, decision: 'execute', after: 'continue' });
    this.observation = toObservation(x.turn.callId, x.p.tool, result, false);
    return result.kind === 'SUCCESS' && result.terminal === true;
  }

  private decide(decision: RunDecision): void {
    this.decisions.push(decision);
    if (this.decisions.length > MAX_DECISIONS_KEPT * 2)
      this.decisions.splice(0, this.decisions.length - MAX_DECISIONS_KEPT);
  }

  /** True when history is long enough to continue as new (or the server suggests it). */
  historyIsLong(): boolean {
    const info = workflowInfo();
    return info.continueAsNewSuggested || info.historyLength > this.input.maxHistoryEvents;
  }

  // ---- trace ----

  /** Appends a trace record stamped with the run's counters. */
  record(rec: TraceFields): void {
    const at = this.stamp();
    this.trace.record(at, rec);
    agentTelemetry.decision({
      runId: at.runId,
      phase: rec.phase,
      rule: ruleOf(rec.phase, rec.decision, rec.reason),
      decision: rec.decision,
      reason: rec.reason,
      tool: rec.tool,
      fingerprint: rec.fingerprint,
      resultKind: rec.result_kind,
      errorCode: rec.error_code,
      step: at.step,
      progressVersion: at.progressVersion,
    });
  }

  /** A run-level trace record (signals, resumes, planner ends). */
  note(decision: string, reason: string | null, extra: Parameters<typeof RunTrace.noteFields>[2] = {}): void {
    this.record(RunTrace.noteFields(decision, reason, extra));
  }

  private stamp(): TraceStamp {
    return { runId: this.runId, step: this.guard.stepCount, progressVersion: this.guard.progressVersion };
  }

  // ---- what operators see ----

  /**
   * The UI's current details and, unless `upsert` is false, the search attributes. Each
   * upsert is a history event, so it happens when the state changes (start, stop, resume,
   * finish), not on every step; the step count is live in the `status` query and details.
   */
  publish(upsert = true): void {
    const stop = this.stop_;
    const state = isTerminal(this.phase) ? this.phase : stop ? stop.terminalState : 'RUNNING';
    if (upsert)
      upsertSearchAttributes([
        { key: AGENT_STATE, value: state },
        { key: AGENT_GUARD_REASON, value: stop?.reason ?? '' },
        { key: AGENT_STEPS, value: this.guard.stepCount },
      ]);
    setCurrentDetails(
      [
        `**state** ${state}${stop ? ` · **reason** ${stop.reason}` : ''}`,
        `**step** ${this.guard.stepCount} · **proposals** ${this.proposals} · **progress** v${this.guard.progressVersion}`,
        `**last decision** ${this.trace.lastDecision ?? '—'}`,
        stop?.report.blocked_call ? `**blocked call** ${stop.report.blocked_call.fingerprint}` : '',
      ]
        .filter(Boolean)
        .join('\n'),
    );
  }

  /** The `status` query. */
  status(): RunStatus {
    return {
      workflowId: this.runId,
      phase: this.phase,
      terminalState: isTerminal(this.phase) ? this.phase : (this.stop_?.terminalState ?? null),
      guardReason: this.stop_?.reason ?? null,
      steps: this.guard.stepCount,
      executed: this.executed,
      cached: this.cached,
      proposals: this.proposals,
      progressVersion: this.guard.progressVersion,
      noProgress: this.guard.noProgressCount,
      usage: this.guard.usage,
      lastDecision: this.trace.lastDecision,
      waitingForResume: this.phase === 'WAITING',
      goal: this.input.goal,
    };
  }

  /** The `report` query: the StopReport in force. */
  report(): StopReport | null {
    return this.stop_?.report ?? null;
  }

  /** The `trace` query. */
  tracePage(args: TracePageArgs = {}): TracePage {
    return this.trace.page(args);
  }

  /** Everything the run needs to continue: kept on stop, carried across continue-as-new. */
  checkpoint(): Checkpoint {
    const stop = this.stop_;
    return {
      v: 1,
      guard: this.guard.toJSON(),
      plannerMemory: this.memory,
      // The copy that travels is bounded (workflows/checkpoint-bounds.ts); the live state is not.
      observation: boundObservation(this.observation),
      proposals: this.proposals,
      executed: this.executed,
      cached: this.cached,
      decisions: this.decisions.slice(-CHECKPOINT_DECISIONS),
      trace: boundTrace(this.trace.newest(CHECKPOINT_TRACE)),
      traceTotal: this.trace.total,
      seenRequestIds: [...this.seenRequestIds].slice(-CHECKPOINT_REQUEST_IDS),
      stop: stop
        ? {
            terminalState: stop.terminalState,
            reason: stop.reason,
            report: stop.report,
            blockedArgs: stop.blockedArgs,
            operationKey: stop.operationKey,
          }
        : null,
      ...(this.approvalStop ? { approvalStop: this.approvalStop } : {}),
    };
  }

  private result(state: TerminalState, summary: string | null): RunResult {
    const stop = this.stop_;
    const completed = state === TerminalState.COMPLETED;
    const reason = completed ? null : (stop?.reason ?? null);
    return {
      workflow_id: this.runId,
      terminal_state: state,
      reason,
      executed: this.executed,
      cached: this.cached,
      stopped_at: stoppedAt(state, stop?.reason ?? null, this.decisions[this.decisions.length - 1]?.index),
      decisions: this.decisions,
      report: completed ? null : (stop?.report ?? null),
      summary: nullableRedacted(summary ?? (completed ? null : (stop?.detail ?? null))),
      checkpoint: completed ? null : this.checkpoint(),
    };
  }

  // ---- messages (handlers only delegate here) ----

  /** The `resume` signal: like the update, with the outcome recorded in the trace only. */
  async onResumeSignal(raw: unknown): Promise<void> {
    const parsed = resumeRequestSchema.safeParse(raw);
    if (!parsed.success) {
      this.note('signal_rejected', zodReason(parsed.error.issues), { error_code: 'invalid_signal' });
      return;
    }
    if (this.verifying) return void this.note('resume_refused', 'another resume is being verified');
    await this.resume(parsed.data);
  }

  /** The `resume` update's validator: a synchronous no before anything is recorded. */
  validateResume(raw: unknown): void {
    const parsed = resumeRequestSchema.safeParse(raw);
    if (!parsed.success) throw new Error(zodReason(parsed.error.issues));
    if (this.resumeAnswers.has(parsed.data.requestId)) return;
    if (this.phase !== 'WAITING') throw new Error(`run is ${this.phase}, not waiting for resume`);
    if (this.verifying) throw new Error('another resume is being verified');
  }

  /** Verifies a resume request; an accepted one is taken by {@link waitForResume}. */
  async resume(raw: ResumeRequest): Promise<ResumeAnswer> {
    const req = resumeRequestSchema.parse(raw);
    const prior = this.resumeAnswers.get(req.requestId);
    if (prior) return prior;
    const version = this.guard.progressVersion;
    if (this.seenRequestIds.has(req.requestId)) {
      return { accepted: false, reason: 'duplicate request id', progressVersion: version };
    }
    this.seenRequestIds.add(req.requestId);
    const stop = this.stop_;
    let answer: ResumeAnswer;
    if (!stop || this.phase !== 'WAITING') {
      answer = { accepted: false, reason: 'run is not stopped', progressVersion: version };
    } else {
      this.verifying = true;
      this.vetoed = false;
      try {
        answer = await this.check.verify(stop, req, this.guard, patched(PATCH_AUTHORITY));
      } finally {
        this.verifying = false;
      }
      if (answer.accepted && this.vetoed)
        answer = {
          ...answer,
          accepted: false,
          reason: 'an operator stopped the run while this resume was being verified',
        };
    }
    this.resumeAnswers.set(req.requestId, answer);
    this.note(answer.accepted ? 'resume_accepted' : 'resume_refused', answer.reason, {
      tool: stop?.blockedTool ?? null,
      fingerprint: stop?.report.blocked_call?.fingerprint ?? null,
      args: { actor: req.actor, reason: req.reason, precondition: req.precondition },
    });
    if (answer.accepted) this.liftRequest = req;
    this.publish();
    return answer;
  }

  /** The `stop` signal: the kill switch, effective before the next tool call. */
  async onStopSignal(raw: unknown): Promise<void> {
    const parsed = stopRequestSchema.safeParse(raw);
    if (!parsed.success) {
      this.note('signal_rejected', zodReason(parsed.error.issues), { error_code: 'invalid_signal' });
      return;
    }
    const req = parsed.data;
    if (this.seenRequestIds.has(req.requestId)) return;
    this.seenRequestIds.add(req.requestId);
    const args = { actor: req.actor, reason: req.reason };
    if (!patched(PATCH_AUTHORITY)) {
      if (this.phase !== 'RUNNING') return void this.note('stop_ignored', `run is ${this.phase}`, { args });
      this.stopRequest = { req, pending: false };
      return;
    }
    const vetoing = this.phase === 'WAITING' && this.verifying;
    if (this.phase !== 'RUNNING' && !vetoing)
      return void this.note('stop_ignored', `run is ${this.phase}`, { args });
    // Until the worker has verified it, the stop already holds the run at its next check.
    if (!vetoing) this.stopRequest = { req, pending: true };
    const who = await this.check.authorise('stop', req, null);
    if (!who.ok) {
      if (this.stopRequest?.req === req) this.stopRequest = null;
      return void this.note('stop_refused', `not authorised: ${who.detail}`, { args });
    }
    if (vetoing) {
      // A stop while a resume is being verified cancels that resume: the run stays stopped.
      this.vetoed = true;
      return void this.note('resume_vetoed', `stop by ${who.detail}`, { args });
    }
    if (this.stopRequest?.req === req) this.stopRequest = { req, pending: false };
  }
}
