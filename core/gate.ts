/**
 * The gate: every message that stops or resumes a guarded run (docs/spec.md §7.3–7.4), on any
 * engine (an `agentRun`, an AI SDK agent), and the loop's two points that take what they
 * decided (the kill-switch check and the wait for a resume), in one section with explicit
 * states. Message handlers only delegate here (core/handlers.ts). Every refusal it decides is
 * noted in the trace and audited once.
 *
 * Serialised by its states, not by a lock. What the sample's `Mutex.runExclusive` gives
 * (one resume verification at a time) is the `verification` state: both ways in (the
 * update's validator and the signal) refuse while it is not `idle`, and a verification
 * takes it synchronously, before its first `await`, so two never overlap. A refusal is the
 * documented answer ("another resume is being verified"); a queued request would be
 * verified against a stop the first one may already have lifted. The states change only
 * in the methods below, each step synchronous between awaits:
 *
 * ```text
 *   verification   idle ──resume()──▶ verifying ──stop signal, authorised──▶ vetoed
 *                   ▲                    │                                     │
 *                   └──verified (accepted, or refused; vetoed ⇒ refused)───────┘
 *
 *   stop hold      none ──stop signal, RUNNING──▶ pending ──authorised──▶ held
 *                   ▲                               │                      │
 *                   └──────── refused ──────────────┘     applyStopRequest() or lift()
 *                   └──────────────────────────────────────────────────────┘
 *
 *   accepted       null ──resume verified──▶ request ──waitForResume() lifts──▶ null
 * ```
 *
 * A `pending` stop already holds the run at its next check (the loop waits until it is
 * `held` or refused). A stop that arrives while a resume is being verified does not hold
 * the run: once authorised it vetoes that resume, and the run stays stopped. Workflow code.
 */
import { condition, isCancellation } from '@temporalio/workflow';
import {
  resumeRequestSchema,
  stopRequestSchema,
  type ResumeAnswer,
  type ResumeRequest,
  type StopAnswer,
  type StopRequest,
} from '../common/contracts';
import { liftRuleOf, raiseKeyOf } from '../guard';
import { RESUMABLE } from './phase';
import { ResumeCheck, type GateActivities } from './resume-check';
import { resumeNoteText, type ResumeObservation } from './resume-note';
import type { GuardedRun } from './run';

/** What an engine adds to the gate's wait for a resume (all optional). */
export interface GateHooks {
  /** True when this stop ends the run instead of waiting (a sub-agent's budget stop). */
  endsInsteadOfWaiting?(stop: NonNullable<GuardedRun['stopInForce']>): boolean;
  /** The run waits for a resume now (a sub-agent tells its parent). */
  onWaiting?(): Promise<void>;
  /** A verified resume lifted the stop. */
  onResumed?(): Promise<void>;
  /** True when a stop in force still lets the kill switch stop the run (a parent waiting on its child). */
  stillRunning?(): boolean;
}

/** Whether a resume is being verified, and whether an operator's stop has vetoed it. */
type Verification = 'idle' | 'verifying' | 'vetoed';

/** An operator's stop for a running run: `pending` until the worker has verified it. */
type StopHold = { readonly kind: 'none' } | { readonly kind: 'pending' | 'held'; readonly req: StopRequest };

const NO_HOLD: StopHold = { kind: 'none' };

/** Why a message payload was rejected, naming each field. */
function zodReason(issues: ReadonlyArray<{ path: PropertyKey[]; message: string }>): string {
  return issues.map((i) => `${i.path.map(String).join('.') || '(payload)'}: ${i.message}`).join('; ');
}

/**
 * The resume window's timer as the UI's timeline shows it: what the run waits for and the
 * command that lets it go on (an approval stop is lifted by an approval first).
 */
function resumeWaitSummary(stop: NonNullable<GuardedRun['stopInForce']>, runId: string): string {
  const on = stop.blockedTool ? ` on ${stop.blockedTool}` : '';
  const how =
    liftRuleOf(stop.reason) === 'approval'
      ? `agentctl approvals approve ${runId}, then agentctl resume ${runId}`
      : `agentctl resume ${runId}`;
  return `stopped ${stop.terminalState} (${stop.reason}${on}): waits for a verified resume · ${how}`;
}

