/**
 * Loop memory that new reads cannot erase (docs/spec.md §3 "Failure memory"). With
 * `keepFailures` (the `llm` profile), the guard remembers every call whose latest result in the
 * window was PRECONDITION (a failed call: an unmet precondition, a tool error handed to the
 * model) with its count. A new window opened by a read — fresh read content, which cannot change
 * the failed call's outcome — starts with those entries, so `precondition_unchanged` and the
 * repeat counts still see the earlier failure. The memory is cleared only by what can change
 * that outcome: a window opened after a write of the run (a committed write, or a progress
 * source that moved after one) and a verified resume. Pure and deterministic, like the guard.
 */
import type { WindowEntry } from './guard-state';

/** A remembered failure as JSON: window key, count, and the near-repeat exact fingerprint if any. */
export type FailureJson = readonly [string, number] | readonly [string, number, string];

/** What made a new window open. */
export type WindowCause = 'read' | 'write' | 'resume';

/** The failed calls a guard with `keepFailures` remembers across windows opened by reads. */
export class FailureMemory {
  private readonly failed = new Map<string, WindowEntry>();

  /** How many failed calls are remembered. */
  get size(): number {
    return this.failed.size;
  }

  /** Records a window entry after its call: remembered while its latest result is PRECONDITION. */
  note(key: string, entry: WindowEntry): void {
    if (entry.kind === 'PRECONDITION') this.failed.set(key, { ...entry });
    else if (this.failed.size > 0) this.failed.delete(key);
  }

  /**
   * A new window opened: a read's window starts with the remembered failures (returns how
   * many entries that adds); a write's or a resume's clears them (returns 0).
   */
  open(window: Map<string, WindowEntry>, cause: WindowCause): number {
    if (cause !== 'read') {
      this.failed.clear();
      return 0;
    }
    let entries = 0;
    for (const [key, e] of this.failed) {
      window.set(key, { ...e });
      entries += e.count;
    }
    return entries;
  }

  /** The memory as JSON (empty when nothing is remembered). */
  toJSON(): FailureJson[] {
    return [...this.failed].map(([k, e]) => (e.exact === undefined ? [k, e.count] : [k, e.count, e.exact]));
  }

  /** Restores the memory from {@link toJSON} output. */
  static fromJSON(json: readonly FailureJson[] | undefined): FailureMemory {
    const m = new FailureMemory();
    for (const [key, count, exact] of json ?? []) {
      const entry: WindowEntry = { count, kind: 'PRECONDITION' };
      if (exact !== undefined) entry.exact = exact;
      m.failed.set(key, entry);
    }
    return m;
  }
}
