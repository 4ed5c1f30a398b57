/**
 * Secret scrubbing for any text that leaves a planner: error messages end up in workflow
 * history, traces and logs, and an SDK error may quote the key it was sent (a 401 often
 * echoes it). Everything a planner throws passes through {@link redactSecrets} first.
 */

/** What a secret is replaced with. */
export const REDACTED = '[REDACTED]';

/**
 * Shapes of credentials, each with how to keep the label and drop the value. They catch
 * keys the caller did not name: another provider's key, a key quoted by a proxy.
 */
const KEY_SHAPES: ReadonlyArray<readonly [pattern: RegExp, replacement: string]> = [
  // OpenAI / Anthropic style keys (sk-…, sk-ant-…, sk-proj-…) and their underscore cousins.
  [/\bsk[-_][A-Za-z0-9_-]{6,}/g, REDACTED],
  [/\b(Bearer)\s+[A-Za-z0-9._~+/=-]{6,}/gi, `$1 ${REDACTED}`],
  [/\b(x-api-key|api[-_]?key)(["']?\s*[:=]\s*["']?)[^\s"',}]{6,}/gi, `$1$2${REDACTED}`],
];

/**
 * Shorter "keys" are not replaced: local servers often accept any value such as `x`,
 * and replacing every `x` would make the message unreadable without protecting anything.
 */
const MIN_SECRET_LENGTH = 4;

/**
 * Replaces every given secret and every key-shaped string (`sk-…`, `Bearer …`,
 * `x-api-key: …`, `api_key=…`) in `text` with `[REDACTED]`.
 *
 * @param text the message to scrub
 * @param secrets the exact values to remove (the key of this request); unset ones are skipped
 */
export function redactSecrets(text: string, secrets: ReadonlyArray<string | undefined> = []): string {
  let out = text;
  for (const secret of secrets) {
    if (secret && secret.length >= MIN_SECRET_LENGTH) out = out.split(secret).join(REDACTED);
  }
  for (const [pattern, replacement] of KEY_SHAPES) out = out.replace(pattern, replacement);
  return out;
}
