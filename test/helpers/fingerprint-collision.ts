/**
 * Builds two calls of one tool whose guard fingerprints are EQUAL while their args differ
 * (issue 31): the 64-bit fingerprint (guard/canonical.ts `hashCanonical`) feeds two 32-bit
 * multiplicative lanes that never mix until the end, and every step is invertible, so a twin
 * is found by a birthday search on 48 bits of the lanes' state plus one balancing character.
 * It shows why the fingerprint is no security boundary: approvals bind the SHA-256 digest.
 *
 * The calls are `{ [amountKey]: amountA|amountB, [textKey]: prefixA|prefixB + v1 v2 d + tail }`
 * with `amountKey` < `textKey` in sort order, so the text is hashed last. Deterministic; about
 * 2^25 lane states per side (a few seconds, ~0.6 GB). Test code only.
 */
import { fingerprintCall } from '../../guard';

const P1 = 2654435761;
const P2 = 1597334677;
const T_STRING = 5;
const T_OBJECT = 7;
const T_INT = 9;

type Lanes = [number, number];

const feed = (s: Lanes, code: number): Lanes => [Math.imul(s[0] ^ code, P1), Math.imul(s[1] ^ code, P2)];

function feedChars(s: Lanes, text: string): Lanes {
  for (let i = 0; i < text.length; i++) s = feed(s, text.charCodeAt(i));
  return s;
}

/** The lane state of `{amountKey: amount, textKey: <text of length n, first `head` chars fed>}`. */
function stateBefore(amountKey: string, amount: number, textKey: string, n: number, head: string): Lanes {
  let s: Lanes = [0xdeadbeef, 0x41c6ce57];
  const text = (t: string) => {
    s = feed(s, t.length & 0xffff);
    s = feed(s, t.length >>> 16);
    s = feedChars(s, t);
  };
  s = feed(s, T_OBJECT);
  s = feed(s, T_STRING);
  text(amountKey);
  s = feed(s, T_INT);
  s = feed(s, amount & 0xffff);
  s = feed(s, (amount >>> 16) & 0xffff);
  s = feed(s, T_STRING);
  text(textKey);
  s = feed(s, T_STRING);
  s = feed(s, n & 0xffff);
  s = feed(s, n >>> 16);
  return feedChars(s, head);
}

const V1 = 8192; // 0x4E00.. (CJK unified ideographs)
const V2 = 4096; // 0x6E00..
const c1 = (i: number) => 0x4e00 + i;
const c2 = (j: number) => 0x6e00 + j;

const key48 = (a: number, b: number): number =>
  (a >>> 16) * 4294967296 + (b >>> 16) * 65536 + ((a ^ b) & 0xffff);

function keysOf(start: Lanes): Float64Array {
  const out = new Float64Array(V1 * V2);
  for (let i = 0; i < V1; i++) {
    const s1 = feed(start, c1(i));
    for (let j = 0; j < V2; j++) {
      const a = Math.imul(s1[0] ^ c2(j), P1);
      const b = Math.imul(s1[1] ^ c2(j), P2);
      out[i * V2 + j] = key48(a, b);
    }
  }
  return out;
}

const valid = (c: number) =>
  c > 0x20 && c !== 0x7f && !(c >= 0xd800 && c <= 0xdfff) && !/\s/.test(String.fromCharCode(c));

/** Two args objects with equal fingerprints under `tool` (no schema), or null if none was found. */
export function collidingArgs(o: {
  tool: string;
  amountKey: string;
  textKey: string;
  a: { amount: number; prefix: string };
  b: { amount: number; prefix: string };
  tail?: string;
}): [Record<string, unknown>, Record<string, unknown>] | null {
  const tail = o.tail ?? '';
  if (o.a.prefix.length !== o.b.prefix.length) throw new Error('the prefixes must be as long as each other');
  if (!(o.amountKey < o.textKey)) throw new Error('amountKey must sort before textKey');
  const n = o.a.prefix.length + 3 + tail.length;
  const sa = stateBefore(o.amountKey, o.a.amount, o.textKey, n, o.a.prefix);
  const sb = stateBefore(o.amountKey, o.b.amount, o.textKey, n, o.b.prefix);
  const ka = keysOf(sa);
  const sorted = Float64Array.from(ka).sort();
  const kb = keysOf(sb);
  for (let x = 0; x < kb.length; x++) {
    const k = kb[x] as number;
    let lo = 0;
    let hi = sorted.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((sorted[mid] as number) < k) lo = mid + 1;
      else hi = mid;
    }
    if (sorted[lo] !== k) continue;
    const y = ka.indexOf(k);
    const va = String.fromCharCode(c1(Math.floor(y / V2)), c2(y % V2));
    const vb = String.fromCharCode(c1(Math.floor(x / V2)), c2(x % V2));
    const la = feedChars(sa, va);
    const lb = feedChars(sb, vb);
    const diff = (la[0] ^ lb[0]) & 0xffff;
    for (let d = 0x4e00; d < 0x9fff; d++) {
      if (!valid(d) || !valid(d ^ diff)) continue;
      const argsA = {
        [o.amountKey]: o.a.amount,
        [o.textKey]: o.a.prefix + va + String.fromCharCode(d) + tail,
      };
      const argsB = {
        [o.amountKey]: o.b.amount,
        [o.textKey]: o.b.prefix + vb + String.fromCharCode(d ^ diff) + tail,
      };
      if (fingerprintCall(o.tool, argsA) === fingerprintCall(o.tool, argsB)) return [argsA, argsB];
      break;
    }
  }
  return null;
}

/**
 * A pair {@link collidingArgs} found for the test tool `wire` `{ cents, ref }` (prefixes
 * `INV-7-vendor-` and `INV-7-attack-`, tail `-x`): 125.00 vs 49,999.00, one fingerprint.
 * Tests assert the fingerprints are equal before relying on it.
 */
export const TWIN_WIRES: readonly [{ cents: number; ref: string }, { cents: number; ref: string }] = [
  { cents: 12500, ref: 'INV-7-vendor-\u5b7b\u7592\u4e00-x' },
  { cents: 4999900, ref: 'INV-7-attack-\u4ead\u77d9\u06f5-x' },
];
