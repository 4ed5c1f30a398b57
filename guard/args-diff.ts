/**
 * Which args of two calls differ (an `idempotency_conflict` StopReport says which args
 * of the call holding the operation key and of the refused call differ). Pure: plain JSON in,
 * the differing paths out (`text`, `to.account`, `items[2]`), each with both sides' values,
 * bounded in number and size. A side that lacks the path has no value there.
 */

/** One path where the held call's args and the proposed call's args differ. */
export interface ArgDifference {
  /** `a.b[2]`-style path into the args; `(args)` for the args as a whole. */
  readonly path: string;
  /** The value in the call that holds the key (absent: it has none there). */
  readonly held?: unknown;
  /** The value in the refused call (absent: it has none there). */
  readonly proposed?: unknown;
}

/** How many differences a report lists, and how long a value's JSON may be before it is cut. */
export const ARGS_DIFF_LIMIT = 20;
export const ARGS_DIFF_VALUE_CHARS = 200;

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** A value as a report shows it: as it is, or its JSON cut to {@link ARGS_DIFF_VALUE_CHARS} with `…`. */
function shown(v: unknown): unknown {
  const json = JSON.stringify(v);
  return json !== undefined && json.length > ARGS_DIFF_VALUE_CHARS
    ? `${json.slice(0, ARGS_DIFF_VALUE_CHARS)}…`
    : v;
}

/** The paths where `held` and `proposed` differ, in key order, at most `limit`. */
export function argsDiff(held: unknown, proposed: unknown, limit = ARGS_DIFF_LIMIT): ArgDifference[] {
  const out: ArgDifference[] = [];
  const walk = (a: unknown, b: unknown, path: string): void => {
    if (out.length >= limit) return;
    if (isObject(a) && isObject(b)) {
      const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
      for (const k of keys) walk(a[k], b[k], path === '' ? k : `${path}.${k}`);
      return;
    }
    if (Array.isArray(a) && Array.isArray(b) && a.length === b.length) {
      a.forEach((x, i) => walk(x, b[i], `${path}[${i}]`));
      return;
    }
    if (JSON.stringify(a) === JSON.stringify(b)) return;
    out.push({
      path: path === '' ? '(args)' : path,
      ...(a !== undefined ? { held: shown(a) } : {}),
      ...(b !== undefined ? { proposed: shown(b) } : {}),
    });
  };
  walk(held, proposed, '');
  return out;
}
