/**
 * The state of one agent run (docs/spec.md §7): its counters, guard, planner memory,
 * decisions, trace and the stop in force, and the transitions of the phase diagram in
 * workflows/run-phase.ts. The run is read and driven through three parts of its own,
 * each on one screen:
 *
 *  - workflows/run-gate.ts: every message that stops or resumes the run, as one gate with
 *    explicit states (the one section handlers and the waiting loop share);
 *  - workflows/run-steps.ts: plan → guard.before → tool → guard.after, each step answering a
 *    tagged outcome (`stopped`, or what the step produced);
 *  - workflows/run-views.ts: what operators read (status, report, checkpoint, result, the
 *    UI's details and search attributes).
 *
 * What a stop names and an approval binds is in workflows/approval-stop.ts; the sealed
 * checkpoint and the paged-out trace in workflows/run-seal.ts.
 *
 * `finish()` is the one exit: it publishes the terminal state, waits for every handler to
 * finish and builds the result. Workflow code: deterministic, no I/O of its own.
 */
import {
  allHandlersFinished,
  CancellationScope,
  condition,
  proxySinks,
  workflowInfo,
} from '@temporalio/workflow';
import type { Checkpoint, ResolvedRunInput, RunDecision, RunPhase, RunResult } from '../common/contracts';
import type { Observation } from '../common/planner';
import type { ChildSummary } from '../common/sub-agents';
import { redactText } from '../common/redact';
import type { AgentSinks } from '../common/telemetry';
import {
  buildStopReport,
  GuardReason,
  LEDGER_NEEDS_HUMAN_CODES,
  LoopGuard,
  ruleOf,
  TerminalState,
} from '../guard';
import { approvalStopOf, type ApprovalStop, type BlockedCall } from './approval-stop';
import { fitResult } from './checkpoint-bounds';
import type { Stop } from './resume-check';
import type { RunActivities } from './run-activities';
import { nextPhase } from './run-phase';
import { RunTrace, type TraceFields } from './run-trace';
import { resolveRunSettings } from './run-settings';
import { pageOutTrace, sealCheckpoint, sealedCheckpoint } from './run-seal';
import { publish, resultOf } from './run-views';

export type { ApprovalStop, BlockedCall } from './approval-stop';

/** Telemetry: not in history, not called on replay (common/telemetry.ts). */
const { agentTelemetry } = proxySinks<AgentSinks>();

const MAX_DECISIONS_KEPT = 5000;

/** The ledger-backed completed keys a lean run's guard keeps (what its StopReport lists). */
export const LEDGER_WINDOW_KEYS = 100;

/** One run's counters, trace, checkpoint and lifecycle. */
export class RunState {
  guard: LoopGuard;
  /** The planner's opaque memory, and what it observed of its last proposal. */
  memory: unknown;
  observation: Observation | null;
  proposals: number;
  executed: number;
  cached: number;
  readonly decisions: RunDecision[];
  readonly trace: RunTrace;
  /** Every operator request id this run has seen (resume and stop), across continue-as-new. */
  readonly seenRequestIds: Set<string>;
  /**
   * The approval stop a resume has just lifted, until its blocked call runs (or the run stops
   * again): the one stop whose approval the plan activity may offer and runTool may use.
   */
  approvalStop: ApprovalStop | null;
  /** The sub-agents this run spawned, oldest first (docs/spec.md §7.14). */
  readonly children: ChildSummary[];
  /** True for a fresh run whose starting progress version must come from external state. */
  readonly needsWorldVersion: boolean;
  /**
   * A lean checkpoint (docs/spec.md §7.10): the run's writes go through the persistent ledger,
   * so its guard keeps only the newest ledger-backed keys and its checkpoint stays bounded.
   * False for fixture-mode scripts (no ledger behind them).
   */
  readonly lean: boolean;
  /** `model`: undeclared tool errors go back to the planner (an LLM run, a script at `llm`). */
  readonly toolErrors: 'model' | undefined;
  private phase_: RunPhase;
  private stop_: Stop | null;
  private readonly newGuard: (initial: number) => LoopGuard;

  constructor(
    readonly input: ResolvedRunInput,
    readonly runId: string,
    readonly activities: RunActivities,
  ) {
    const cp = input.checkpoint as Checkpoint | undefined;
    const llm = input.planner.kind !== 'scripted';
    const settings = resolveRunSettings(input, llm && cp === undefined);
    this.toolErrors = llm || settings.scriptProfile === 'llm' ? 'model' : undefined;
    const initial = settings.initialProgressVersion;
    this.needsWorldVersion = !cp && initial === undefined;
    const fixture = input.planner.kind === 'scripted' && !input.planner.live;
    this.lean = !fixture;
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
    // A checkpoint written before the window keeps its keys exactly; new ones join the window.
    if (this.lean) this.guard.useLedgerWindow(LEDGER_WINDOW_KEYS);
    this.memory = cp?.plannerMemory ?? null;
    this.observation = (cp?.observation as Observation | null) ?? null;
    this.proposals = cp?.proposals ?? 0;
    this.executed = cp?.executed ?? 0;
    this.cached = cp?.cached ?? 0;
    this.decisions = cp?.decisions ? [...cp.decisions] : [];
    this.trace = new RunTrace(input.traceLimit, cp?.trace ?? [], cp?.traceTotal ?? 0);
    // A lean run pages out what leaves its checkpoint's trace at each continue-as-new.
    this.trace.keepLeaving = this.lean;
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
    this.phase_ = this.stop_ ? 'STOPPED' : 'RUNNING';
    this.approvalStop = cp?.approvalStop ?? null;
    this.children = cp?.children ? cp.children.map((c) => ({ ...c })) : [];
  }

