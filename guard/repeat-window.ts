/**
 * The loop guard's window (docs/spec.md §3): the calls since the last progress, which the repeat
 * rules read — how often each window key occurs and its latest result kind, the last three keys
 * (short cycles), the honoured re-polls per fingerprint — and, with `keepFailures`, the failed
 * calls a read's new window starts with (guard/failure-memory.ts). Every operation is O(1)
 * amortised in the window's length: counts are kept, never a list that is rescanned.
 */
import type { ResultKind } from './constants';
import { FailureMemory, type WindowCause } from './failure-memory';
import { windowFromJson, windowToJson, type GuardStateJson, type WindowEntry } from './guard-state';
import type { GuardConfig } from './schemas';

/** The window's parts of the guard's JSON state, in the guard's key order. */
export type WindowJson = Pick<
  GuardStateJson,
  'windowLength' | 'counts' | 'lastKinds' | 'exacts' | 'lastThree' | 'honoured'
>;

/** One guard's window of calls since the last progress. */
export class RepeatWindow {
  /** Entries in the window. */
  length = 0;
  /** Per window key: how often it occurs and its latest entry's result kind. */
  private entries = new Map<string, WindowEntry>();
  /** The last three window keys (oldest first). */
  private lastThree: string[] = [];
  /** Honoured re-polls per fingerprint in the window. */
  private honoured = new Map<string, number>();
  /** Failed calls kept across windows opened by reads (`keepFailures`). */
  private failures = new FailureMemory();

  /** `config` is the guard's own (read as it is at each call: `keepFailures`). */
  constructor(private readonly config: Pick<GuardConfig, 'keepFailures'>) {}

  /** A window key's entry, if it is in the window. */
  get(key: string): WindowEntry | undefined {
    return this.entries.get(key);
  }

  /** True when proposing `key` now would close a short cycle A, B, A, B. */
  closesCycle(key: string): boolean {
    const [x, y, z] = this.lastThree;
    return this.lastThree.length === 3 && x === z && x !== y && key === y;
  }

  /** Honoured re-polls of a fingerprint in this window. */
  polls(fingerprint: string): number {
    return this.honoured.get(fingerprint) ?? 0;
  }

  /** Counts an honoured re-poll of a fingerprint. */
  honour(fingerprint: string): void {
    this.honoured.set(fingerprint, this.polls(fingerprint) + 1);
  }

  /** Opens a new window; with `keepFailures`, a read's starts with the remembered failures. */
  open(cause: WindowCause): void {
    this.entries.clear();
    this.length = this.config.keepFailures ? this.failures.open(this.entries, cause) : 0;
    this.lastThree = [];
    if (this.honoured.size > 0) this.honoured.clear();
  }

  /** Enters a call under its window key; `exact` is its fingerprint when the key is a near-repeat key. */
  enter(key: string, kind: ResultKind, exact?: string): void {
    this.length += 1;
    const entry = this.entries.get(key);
    if (entry === undefined)
      this.entries.set(key, exact === undefined ? { count: 1, kind } : { count: 1, kind, exact });
    else {
      entry.count += 1;
      entry.kind = kind;
      if (exact !== undefined && entry.exact !== exact) entry.exact = '*';
    }
    if (this.config.keepFailures) this.failures.note(key, this.entries.get(key)!);
    this.lastThree.push(key);
    if (this.lastThree.length > 3) this.lastThree.shift();
  }

  /** The window as JSON (the failure memory apart: {@link failuresJson}). */
  toJSON(): WindowJson {
    return {
      windowLength: this.length,
      ...windowToJson(this.entries),
      lastThree: [...this.lastThree],
      honoured: [...this.honoured],
    };
  }

  /** The failure memory as JSON (undefined when nothing is remembered). */
  failuresJson(): GuardStateJson['failures'] {
    return this.failures.size > 0 ? this.failures.toJSON() : undefined;
  }

  /** Restores a window from {@link toJSON} and {@link failuresJson} output. */
  static fromJSON(
    config: Pick<GuardConfig, 'keepFailures'>,
    state: WindowJson & Pick<GuardStateJson, 'failures'>,
  ): RepeatWindow {
    const w = new RepeatWindow(config);
    w.length = state.windowLength;
    w.entries = windowFromJson(state);
    w.lastThree = [...state.lastThree];
    w.honoured = new Map(state.honoured);
    w.failures = FailureMemory.fromJSON(state.failures);
    return w;
  }
}
