/**
 * Near repeats (docs/spec.md §3, "Near repeats"): two calls of one tool whose declared
 * free-text args (`similarArgs`) say the same words, and whose other args are equal, share a
 * similarity key, and the repeat rules count them as one call (reason `near_call_repeat`).
 * The rule is plain text processing, deterministic, no model: a text becomes its set of tokens
 * (Unicode letters and digits), lower-cased, without English stop words, sorted. Word order,
 * case, punctuation, repeated words and stop words do not matter; any other word does.
 */
import { hashCanonical, type Json } from './canonical';

/** Words that do not change what a query asks for. A fixed list: part of the contract. */
export const STOP_WORDS: ReadonlySet<string> = new Set(
  (
    'a an and are as at be by for from how i in is it me my of on or please show that the ' +
    'this to was what when where which who why with you your'
  ).split(' '),
);

/** The token set of a text: lower-case letter/digit runs, stop words dropped, unique, sorted. */
export function similarTokens(text: string): string[] {
  const words =
    text
      .normalize('NFKC')
      .toLowerCase()
      .match(/[\p{L}\p{N}]+/gu) ?? [];
  return [...new Set(words.filter((w) => !STOP_WORDS.has(w)))].sort();
}

/**
 * The similarity key of a call from its canonical args: `tool~` + a hash of the other args and
 * the token sets of the declared ones. Null when the tool declares none, or when none of them
 * is in the args (the exact fingerprint then decides alone).
 */
export function similarKeyOf(
  tool: string,
  canonicalArgs: Json,
  similarArgs: readonly string[] | undefined,
): string | null {
  if (!similarArgs || similarArgs.length === 0) return null;
  if (canonicalArgs === null || typeof canonicalArgs !== 'object' || Array.isArray(canonicalArgs))
    return null;
  const rest: Record<string, Json> = {};
  const texts: Record<string, Json> = {};
  let declared = 0;
  for (const [k, v] of Object.entries(canonicalArgs)) {
    if (!similarArgs.includes(k)) rest[k] = v;
    else {
      declared += 1;
      texts[k] = similarTokens(typeof v === 'string' ? v : JSON.stringify(v));
    }
  }
  if (declared === 0) return null;
  return `${tool}~${hashCanonical({ rest, texts })}`;
}