  /** Starts the guard at the world's version (a fresh live run). */
  startAt(progressVersion: number): void {
    this.guard = this.newGuard(progressVersion);
    if (this.lean) this.guard.useLedgerWindow(LEDGER_WINDOW_KEYS);
  }

  /** The phase (workflows/run-phase.ts); it changes only through the transitions below. */
  get phase(): RunPhase {
    return this.phase_;
  }

  /** The stop in force, if any (its `detail` may be filled in by the step that stopped). */
  get stopInForce(): Stop | null {
    return this.stop_;
  }

  /** True while a stop is in force. */
  get stopped(): boolean {
    return this.stop_ !== null;
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
      blockedCall: call
        ? {
            tool: call.tool,
            fingerprint: call.fingerprint,
            ...(call.argsDigest ? { args_digest: call.argsDigest } : {}),
          }
        : null,
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

  /** A stop the runtime decides outside the guard's rules (planner failed or exhausted, faults). */
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

  /** STOPPED → WAITING: the stop is resumable; the gate waits for a verified resume. */
  wait(): void {
    this.to('WAITING');
    this.publish();
  }

  /** WAITING → RUNNING: continue from the checkpoint with `raise` applied and a restarted clock. */
  lift(raise: Record<string, number | undefined>): void {
    this.guard.resume(Date.now(), raise);
    this.approvalStop = approvalStopOf(this.stop_);
    this.stop_ = null;
    this.to('RUNNING');
    this.publish();
  }

  /**
   * RUNNING → STOPPED → WAITING while a spawned child waits for a person (docs/spec.md §7.14):
   * the parent shows a StopReport naming the child. The guard is not stopped (the spawn call is
   * still in flight in it); {@link childLift} goes back to RUNNING when the child resumes.
   */
  childStop(terminalState: TerminalState, call: BlockedCall, unmet: string): void {
    this.note('stop', GuardReason.CHILD_STOPPED, { tool: call.tool, fingerprint: call.fingerprint });
    this.stop(terminalState, GuardReason.CHILD_STOPPED, call, null, unmet);
    this.wait();
  }

  /** WAITING → RUNNING: the stopped child resumed, or ended; the parent goes on awaiting it. */
  childLift(why = 'the sub-agent resumed'): void {
    if (this.stop_?.reason !== GuardReason.CHILD_STOPPED) return;
    this.note('resume_accepted', why);
    this.stop_ = null;
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
    this.publish(true, summary);
    const reason = final === TerminalState.COMPLETED ? null : (this.stop_?.reason ?? null);
    agentTelemetry.runEnd({ runId: this.runId, terminalState: final, reason, closed: true });
    // Non-cancellable: a cancelled run still lets an in-flight resume answer.
    await CancellationScope.nonCancellable(() => condition(allHandlersFinished));
    // Bounded to one payload: a result above Temporal's limit would fail the workflow task forever.
    const { result } = fitResult(resultOf(this, final, summary));
    if (!result.checkpoint) return result;
    // The checkpoint leaves in the result (for `resume --from`): sealed, so it comes back unforged.
    return {
      ...result,
      checkpoint: await CancellationScope.nonCancellable(() => sealCheckpoint(this, result.checkpoint!)),
    };
  }

  /** The checkpoint sealed for continue-as-new input, or null: stopped payload_too_large (workflows/run-seal.ts). */
  sealedCheckpoint(around: unknown = {}): Promise<Checkpoint | null> {
    return sealedCheckpoint(this, around);
  }

  /** A lean run's continue-as-new: pages out the trace records beyond the newest `kept` (workflows/run-seal.ts). */
  pageOutTrace(kept: number): Promise<void> {
    return pageOutTrace(this, kept);
  }

  private to(next: RunPhase): void {
    this.phase_ = nextPhase(this.phase_, next);
  }

  // ---- the loop's bookkeeping ----

  /** Keeps a decision (the newest {@link MAX_DECISIONS_KEPT} at least). */
  decide(decision: RunDecision): void {
    this.decisions.push(decision);
    if (this.decisions.length > MAX_DECISIONS_KEPT * 2)
      this.decisions.splice(0, this.decisions.length - MAX_DECISIONS_KEPT);
  }

  /** True when history is long enough to continue as new (or the server suggests it). */
  historyIsLong(): boolean {
    const info = workflowInfo();
    return info.continueAsNewSuggested || info.historyLength > this.input.maxHistoryEvents;
  }

  /** Appends a trace record stamped with the run's counters. */
  record(rec: TraceFields): void {
    const at = { runId: this.runId, step: this.guard.stepCount, progressVersion: this.guard.progressVersion };
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

  /**
   * The UI's details and, unless `upsert` is false, the search attributes (workflows/run-views.ts);
   * `summary`: the run's, at its end.
   */
  publish(upsert = true, summary: string | null = null): void {
    publish(this, upsert, summary);
  }
}
