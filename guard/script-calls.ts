/**
 * A script's calls in the compact form (docs/spec.md §6, "Repeated calls"): an entry of a
 * replay file's `calls` is either one call or `{ repeat: { times, call } }`, which stands for
 * `times` copies of `call` with `{i}` (0, 1, …) put into every string of its `args` and its
 * `operationKey`. A 100,000-write script stays a few hundred bytes of run input.
 *
 * Pure and structural: the workflow picks the one call it sends to the plan activity with
 * {@link scriptCallAt} from the raw (already validated) script, and the planner and the
 * offline replay use the same function on the parsed one.
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

/**
 * The call at `index` of the expanded script (undefined past its end): a plain entry as it
 * is, a repeated one as a copy with `{i}` substituted in its `args` and `operationKey`.
 */
export function scriptCallAt<C>(entries: readonly (C | RepeatEntry<C>)[], index: number): C | undefined {
  if (!Number.isInteger(index) || index < 0) return undefined;
  let at = index;
  for (const entry of entries) {
    const n = lengthOf(entry);
    if (at >= n) {
      at -= n;
      continue;
    }
    if (!isRepeatEntry(entry)) return entry as C;
    const call = entry.repeat.call as C & { args?: unknown; operationKey?: string | null };
    const i = String(at);
    return {
      ...call,
      ...(call.args !== undefined ? { args: substitute(call.args, i) } : {}),
      ...(typeof call.operationKey === 'string' ? { operationKey: substitute(call.operationKey, i) } : {}),
    } as C;
  }
  return undefined;
}
