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
  if (value instanceof Date) return value.toISOString();
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
  if (value instanceof Date) return JSON.stringify(value.toISOString());
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

function hex32(n: number): string {
  return (n >>> 0).toString(16).padStart(8, '0');
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
    h1 = Math.imul(h1 ^ ch, 2654435761);
    h2 = Math.imul(h2 ^ ch, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507);
  h1 ^= Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507);
  h2 ^= Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return hex32(h2) + hex32(h1);
}