/** The resume/stop/approval gate of one run. */
export class RunGate {
  private verification: Verification = 'idle';
  private hold: StopHold = NO_HOLD;
  /** A resume the verification accepted, taken by {@link waitForResume}. */
  private accepted: ResumeRequest | null = null;
  /** What that verification read now (the blocked call's fresh result), for the model. */
  private acceptedObserved: ResumeObservation | null = null;
  /** The answer given to each resume request id (a retried update gets the same answer). */
  private readonly answers = new Map<string, ResumeAnswer>();
  /** Verifies resumes and operator requests (workflows/resume-check.ts). */
  private readonly check: ResumeCheck;

  constructor(
    private readonly run: GuardedRun,
    activities: GateActivities,
    private readonly hooks: GateHooks = {},
  ) {
    this.check = new ResumeCheck(activities, run.runId);
  }

  /** The worker's checks this gate asks (an engine's own handlers may need the operator check). */
  get checks(): ResumeCheck {
    return this.check;
  }

  /** True while a resume is being verified. */
  get verifying(): boolean {
    return this.verification !== 'idle';
  }

  /** True when an operator's stop arrived and has not been applied yet (verified or not). */
  get stopRequested(): boolean {
    return this.hold.kind !== 'none';
  }

  /** True when an operator's stop has been verified and waits to be applied (a spawn cancels its child). */
  get stopHeld(): boolean {
    return this.hold.kind === 'held';
  }

  // ---- the transitions of the states ----

  /** The stop request pending or held, read afresh (a handler may have changed it during an await). */
  private holding(): StopRequest | null {
    return this.hold.kind === 'none' ? null : this.hold.req;
  }

  /** idle → verifying: only from idle, as both ways in refuse otherwise. */
  private beginVerification(): void {
    this.verification = 'verifying';
  }

  /** verifying → vetoed. A veto after the verification ended changes nothing: that answer stands. */
  private veto(): void {
    if (this.verification === 'verifying') this.verification = 'vetoed';
  }

  /** verifying | vetoed → idle; true when the verification was vetoed (its answer becomes a refusal). */
  private endVerification(): boolean {
    const vetoed = this.verification === 'vetoed';
    this.verification = 'idle';
    return vetoed;
  }

  // ---- the loop's side ----

  /** Applies an operator's stop that arrived while the run was running (once verified). */
  async applyStopRequest(): Promise<boolean> {
    if (!this.stopRequested) return false;
    if (this.hold.kind === 'pending') await condition(() => this.hold.kind !== 'pending');
    return this.applyHeldStop();
  }

  /**
   * Applies an operator's verified stop now, without waiting for one pending verification (a
   * point that cannot wait: the AI SDK's `stopWhen`, the run's result). True when it stopped.
   */
  applyHeldStop(): boolean {
    if (this.hold.kind !== 'held') return false;
    const kill = this.hold.req;
    this.hold = NO_HOLD;
    if (this.run.stopped) return true;
    this.run.operatorStop(kill.actor, kill.reason);
    return true;
  }

  /**
   * A durable wait of `ms` (a RETRYABLE backoff, a PENDING re-poll) that an operator's stop ends
   * early once it is verified. A stop the worker refuses does not end it: the run waits the rest,
   * so a refused stop leaves the run exactly as it was (an early re-poll would count as a repeat).
   */
  async sleepUnlessStopped(ms: number, why = 'before the next step'): Promise<void> {
    const end = Date.now() + ms;
    // The timer's summary in the UI's timeline: what the run waits for, and what ends it early.
    const summary = `waits ${why}; agentctl stop ends the wait`;
    for (;;) {
      const left = end - Date.now();
      if (left <= 0) return;
      if (!(await condition(() => this.hold.kind !== 'none', left, { summary }))) return;
      if (this.hold.kind === 'pending') await condition(() => this.hold.kind !== 'pending');
      if (this.hold.kind === 'held') return;
    }
  }

