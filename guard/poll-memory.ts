/**
 * The loop guard's memory of waits (docs/spec.md §3, the honoured re-poll): for each call (exact
 * fingerprint) whose latest execution came back PENDING or RETRYABLE with a `retryAfterMs`, the
 * kind, the wait and when it ran. A repeat of that call once the wait has passed is an honoured
 * poll: the repeat rules let it through (the window counts it against `maxWaitPolls` instead)
 * and it is not counted as a call without progress.
 *
 * It is a part of the guard's state of its own, as budgets.ts and reapplied.ts are: the rules
 * (loop-guard.ts) ask it whether a call honours its wait and tell it what each executed call
 * returned; the state JSON carries it as `lastExecutions`. Pure: time comes in as `nowMs`.
 */
import type { LastExecution } from './guard-state';
import type { ToolResult } from './schemas';

/** The waits of one guard. */
export class PollMemory {
  private latest = new Map<string, LastExecution>();

  /** Whether a call of `fingerprint` at `nowMs` comes after the wait its latest execution asked for. */
  honoured(fingerprint: string, nowMs: number): boolean {
    const last = this.latest.size > 0 ? this.latest.get(fingerprint) : undefined;
    return last !== undefined && nowMs - last.atMs >= last.retryAfterMs;
  }

  /** Records what an executed call returned: a wait asked for is kept, anything else forgets the call. */
  record(fingerprint: string, result: ToolResult, nowMs: number): void {
    const wait = result.kind === 'PENDING' || result.kind === 'RETRYABLE' ? result.retryAfterMs : undefined;
    if (wait !== undefined)
      this.latest.set(fingerprint, { kind: result.kind, retryAfterMs: wait, atMs: nowMs });
    else this.latest.delete(fingerprint);
  }

  /** Forgets every wait (a resume: the world was re-verified). */
  clear(): void {
    this.latest.clear();
  }

  /** The memory as the state's `lastExecutions`, oldest first. */
  toJSON(): Array<readonly [string, LastExecution]> {
    return [...this.latest].map(([k, v]) => [k, { ...v }] as const);
  }

  /** Restores a memory from {@link toJSON} output. */
  static fromJSON(entries: ReadonlyArray<readonly [string, LastExecution]>): PollMemory {
    const m = new PollMemory();
    m.latest = new Map(entries.map(([k, v]) => [k, { ...v }]));
    return m;
  }
}
