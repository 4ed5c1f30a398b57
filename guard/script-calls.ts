/**
 * A script's calls in the compact form (docs/spec.md §6, "Repeated calls"): an entry of a
 * replay file's `calls` is either one call or `{ repeat: { times, call } }`, which stands for
 * `times` copies of `call` with `{i}` (0, 1, …) put into every string of its `args` and its
 * `operationKey`. A 100,000-write script stays a few hundred bytes of run input.
 *
 * Pure and structural: the workflow picks the one call it sends to the plan activity with a
 * {@link ScriptCursor} over the raw (already validated) script, built once per run, the
 * offline replay with one over the parsed script, and the planner with {@link scriptCallAt}
 * (a cursor kept per array). Reading the next call is O(1), not a walk from the first entry.
 */

/** A repeat entry: `times` copies of `call`, `{i}` substituted. */
export interface RepeatEntry<C> {
  readonly repeat: { readonly times: number; readonly call: C };
}

/** The placeholder a repeated call's strings carry. */
export const REPEAT_INDEX = '{i}';

/** Whether a script entry is a repeat entry. */
export function isRepeatEntry(entry: unknown): entry is RepeatEntry<unknown> {
  return (
    typeof entry === 'object' &&
    entry !== null &&
    'repeat' in entry &&
    typeof (entry as { repeat: unknown }).repeat === 'object' &&
    (entry as { repeat: unknown }).repeat !== null
  );
}

/** The number of calls an entry stands for. */
function lengthOf(entry: unknown): number {
  return isRepeatEntry(entry) ? Math.max(0, Math.trunc(Number(entry.repeat.times) || 0)) : 1;
}

/** `value` with `{i}` replaced by `i` in every string (objects and arrays copied). */
function substitute(value: unknown, i: string): unknown {
  if (typeof value === 'string')
    return value.includes(REPEAT_INDEX) ? value.split(REPEAT_INDEX).join(i) : value;
  if (Array.isArray(value)) return value.map((v) => substitute(v, i));
  if (typeof value === 'object' && value !== null)
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(v, i)]));
  return value;
}

/** How many calls a script's entries stand for. */
export function scriptLength(entries: readonly unknown[]): number {
  let n = 0;
  for (const e of entries) n += lengthOf(e);
  return n;
}

/** A repeat entry's call at `at` (0-based within the entry): `{i}` substituted. */
function expand<C>(entry: C | RepeatEntry<C>, at: number): C {
  if (!isRepeatEntry(entry)) return entry as C;
  const call = entry.repeat.call as C & { args?: unknown; operationKey?: string | null };
  const i = String(at);
  return {
    ...call,
    ...(call.args !== undefined ? { args: substitute(call.args, i) } : {}),
    ...(typeof call.operationKey === 'string' ? { operationKey: substitute(call.operationKey, i) } : {}),
  } as C;
}

/**
 * Random access to an expanded script, built once in one pass over its entries: the index of
 * the call each entry starts at. The next call after the last one read is found in O(1) (the
 * same entry or the one after), any other in O(log entries) — where walking from the first
 * entry for every index made a script of n distinct calls cost O(n²). Pure and
 * deterministic: the workflow keeps one per run (rebuilt after a continue-as-new).
 */
export class ScriptCursor<C> {
  /** How many calls the script stands for. */
  readonly length: number;
  private readonly entries: readonly (C | RepeatEntry<C>)[];
  /** `starts[k]`: the index of entry k's first call. */
  private readonly starts: number[];
  private readonly lengths: number[];
  /** The entry the last call read came from. */
  private last = 0;

  constructor(entries: readonly (C | RepeatEntry<C>)[]) {
    this.entries = entries;
    this.starts = [];
    this.lengths = [];
    let n = 0;
    for (const entry of entries) {
      const len = lengthOf(entry);
      this.starts.push(n);
      this.lengths.push(len);
      n += len;
    }
    this.length = n;
  }

  /** The call at `index` (undefined past the end); see {@link scriptCallAt}. */
  at(index: number): C | undefined {
    if (!Number.isInteger(index) || index < 0 || index >= this.length) return undefined;
    const k = this.entryOf(index);
    this.last = k;
    return expand(this.entries[k]!, index - this.starts[k]!);
  }

  private holds(k: number, index: number): boolean {
    return k < this.starts.length && this.starts[k]! <= index && index < this.starts[k]! + this.lengths[k]!;
  }

  private entryOf(index: number): number {
    if (this.holds(this.last, index)) return this.last;
    if (this.holds(this.last + 1, index)) return this.last + 1;
    // The last entry starting at or before `index` (an empty `repeat` starts where the next does).
    let lo = 0;
    let hi = this.starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.starts[mid]! <= index) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }
}

/** One cursor per script array, so callers that pass the same array do not rebuild it. */
const cursors = new WeakMap<readonly unknown[], ScriptCursor<unknown>>();

/** The (cached) cursor over a script's entries. */
export function scriptCursor<C>(entries: readonly (C | RepeatEntry<C>)[]): ScriptCursor<C> {
  let cursor = cursors.get(entries) as ScriptCursor<C> | undefined;
  if (!cursor) {
    cursor = new ScriptCursor(entries);
    cursors.set(entries, cursor as ScriptCursor<unknown>);
  }
  return cursor;
}

/**
 * The call at `index` of the expanded script (undefined past its end): a plain entry as it
 * is, a repeated one as a copy with `{i}` substituted in its `args` and `operationKey`.
 * Read through a cursor kept per entries array (O(1) for the next call, {@link ScriptCursor});
 * the array must not be changed afterwards (scripts are not).
 */
export function scriptCallAt<C>(entries: readonly (C | RepeatEntry<C>)[], index: number): C | undefined {
  return scriptCursor(entries).at(index);
}
