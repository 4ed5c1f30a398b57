/**
 * Payload limits ("no payload can wedge a run"). Temporal refuses any single
 * payload above its blob limit (2 MB by default) and fails what carried it: an activity
 * result that large fails the activity, a workflow task whose command carries it fails
 * the task again and again, and the run is wedged. Everything that crosses into history
 * is therefore measured against {@link MAX_PAYLOAD_BYTES} first, and what is too large
 * stops the run NEEDS_HUMAN `payload_too_large` with its checkpoint instead.
 *
 * Large tool results do not reach history at all: the worker stores them in the payload
 * store (storage/payloads) and the workflow carries a {@link PayloadRef}.
 *
 * Sandbox-safe: no Node.js modules; used by workflow code and by activities alike.
 */
import { ActivityFailure, ApplicationFailure } from '@temporalio/common';

/**
 * The largest serialized JSON the runtime lets into one Temporal payload: below the
 * server's 2 MB blob limit, leaving room for the payload codec (encryption, base64 in
 * the JSON converter's metadata) and the envelope.
 */
export const MAX_PAYLOAD_BYTES = 1_500_000;

/** Above this many bytes of JSON a tool result's `data` is stored by reference (`AGENT_PAYLOAD_REF_BYTES`). */
export const DEFAULT_PAYLOAD_REF_BYTES = 64 * 1024;

/** The most a {@link PayloadRef}'s `preview` holds, in UTF-8 bytes. */
export const PAYLOAD_PREVIEW_BYTES = 1024;

/** The ApplicationFailure type of an output that was too large to return. */
export const PAYLOAD_TOO_LARGE = 'PayloadTooLarge';

/** The key that marks a {@link PayloadRef} (never a key a tool's data would use). */
export const PAYLOAD_REF_MARK = '$agentPayloadRef';

/**
 * What the workflow carries in place of a large value: the value lives in the payload
 * store under (run, id), where `id` is the SHA-256 of its JSON.
 */
export interface PayloadRef {
  /** Format version of the reference. */
  readonly [PAYLOAD_REF_MARK]: 1;
  /** `sha256:` + hex SHA-256 of the value's JSON (content address). */
  readonly id: string;
  /** UTF-8 bytes of the value's JSON. */
  readonly bytes: number;
  /** The start of the value's JSON (at most {@link PAYLOAD_PREVIEW_BYTES} bytes), for traces and the UI. */
  readonly preview: string;
  /** A terminal result's `summary`, kept beside the reference so the run still ends with it. */
  readonly summary?: string;
}

/** True for a {@link PayloadRef}. */
export function isPayloadRef(value: unknown): value is PayloadRef {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const v = value as Record<string, unknown>;
  return (
    v[PAYLOAD_REF_MARK] === 1 &&
    typeof v.id === 'string' &&
    /^sha256:[0-9a-f]{64}$/.test(v.id) &&
    typeof v.bytes === 'number' &&
    typeof v.preview === 'string'
  );
}

/** UTF-8 byte length of a string, without TextEncoder or Buffer (works in the workflow sandbox). */
export function utf8Bytes(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n += 4;
        i += 1;
      } else n += 3; // a lone surrogate is encoded as U+FFFD
    } else n += 3;
  }
  return n;
}

/** UTF-8 bytes of `value`'s JSON (0 for a value JSON cannot express, like `undefined`). */
export function jsonBytes(value: unknown): number {
  const json = JSON.stringify(value);
  return json === undefined ? 0 : utf8Bytes(json);
}

/** The longest prefix of `s` of at most `maxBytes` UTF-8 bytes (never splitting a character). */
export function utf8Prefix(s: string, maxBytes: number): string {
  if (s.length <= maxBytes / 3) return s;
  let n = 0;
  let i = 0;
  for (; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const pair = c >= 0xd800 && c <= 0xdbff && i + 1 < s.length;
    const w = c < 0x80 ? 1 : c < 0x800 ? 2 : pair ? 4 : 3;
    if (n + w > maxBytes) break;
    n += w;
    if (pair) i += 1;
  }
  return s.slice(0, i);
}

/** The failure thrown for an output above the limit: non-retryable (a retry returns the same). */
export function payloadTooLarge(what: string, bytes: number, limit = MAX_PAYLOAD_BYTES): ApplicationFailure {
  return ApplicationFailure.create({
    type: PAYLOAD_TOO_LARGE,
    nonRetryable: true,
    message: `${what} is ${bytes} bytes of JSON, above the ${limit}-byte payload limit: it cannot be passed through Temporal history`,
    details: [{ what, bytes, limit }],
  });
}

/**
 * Returns `output` when its JSON fits in one payload; throws a non-retryable
 * `PayloadTooLarge` ApplicationFailure naming `what` and its size otherwise. Call it on an
 * activity's output just before returning it.
 */
export function guardOutputSize<T>(output: T, what: string, limit = MAX_PAYLOAD_BYTES): T {
  const bytes = jsonBytes(output);
  if (bytes > limit) throw payloadTooLarge(what, bytes, limit);
  return output;
}

/**
 * True when an activity failed because its output was too large (`PayloadTooLarge`), or
 * for that ApplicationFailure itself. Workflow code: stop `payload_too_large`, not
 * `infrastructure_fault` or `planner_failed`.
 */
export function isPayloadTooLarge(err: unknown): boolean {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  return cause instanceof ApplicationFailure && cause.type === PAYLOAD_TOO_LARGE;
}