  /**
   * STOPPED → WAITING → RUNNING: waits durably for a verified resume and lifts the stop.
   * False when the run must end instead: the stop is not resumable, the resume window
   * ran out, or the workflow was cancelled.
   */
  async waitForResume(windowMs: number): Promise<boolean> {
    const stop = this.run.stopInForce;
    if (!stop || !RESUMABLE.has(stop.terminalState)) return false;
    if (this.hooks.endsInsteadOfWaiting?.(stop)) return false;
    this.run.waitingUntilMs = Date.now() + windowMs;
    this.run.wait();
    await this.hooks.onWaiting?.();
    try {
      if (
        !(await condition(() => this.accepted !== null, windowMs, {
          summary: resumeWaitSummary(stop, this.run.runId),
        }))
      ) {
        // The window ran out while a resume was being verified: that verification decides,
        // or its caller would be told `accepted` by a run that has already closed.
        if (this.verification === 'idle') return false;
        await condition(() => this.verification === 'idle');
        if (this.accepted === null) return false;
      }
    } catch (err) {
      if (isCancellation(err)) return false;
      throw err;
    } finally {
      this.run.waitingUntilMs = null;
    }
    const req = resumeRequestSchema.parse(this.accepted);
    this.accepted = null;
    // Only the budget that stopped the run is raised (a raise for another budget was refused).
    const lifted = this.run.stopInForce;
    const stopping = lifted ? raiseKeyOf(lifted.reason) : null;
    const raise = stopping && req.raise?.[stopping] !== undefined ? { [stopping]: req.raise[stopping] } : {};
    this.hold = NO_HOLD;
    if (lifted)
      // The model is told what changed before its next turn (core/resume-note.ts).
      this.run.resumeNotes.add(
        resumeNoteText({
          actor: req.actor,
          reason: req.reason,
          note: req.note,
          precondition: req.precondition,
          verified: this.answers.get(req.requestId)?.reason ?? 'accepted',
          stopReason: lifted.reason,
          blockedTool: lifted.blockedTool,
          raised: raise,
          observed: this.acceptedObserved,
        }),
      );
    this.acceptedObserved = null;
    this.run.lift(raise);
    await this.hooks.onResumed?.();
    return true;
  }

  // ---- messages ----

  /** The `resume` signal: like the update, with the outcome recorded in the trace only. */
  async onResumeSignal(raw: unknown): Promise<void> {
    const parsed = resumeRequestSchema.safeParse(raw);
    if (!parsed.success) {
      this.run.note('signal_rejected', zodReason(parsed.error.issues), { error_code: 'invalid_signal' });
      return;
    }
    if (this.verification !== 'idle') {
      const reason = 'another resume is being verified';
      this.run.note('resume_refused', reason);
      const { actor, requestId } = parsed.data;
      const stopRef = this.run.stopInForce?.report.last_safe_checkpoint ?? null;
      return this.check.audit({ action: 'resume', actor, requestId, stopRef, reason });
    }
    await this.resume(parsed.data);
  }

  /** The `resume` update's validator: a synchronous no before anything is recorded. */
  validateResume(raw: unknown): void {
    const parsed = resumeRequestSchema.safeParse(raw);
    if (!parsed.success) throw new Error(zodReason(parsed.error.issues));
    if (this.answers.has(parsed.data.requestId)) return;
    if (this.run.phase !== 'WAITING') throw new Error(`run is ${this.run.phase}, not waiting for resume`);
    if (this.verification !== 'idle') throw new Error('another resume is being verified');
  }

