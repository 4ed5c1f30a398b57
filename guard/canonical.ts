/**
 * Canonical form of tool arguments and a fixed-size, sandbox-safe hash.
 *
 * Canonicalisation removes only differences that carry no meaning (key order at every
 * depth, surrounding white space in strings, `undefined` fields) and keeps everything
 * else, so a changed page, cursor or version changes the fingerprint.
 */

/** A JSON value as the guard sees it after canonicalisation. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/**
 * Sets an own property even for the key `__proto__` (which JSON.parse creates as an own
 * key, but plain assignment would treat as the prototype — losing the field, or worse).
 */
export function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__')
    Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Returns the canonical value: keys sorted at every depth, strings trimmed, `undefined`
 * and functions dropped from objects (and `null` in arrays, as JSON does), non-finite
 * numbers as `null`, bigints as decimal strings, dates as ISO strings.
 */
export function canonicalize(value: unknown): Json {
  if (value === null || value === undefined) return null;
  switch (typeof value) {
    case 'string':
      return value.trim();
    case 'number':
      return Number.isFinite(value) ? (Object.is(value, -0) ? 0 : value) : null;
    case 'boolean':
      return value;
    case 'bigint':
      return value.toString();
    case 'function':
    case 'symbol':
      return null;
    default:
      break;
  }
  if (Array.isArray(value)) return value.map((item) => canonicalize(item));
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString();
  const source = value as Record<string, unknown>;
  const out: { [key: string]: Json } = {};
  for (const key of Object.keys(source).sort()) {
    const item = source[key];
    if (item === undefined || typeof item === 'function' || typeof item === 'symbol') continue;
    setOwn(out, key, canonicalize(item));
  }
  return out;
}

/**
 * JSON text of the canonical value; equal canonical values give equal text. Written
 * directly, without building the canonical object first: this runs on every call.
 * `canonicalJson(v) === JSON.stringify(canonicalize(v))` for every input.
 */
export function canonicalJson(value: unknown): string {
  return writeJson(value, false) ?? 'null';
}

/** Serialises one value; `undefined` means "omit" (only possible for object members). */
function writeJson(value: unknown, member: boolean): string | undefined {
  if (value === null || value === undefined) return member && value === undefined ? undefined : 'null';
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value.trim());
    case 'number':
      return Number.isFinite(value) ? (Object.is(value, -0) ? '0' : String(value)) : 'null';
    case 'boolean':
      return value ? 'true' : 'false';
    case 'bigint':
      return JSON.stringify(value.toString());
    case 'function':
    case 'symbol':
      return member ? undefined : 'null';
    default:
      break;
  }
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out += ',';
      out += writeJson(value[i], false) ?? 'null';
    }
    return out + ']';
  }
  if (value instanceof Date)
    return Number.isNaN(value.getTime()) ? 'null' : JSON.stringify(value.toISOString());
  const source = value as Record<string, unknown>;
  const keys = Object.keys(source);
  if (keys.length > 1) keys.sort();
  let out = '{';
  let first = true;
  for (const key of keys) {
    const item = writeJson(source[key], true);
    if (item === undefined) continue;
    out += (first ? '' : ',') + JSON.stringify(key) + ':' + item;
    first = false;
  }
  return out + '}';
}

/**
 * Removes the given dot paths (`meta.requestId`, `items.*.traceId`) from a deep copy of
 * `value`. `*` matches every key or index at its depth. Missing paths are ignored.
 */
export function removePaths(value: unknown, paths: readonly string[]): unknown {
  if (paths.length === 0) return value;
  const copy = deepCopy(value);
  for (const path of paths) {
    const segments = path.split('.').filter((s) => s.length > 0);
    if (segments.length > 0) removeAt(copy, segments, 0);
  }
  return copy;
}

function deepCopy(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(deepCopy);
  if (isPlainObject(value) && !(value instanceof Date)) {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value)) setOwn(out, key, deepCopy(value[key]));
    return out;
  }
  return value;
}

function removeAt(node: unknown, segments: readonly string[], depth: number): void {
  const segment = segments[depth] as string;
  const last = depth === segments.length - 1;
  if (Array.isArray(node)) {
    const indexes = segment === '*' ? node.map((_, i) => i) : [Number(segment)];
    for (const index of indexes) {
      if (!Number.isInteger(index) || index < 0 || index >= node.length) continue;
      // Removing an array element would shift its neighbours' meaning; blank it instead.
      if (last) node[index] = null;
      else removeAt(node[index], segments, depth + 1);
    }
    return;
  }
  if (!isPlainObject(node)) return;
  const keys = segment === '*' ? Object.keys(node) : [segment];
  for (const key of keys) {
    if (!Object.prototype.hasOwnProperty.call(node, key)) continue;
    if (last) delete node[key];
    else removeAt(node[key], segments, depth + 1);
  }
}

/** Two hex digits per byte value; `Number#toString(16)` costs ~10x more per call. */
/**
 * Sorts keys in place by UTF-16 code units (the order of `Array#sort`'s default): insertion
 * sort for the handful of keys tool args have, the built-in sort beyond that.
 */
export function sortKeys(keys: string[]): string[] {
  const n = keys.length;
  if (n > 12) return keys.sort();
  for (let i = 1; i < n; i++) {
    const k = keys[i] as string;
    let j = i - 1;
    while (j >= 0 && (keys[j] as string) > k) {
      keys[j + 1] = keys[j] as string;
      j--;
    }
    keys[j + 1] = k;
  }
  return keys;
}

