/**
 * The loop guard's measure of progress (docs/spec.md §3, the `no_progress` rule): the highest
 * progress version an executed call brought back, and how many decisions in a row brought none.
 * A call that advances the version (or changes the workspace) opens a new window and resets the
 * count; a cached answer, or a call that is not an honoured re-poll, counts one more. At
 * `noProgressLimit` calls the run gets a note (with a grace), at the limit plus the grace it stops.
 *
 * It is a part of the guard's state of its own, as budgets.ts and poll-memory.ts are: the rules
 * (loop-guard.ts) tell it what each call brought back and ask it for its verdict; the state JSON
 * carries it as `lastProgressVersion` and `noProgress`. Pure.
 */

/** What the progress count says after a call: nothing, the grace note, or the stop. */
export type ProgressVerdict = 'stop' | 'note' | null;

/** The progress of one guard. */
export class ProgressMeter {
  /** Consecutive decisions without progress. */
  count = 0;

  constructor(
    /** The highest progress version seen. */
    public version: number,
  ) {}

  /** Whether an executed call's `version` is past the highest seen; the highest is then that one. */
  advance(version: number): boolean {
    if (version <= this.version) return false;
    this.version = version;
    return true;
  }

  /** A new window: nothing counted against it yet. */
  reset(): void {
    this.count = 0;
  }

  /** One more decision without progress. */
  miss(): void {
    this.count += 1;
  }

  /**
   * The stop at `limit + grace` calls without progress; with a grace, the note when the count first
   * reaches `limit` (the count only grows within a window, so it equals the limit once per window).
   */
  verdict(limit: number, grace: number): ProgressVerdict {
    if (this.count >= limit + grace) return 'stop';
    return this.count === limit && grace > 0 ? 'note' : null;
  }
}