  /** Verifies a resume request; an accepted one is taken by {@link waitForResume}. */
  async resume(raw: ResumeRequest): Promise<ResumeAnswer> {
    const run = this.run;
    const req = resumeRequestSchema.parse(raw);
    const prior = this.answers.get(req.requestId);
    if (prior) return prior;
    const version = run.guard.progressVersion;
    const stop = run.stopInForce;
    const stopRef = stop?.report.last_safe_checkpoint ?? null;
    if (run.seenRequestIds.has(req.requestId)) {
      const reason = 'duplicate request id';
      await this.check.audit({
        action: 'resume',
        actor: req.actor,
        requestId: req.requestId,
        stopRef,
        reason,
      });
      return { accepted: false, reason, progressVersion: version };
    }
    run.seenRequestIds.add(req.requestId);
    let answer: ResumeAnswer;
    let audited = false;
    if (!stop || run.phase !== 'WAITING') {
      answer = { accepted: false, reason: 'run is not stopped', progressVersion: version };
    } else {
      this.beginVerification();
      let vetoed: boolean;
      try {
        answer = await this.check.verify(stop, req, run.guard);
        audited = this.check.auditedByVerifier;
      } finally {
        vetoed = this.endVerification();
      }
      if (answer.accepted && vetoed)
        answer = {
          ...answer,
          accepted: false,
          reason: 'an operator stopped the run while this resume was being verified',
        };
    }
    this.answers.set(req.requestId, answer);
    run.note(answer.accepted ? 'resume_accepted' : 'resume_refused', answer.reason, {
      tool: stop?.blockedTool ?? null,
      fingerprint: stop?.report.blocked_call?.fingerprint ?? null,
      args: { actor: req.actor, reason: req.reason, precondition: req.precondition },
    });
    if (answer.accepted) {
      this.accepted = req;
      this.acceptedObserved = this.check.observed;
    }
    run.publish();
    // One audit row per refusal: the verifier's own (an approval it did not find), or the gate's.
    if (!answer.accepted && !audited)
      await this.check.audit({
        action: 'resume',
        actor: req.actor,
        requestId: req.requestId,
        stopRef,
        reason: answer.reason,
      });
    return answer;
  }

  /** The `stop` signal: the kill switch, effective before the next tool call; the answer lands in the trace only. */
  async onStopSignal(raw: unknown): Promise<void> {
    const parsed = stopRequestSchema.safeParse(raw);
    if (!parsed.success) {
      this.run.note('signal_rejected', zodReason(parsed.error.issues), { error_code: 'invalid_signal' });
      return;
    }
    await this.stop(parsed.data);
  }

  /** The `stop` update's validator: a malformed request is refused before anything is recorded. */
  validateStop(raw: unknown): void {
    const parsed = stopRequestSchema.safeParse(raw);
    if (!parsed.success) throw new Error(zodReason(parsed.error.issues));
  }

  /**
   * The kill switch, for the signal and the `stop` update alike: the same states and trace
   * notes either way; the update also answers what the worker did, so a caller
   * never reports a stop the worker refused.
   */
  async stop(raw: StopRequest): Promise<StopAnswer> {
    const run = this.run;
    const req = stopRequestSchema.parse(raw);
    const refuse = async (reason: string): Promise<StopAnswer> => {
      const stopRef = run.stopInForce?.report.last_safe_checkpoint ?? null;
      await this.check.audit({ action: 'stop', actor: req.actor, requestId: req.requestId, stopRef, reason });
      return { accepted: false, reason };
    };
    if (run.seenRequestIds.has(req.requestId)) return refuse('duplicate request id');
    run.seenRequestIds.add(req.requestId);
    const args = { actor: req.actor, reason: req.reason };
    const held = { accepted: true, reason: 'the run stops before its next tool call' };
    const vetoing = run.phase === 'WAITING' && this.verification !== 'idle';
    // A parent waiting on its stopped child still runs: its kill switch stops the subtree (§7.14).
    const running = run.phase === 'RUNNING' || (this.hooks.stillRunning?.() ?? false);
    if (!running && !vetoing) {
      run.note('stop_ignored', `run is ${run.phase}`, { args });
      return refuse(`run is ${run.phase}: there is no running step to stop`);
    }
    // Until the worker has verified it, the stop already holds the run at its next check.
    if (!vetoing) this.hold = { kind: 'pending', req };
    const who = await this.check.authorise('stop', req, null);
    const mine = this.holding() === req;
    if (!who.ok) {
      if (mine) this.hold = NO_HOLD;
      run.note('stop_refused', `not authorised: ${who.detail}`, { args });
      return refuse(`not authorised: ${who.detail}`);
    }
    if (vetoing) {
      // A stop while a resume is being verified cancels that resume: the run stays stopped.
      this.veto();
      run.note('resume_vetoed', `stop by ${who.detail}`, { args });
      return { accepted: true, reason: 'the resume being verified is vetoed: the run stays stopped' };
    }
    if (mine) this.hold = { kind: 'held', req };
    return held;
  }
}
