/**
 * The gate: every message that stops or resumes a run (docs/spec.md §7.3–7.4), and the
 * loop's two points that take what they decided (the kill-switch check and the wait for a
 * resume), in one section with explicit states. Message handlers only delegate here.
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
import { GuardReason, isBudgetReason, raiseKeyOf, TerminalState } from '../guard';
import { ResumeCheck } from './resume-check';
import type { RunActivities } from './run-activities';
import { RESUMABLE } from './run-phase';
import { tellParent } from './sub-agents';
import type { RunState } from './run-state';

/** Whether a resume is being verified, and whether an operator's stop has vetoed it. */
type Verification = 'idle' | 'verifying' | 'vetoed';

/** An operator's stop for a running run: `pending` until the worker has verified it. */
type StopHold = { readonly kind: 'none' } | { readonly kind: 'pending' | 'held'; readonly req: StopRequest };

const NO_HOLD: StopHold = { kind: 'none' };

/** Why a message payload was rejected, naming each field. */
function zodReason(issues: ReadonlyArray<{ path: PropertyKey[]; message: string }>): string {
  return issues.map((i) => `${i.path.map(String).join('.') || '(payload)'}: ${i.message}`).join('; ');
}

/** The resume/stop/approval gate of one run. */
export class RunGate {
  private verification: Verification = 'idle';
  private hold: StopHold = NO_HOLD;
  /** A resume the verification accepted, taken by {@link waitForResume}. */
  private accepted: ResumeRequest | null = null;
  /** The answer given to each resume request id (a retried update gets the same answer). */
  private readonly answers = new Map<string, ResumeAnswer>();
  /** Verifies resumes and operator requests (workflows/resume-check.ts). */
  private readonly check: ResumeCheck;

  constructor(
    private readonly run: RunState,
    activities: RunActivities,
  ) {
    this.check = new ResumeCheck(activities, run.runId);
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
    const kill = this.holding();
    if (!kill) return false; // refused: the operator was not authorised
    const run = this.run;
    run.guard.forceStop(GuardReason.OPERATOR_STOP);
    run.note('stop', GuardReason.OPERATOR_STOP, { args: { actor: kill.actor, reason: kill.reason } });
    const unmet = `operator ${kill.actor}: ${kill.reason}`;
    run.stop(TerminalState.STOPPED_LOOP_GUARD, GuardReason.OPERATOR_STOP, null, null, unmet);
    this.hold = NO_HOLD;
    return true;
  }

  /**
   * STOPPED → WAITING → RUNNING: waits durably for a verified resume and lifts the stop.
   * False when the run must end instead: the stop is not resumable, the resume window
   * ran out, or the workflow was cancelled.
   */
  async waitForResume(): Promise<boolean> {
    const stop = this.run.stopInForce;
    if (!stop || !RESUMABLE.has(stop.terminalState)) return false;
    // A sub-agent's budget is a reservation out of its parent's: it ends, and its parent's
    // planner decides (a raise here could make the tree spend more than its root's budget).
    if (this.run.input.tree && isBudgetReason(stop.reason)) return false;
    this.run.wait();
    await tellParent(this.run, 'stopped');
    try {
      if (!(await condition(() => this.accepted !== null, this.run.input.resumeWindowMs))) {
        // The window ran out while a resume was being verified: that verification decides,
        // or its caller would be told `accepted` by a run that has already closed.
        if (this.verification === 'idle') return false;
        await condition(() => this.verification === 'idle');
        if (this.accepted === null) return false;
      }
    } catch (err) {
      if (isCancellation(err)) return false;
      throw err;
    }
    const req = resumeRequestSchema.parse(this.accepted);
    this.accepted = null;
    // Only the budget that stopped the run is raised (a raise for another budget was refused).
    const lifted = this.run.stopInForce;
    const stopping = lifted ? raiseKeyOf(lifted.reason) : null;
    const raise = stopping && req.raise?.[stopping] !== undefined ? { [stopping]: req.raise[stopping] } : {};
    this.hold = NO_HOLD;
    this.run.lift(raise);
    await tellParent(this.run, 'resumed');
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
    if (this.verification !== 'idle')
      return void this.run.note('resume_refused', 'another resume is being verified');
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
    if (run.seenRequestIds.has(req.requestId)) {
      return { accepted: false, reason: 'duplicate request id', progressVersion: version };
    }
    run.seenRequestIds.add(req.requestId);
    const stop = run.stopInForce;
    let answer: ResumeAnswer;
    if (!stop || run.phase !== 'WAITING') {
      answer = { accepted: false, reason: 'run is not stopped', progressVersion: version };
    } else {
      this.beginVerification();
      let vetoed: boolean;
      try {
        answer = await this.check.verify(stop, req, run.guard);
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
    if (answer.accepted) this.accepted = req;
    run.publish();
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
   * notes either way; the update also answers what the worker did (issue 31), so a caller
   * never reports a stop the worker refused.
   */
  async stop(raw: StopRequest): Promise<StopAnswer> {
    const run = this.run;
    const req = stopRequestSchema.parse(raw);
    if (run.seenRequestIds.has(req.requestId)) return { accepted: false, reason: 'duplicate request id' };
    run.seenRequestIds.add(req.requestId);
    const args = { actor: req.actor, reason: req.reason };
    const ignored = (): StopAnswer => {
      run.note('stop_ignored', `run is ${run.phase}`, { args });
      return { accepted: false, reason: `run is ${run.phase}: there is no running step to stop` };
    };
    const held = { accepted: true, reason: 'the run stops before its next tool call' };
    const vetoing = run.phase === 'WAITING' && this.verification !== 'idle';
    // A parent waiting on its stopped child still runs: its kill switch stops the subtree (§7.14).
    const running = run.phase === 'RUNNING' || run.stopInForce?.reason === GuardReason.CHILD_STOPPED;
    if (!running && !vetoing) return ignored();
    // Until the worker has verified it, the stop already holds the run at its next check.
    if (!vetoing) this.hold = { kind: 'pending', req };
    const who = await this.check.authorise('stop', req, null);
    const mine = this.holding() === req;
    if (!who.ok) {
      if (mine) this.hold = NO_HOLD;
      run.note('stop_refused', `not authorised: ${who.detail}`, { args });
      return { accepted: false, reason: `not authorised: ${who.detail}` };
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
