/**
 * Fingerprints: tool name + canonical arguments (docs/spec.md §3).
 */
import { canonicalize, hashCanonical, removePaths, setOwn, type Json } from './canonical';
import { similarKeyOf } from './near';

/**
 * How a tool's arguments are normalised before fingerprinting. Registered tools pass a
 * zod-like `parse` (so defaults are filled in); replay fixtures give top-level
 * `defaults` instead. `nonSemantic` lists dot paths (request ids, trace ids) to drop.
 */
export interface ArgsSpec {
  /** Parses and validates raw args, filling defaults; throws on invalid input. */
  readonly parse?: (args: unknown) => unknown;
  /** Top-level values filled in when the field is absent (fixture tools). */
  readonly defaults?: Readonly<Record<string, unknown>>;
  /** Dot paths whose values never change a tool's result. */
  readonly nonSemantic?: readonly string[];
  /** Top-level free-text args whose wording does not matter to the repeat rules (guard/near.ts). */
  readonly similarArgs?: readonly string[];
}

/** Normalised arguments: the canonical value and the fingerprint derived from it. */
export interface NormalizedCall {
  readonly tool: string;
  /** Canonical args (sorted, trimmed, defaults filled, non-semantic paths removed). */
  readonly canonicalArgs: Json;
  /** `tool:16-hex-digit-hash` of the canonical args. */
  readonly fingerprint: string;
  /** The near-repeat key (guard/near.ts) when the tool declares `similarArgs`; else absent. */
  readonly similarKey?: string;
}

/** Fingerprint of already-canonical args. */
export function fingerprintOf(tool: string, canonicalArgs: Json): string {
  return `${tool}:${hashCanonical(canonicalArgs)}`;
}

function prepare(args: unknown, spec: ArgsSpec): unknown {
  let value: unknown = args ?? {};
  if (spec.parse) value = spec.parse(value);
  if (spec.defaults && typeof value === 'object' && value !== null && !Array.isArray(value)) {
    const filled: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(spec.defaults)) setOwn(filled, key, item);
    for (const [key, item] of Object.entries(value)) if (item !== undefined) setOwn(filled, key, item);
    value = filled;
  }
  if (spec.nonSemantic && spec.nonSemantic.length > 0) value = removePaths(value, spec.nonSemantic);
  return value;
}

/**
 * The fingerprint alone — the hot path of the replay and the guard: the canonical form is
 * hashed in one pass; neither the canonical object nor its text is built. Equals
 * `normalizeCall(tool, args, spec).fingerprint`.
 */
export function fingerprintCall(tool: string, args: unknown, spec: ArgsSpec = {}): string {
  return `${tool}:${hashCanonical(prepare(args, spec))}`;
}

/**
 * Normalises a call's args and returns its fingerprint. Throws whatever `spec.parse`
 * throws for invalid args: the caller classifies that as PRECONDITION `invalid_args`.
 */
export function normalizeCall(tool: string, args: unknown, spec: ArgsSpec = {}): NormalizedCall {
  const prepared = prepare(args, spec);
  const canonicalArgs = canonicalize(prepared);
  const similarKey = similarKeyOf(tool, canonicalArgs, spec.similarArgs);
  return {
    tool,
    canonicalArgs,
    fingerprint: `${tool}:${hashCanonical(prepared)}`,
    ...(similarKey ? { similarKey } : {}),
  };
}
