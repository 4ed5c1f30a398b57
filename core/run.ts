/**
 * The state every guarded run has, whatever drives its loop (docs/spec.md §7): the guard, the
 * counters, the decisions, the trace, the operator request ids seen, the stop in force, and the
 * transitions of the phase diagram (core/phase.ts). An `agentRun` (workflows/run-state.ts adds
 * its planner memory, sub-agents and checkpoint sealing) and a framework agent
 * (core/framework-guard.ts) both hold one; the gate (core/gate.ts), the step (core/step.ts) and the views (core/views.ts)
 * read and change a run only through it. Workflow code: deterministic, no I/O of its own.
 */
import type { Checkpoint, RunDecision, RunPhase } from '../common/contracts';
import { redactText } from '../common/redact';
import { buildStopReport, GuardReason, ruleOf, TerminalState, type LoopGuard } from '../guard';
import { nextPhase } from './phase';
import { ResumeNotes } from './resume-note';
import { approvalStopOf, type ApprovalStop, type BlockedCall, type Stop } from './stop';
import { tellDecision, tellRunEnd } from './telemetry-outbox';
import { RunTrace, type TraceFields } from './trace';

/** The decisions a live run keeps (the newest, at least this many). */
export const MAX_DECISIONS_KEPT = 5000;

/** What a stop may say besides its state, reason, call and unmet precondition. */
export interface StopExtra {
  /** The stop's checkpoint ref, when the engine names it (an approval binds to it). */
  readonly checkpoint?: string;
  /** The call is still in flight and waits where it is (see {@link Stop.inFlight}). */
  readonly inFlight?: boolean;
}

/** One guarded run's state and lifecycle. */
export class GuardedRun {
  guard: LoopGuard;
  proposals: number;
  executed: number;
  cached: number;
  /** Writes the ledger's `reconcile` probe settled (an earlier attempt's lost dispatch): not run now. */
  reconciled: number;
  readonly decisions: RunDecision[];
  readonly trace: RunTrace;
  /** Every operator request id this run has seen (resume and stop), across continue-as-new. */
  readonly seenRequestIds: Set<string>;
  /**
   * The approval stop a resume has just lifted, until its blocked call runs (or the run stops
   * again): the one stop whose approval the next proposal of that call may use.
   */
  approvalStop: ApprovalStop | null;
  /** Until when the run waits for a resume (ms since the epoch, workflow time); null when it does not. */
  waitingUntilMs: number | null = null;
  /** What accepted resumes tell the model before its next turn (core/resume-note.ts). */
  readonly resumeNotes = new ResumeNotes();
  protected phase_: RunPhase;
  protected stop_: Stop | null;

  constructor(
    readonly runId: string,
    guard: LoopGuard,
    traceLimit: number,
    /** A checkpoint to continue from (continue-as-new, `resume --from`). */
    cp?: Checkpoint,
  ) {
    this.guard = guard;
    this.proposals = cp?.proposals ?? 0;
    this.executed = cp?.executed ?? 0;
    this.cached = cp?.cached ?? 0;
    this.reconciled = cp?.reconciled ?? 0;
    this.decisions = cp?.decisions ? [...cp.decisions] : [];
    this.trace = new RunTrace(traceLimit, cp?.trace ?? [], cp?.traceTotal ?? 0);
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
  }

