/**
 * Redaction of secrets before anything reaches a trace or a log. Credentials belong in
 * the worker's environment, never in tool args; this is the net for when they are not.
 */

const SECRET_KEY =
  /(pass(word|wd)?|secret|token|api[-_]?key|authorization|credential|private[-_]?key|cookie)/i;
const SECRET_VALUE =
  /\b(sk-[A-Za-z0-9_-]{8,}|sk-ant-[A-Za-z0-9_-]{8,}|xox[abpr]-[A-Za-z0-9-]{8,}|gh[pousr]_[A-Za-z0-9]{16,}|AKIA[0-9A-Z]{16}|Bearer\s+[A-Za-z0-9._~+/-]{8,})/g;

/** The placeholder written instead of a secret. */
export const REDACTED = '[REDACTED]';

/** Returns a copy of `value` with secret-looking fields and values replaced. */
export function redact(value: unknown, depth = 0): unknown {
  if (depth > 32) return REDACTED;
  if (typeof value === 'string') return value.replace(SECRET_VALUE, REDACTED);
  if (Array.isArray(value)) return value.map((v) => redact(v, depth + 1));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      out[k] = SECRET_KEY.test(k) && v !== null && v !== undefined ? REDACTED : redact(v, depth + 1);
    }
    return out;
  }
  return value;
}
