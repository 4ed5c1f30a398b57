/**
 * The loop guard's steers (docs/spec.md §3): every refusal that went back to the planner as a
 * guard note instead of stopping the run, oldest first, with the step it was logged at. Two
 * kinds share the log: a repeat rule's steer (it costs a step, and `steerLimit` bounds how many
 * a run gets: {@link SteerLog.repeats}) and the `no_progress` note given with a call's result
 * before the stop (`noProgressGrace`: it costs no step and is not bounded).
 *
 * It is a part of the guard's state of its own, as budgets.ts and reapplied.ts are: the rules
 * (loop-guard.ts) decide when to steer, this log only remembers it, for the StopReport and for
 * the state JSON (`steers`, absent when there are none). Pure.
 */
import type { Steer } from './guard-state';
import { GuardReason } from './reasons';

/** The steers of one guard. */
export class SteerLog {
  private log: Steer[] = [];
  /** The repeat rules' steers in the log (what `steerLimit` bounds; notes of `no_progress` are not). */
  private repeatCount = 0;

  /** Every steer and note so far, oldest first. */
  get entries(): readonly Steer[] {
    return this.log;
  }

  /** How many repeat rule steers the run has had. */
  get repeats(): number {
    return this.repeatCount;
  }

  /** Logs a repeat rule's steer charged at `step`; answers how many the run has had with it. */
  repeat(reason: GuardReason, fingerprint: string, step: number): number {
    this.repeatCount += 1;
    this.log.push({ reason, fingerprint, step });
    return this.repeatCount;
  }

  /** Logs the `no_progress` note at the step of the call that ran. */
  note(fingerprint: string, step: number): void {
    this.log.push({ reason: GuardReason.NO_PROGRESS, fingerprint, step });
  }

  /** The guard state's `steers` key: present only when the log holds something. */
  toStateJson(): { steers?: Steer[] } {
    return this.log.length > 0 ? { steers: this.log.map((s) => ({ ...s })) } : {};
  }

  /** Restores a log from the state's `steers` (absent: none). */
  static fromJSON(steers: readonly Steer[] | undefined): SteerLog {
    const s = new SteerLog();
    s.log = (steers ?? []).map((e) => ({ ...e }));
    s.repeatCount = s.log.filter((e) => e.reason !== GuardReason.NO_PROGRESS).length;
    return s;
  }
}