  /** The phase (core/phase.ts); it changes only through the transitions below. */
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
    extra: StopExtra = {},
  ): void {
    const report = buildStopReport(this.guard, {
      terminalState,
      reason,
      ...(extra.checkpoint !== undefined ? { checkpoint: extra.checkpoint } : {}),
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
      ...(extra.inFlight ? { inFlight: true } : {}),
    };
    this.to('STOPPED');
    tellRunEnd({ runId: this.runId, terminalState, reason, closed: false });
  }

  /**
   * A stop the runtime decides outside the guard's rules (planner failed or exhausted, faults,
   * an approval): the guard is stopped too (unless the call waits in flight), and it is noted.
   */
  runtimeStop(
    reason: string,
    terminalState: TerminalState,
    errorCode?: string,
    unmet?: string,
    call: BlockedCall | null = null,
    operationKey: string | null = null,
    extra: StopExtra = {},
  ): void {
    if (!extra.inFlight) this.guard.forceStop(reason, terminalState);
    this.note('stop', reason, {
      ...(errorCode ? { error_code: errorCode } : {}),
      ...(call ? { tool: call.tool, fingerprint: call.fingerprint } : {}),
    });
    this.stop(terminalState, reason, call, operationKey, unmet, extra);
  }

  /** An operator's verified stop (the kill switch): `operator_stop`, resumable. */
  operatorStop(actor: string, why: string): void {
    this.guard.forceStop(GuardReason.OPERATOR_STOP);
    this.note('stop', GuardReason.OPERATOR_STOP, { args: { actor, reason: why } });
    const unmet = `operator ${actor}: ${why}`;
    this.stop(TerminalState.STOPPED_LOOP_GUARD, GuardReason.OPERATOR_STOP, null, null, unmet);
  }

  /** STOPPED → WAITING: the stop is resumable; the gate waits for a verified resume. */
  wait(): void {
    if (this.phase_ === 'WAITING') return;
    this.to('WAITING');
    this.publish();
  }

  /**
   * The call a stop kept in flight has ended (its wait ran out): the stop stays, now a stop of
   * the guard, so a later lift resumes the guard as for any stop.
   */
  settleInFlight(): void {
    const s = this.stop_;
    if (!s?.inFlight) return;
    this.guard.forceStop(s.reason, s.terminalState);
    this.stop_ = { ...s, inFlight: false };
  }

  /** WAITING → STOPPED: the wait ran out but the workflow goes on (the stop stays in force). */
  unwait(): void {
    if (this.phase_ === 'WAITING') this.to('STOPPED');
  }

  /**
   * WAITING → RUNNING: continue with `raise` applied and a restarted clock. A stop whose call is
   * still in flight ({@link Stop.inFlight}) leaves the guard as it is: that call goes on.
   */
  lift(raise: Record<string, number | undefined>): void {
    const lifted = this.stop_;
    if (!lifted?.inFlight) this.guard.resume(Date.now(), raise);
    this.approvalStop = lifted?.inFlight ? null : approvalStopOf(lifted);
    this.stop_ = null;
    this.to('RUNNING');
    this.publish();
  }

  /**
   * → a terminal state: the run ends (its stop's state, when no other is given). The engine
   * then builds its result (workflows/run-end.ts, core/framework-guard.ts).
   */
  close(state?: TerminalState): TerminalState {
    const final = state ?? this.stop_?.terminalState ?? TerminalState.PARTIAL;
    this.to(final);
    const reason = final === TerminalState.COMPLETED ? null : (this.stop_?.reason ?? null);
    tellRunEnd({ runId: this.runId, terminalState: final, reason, closed: true });
    return final;
  }

  protected to(next: RunPhase): void {
    this.phase_ = nextPhase(this.phase_, next);
  }

  // ---- bookkeeping ----

  /** Keeps a decision (the newest {@link MAX_DECISIONS_KEPT} at least). */
  decide(decision: RunDecision): void {
    this.decisions.push(decision);
    if (this.decisions.length > MAX_DECISIONS_KEPT * 2)
      this.decisions.splice(0, this.decisions.length - MAX_DECISIONS_KEPT);
  }

  /** Appends a trace record stamped with the run's counters, and tells telemetry. */
  record(rec: TraceFields): void {
    const at = { runId: this.runId, step: this.guard.stepCount, progressVersion: this.guard.progressVersion };
    this.trace.record(at, rec);
    tellDecision({
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
      atMs: Date.now(),
    });
  }

  /** A run-level trace record (signals, resumes, planner ends). */
  note(decision: string, reason: string | null, extra: Parameters<typeof RunTrace.noteFields>[2] = {}): void {
    this.record(RunTrace.noteFields(decision, reason, extra));
  }

  /**
   * Makes the run's state visible outside history's queries (the UI's details, search
   * attributes): each engine says how; `upsert` false asks for no history event.
   */
  publish(_upsert = true, _summary: string | null = null): void {}
}