/**
 * `Math.imul`, looked up once: a hash loop that reads the global `Math` per character runs
 * ~200x slower where global lookups are intercepted (jest's own node environment reads every
 * global through a Proxy), and no faster anywhere else.
 */
const imul = Math.imul;

const HEX_BYTE: readonly string[] = Array.from(
  { length: 256 },
  (_, i) => (i < 16 ? '0' : '') + i.toString(16),
);

function hex32(n: number): string {
  return (
    (HEX_BYTE[(n >>> 24) & 255] as string) +
    (HEX_BYTE[(n >>> 16) & 255] as string) +
    (HEX_BYTE[(n >>> 8) & 255] as string) +
    (HEX_BYTE[n & 255] as string)
  );
}

/**
 * A 64-bit non-cryptographic hash of a string (two multiply-xorshift lanes, the
 * construction of the public-domain cyrb53, widened to 64 bits) as 16 hex digits.
 * Pure integer arithmetic: it runs unchanged in the workflow sandbox.
 */
export function hash64(text: string): string {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    h1 = imul(h1 ^ ch, 2654435761);
    h2 = imul(h2 ^ ch, 1597334677);
  }
  h1 = imul(h1 ^ (h1 >>> 16), 2246822507);
  h1 ^= imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = imul(h2 ^ (h2 >>> 16), 2246822507);
  h2 ^= imul(h1 ^ (h1 >>> 13), 3266489909);
  return hex32(h2) + hex32(h1);
}

// ---- hashing the canonical form without building it ----------------------------------
//
// The fingerprint is a hash of the canonical value. Writing the canonical JSON text and
// then hashing it costs two passes and a string per call; instead the value is walked once
// and an injective token stream (type tags, length-prefixed strings, end markers) is fed
// straight into the hash lanes. Two values hash alike exactly when their canonical JSON
// texts are equal (up to 64-bit collisions) — the property test in test/guard checks this.

const T_NULL = 1;
const T_FALSE = 2;
const T_TRUE = 3;
const T_NUMBER = 4;
const T_STRING = 5;
const T_ARRAY = 6;
const T_OBJECT = 7;
const T_END = 8;
const T_INT = 9;

let lane1 = 0;
let lane2 = 0;

function feed(code: number): void {
  lane1 = imul(lane1 ^ code, 2654435761);
  lane2 = imul(lane2 ^ code, 1597334677);
}

function feedText(text: string): void {
  // Lanes in locals for the loop: module-level state would be loaded and stored per char.
  const n = text.length;
  let a = imul(lane1 ^ (n & 0xffff), 2654435761);
  let b = imul(lane2 ^ (n & 0xffff), 1597334677);
  a = imul(a ^ (n >>> 16), 2654435761);
  b = imul(b ^ (n >>> 16), 1597334677);
  for (let i = 0; i < n; i++) {
    const ch = text.charCodeAt(i);
    a = imul(a ^ ch, 2654435761);
    b = imul(b ^ ch, 1597334677);
  }
  lane1 = a;
  lane2 = b;
}

function feedValue(value: unknown, member: boolean): boolean {
  if (value === undefined) {
    if (member) return false;
    feed(T_NULL);
    return true;
  }
  if (value === null) {
    feed(T_NULL);
    return true;
  }
  switch (typeof value) {
    case 'string':
      feed(T_STRING);
      feedText(value.trim());
      return true;
    case 'number':
      if (!Number.isFinite(value)) feed(T_NULL);
      else if (Number.isInteger(value) && value >= -0x80000000 && value <= 0x7fffffff) {
        // Small integers (pages, limits, ids) skip number-to-text; -0 folds into 0.
        feed(T_INT);
        feed(value & 0xffff);
        feed((value >>> 16) & 0xffff);
      } else {
        feed(T_NUMBER);
        feedText(Object.is(value, -0) ? '0' : String(value));
      }
      return true;
    case 'boolean':
      feed(value ? T_TRUE : T_FALSE);
      return true;
    case 'bigint':
      feed(T_STRING);
      feedText(value.toString());
      return true;
    case 'function':
    case 'symbol':
      if (member) return false;
      feed(T_NULL);
      return true;
    default:
      break;
  }
  if (Array.isArray(value)) {
    feed(T_ARRAY);
    for (let i = 0; i < value.length; i++) feedValue(value[i], false);
    feed(T_END);
    return true;
  }
  if (value instanceof Date) {
    // An invalid date is `null`, as JSON.stringify writes it.
    if (Number.isNaN(value.getTime())) feed(T_NULL);
    else {
      feed(T_STRING);
      feedText(value.toISOString());
    }
    return true;
  }
  const source = value as Record<string, unknown>;
  const keys = sortKeys(Object.keys(source));
  feed(T_OBJECT);
  for (const key of keys) {
    const item = source[key];
    if (item === undefined || typeof item === 'function' || typeof item === 'symbol') continue;
    feed(T_STRING);
    feedText(key);
    feedValue(item, true);
  }
  feed(T_END);
  return true;
}

/**
 * 64-bit hash (16 hex digits) of a value's canonical form: equal for values whose
 * {@link canonicalJson} texts are equal, computed in one pass without building the text.
 */
export function hashCanonical(value: unknown): string {
  lane1 = 0xdeadbeef;
  lane2 = 0x41c6ce57;
  feedValue(value, false);
  let h1 = imul(lane1 ^ (lane1 >>> 16), 2246822507);
  h1 ^= imul(lane2 ^ (lane2 >>> 13), 3266489909);
  let h2 = imul(lane2 ^ (lane2 >>> 16), 2246822507);
  h2 ^= imul(h1 ^ (h1 >>> 13), 3266489909);
  return hex32(h2) + hex32(h1);
}
