/**
 * Redaction of secrets before anything reaches a trace, a StopReport, a run's summary, a
 * log line or a stored ledger error. Credentials belong in the worker's environment,
 * never in tool args or tool output; this is the net for when they are not.
 *
 * Sandbox-safe (no Node imports, no clock, no randomness): the workflow calls it too.
 * It is bounded: values deeper than {@link MAX_REDACT_DEPTH}, with more than
 * {@link MAX_REDACT_NODES} nodes or strings longer than {@link MAX_REDACT_CHARS} are cut
 * with a {@link TRUNCATED} marker instead of being walked without limit. The copy it
 * returns is built from plain objects whose keys are defined as own data properties, so a
 * `__proto__`, `constructor` or `prototype` key can never reach a prototype.
 */

/** The placeholder written instead of a secret. */
export const REDACTED = '[REDACTED]';
/** The marker written where a value was cut for depth or size. */
export const TRUNCATED = '[TRUNCATED]';
/** Nesting below this depth is replaced by {@link TRUNCATED}. */
export const MAX_REDACT_DEPTH = 32;
/** At most this many values (objects, arrays, leaves) are copied; the rest is {@link TRUNCATED}. */
export const MAX_REDACT_NODES = 10_000;
/** Strings are cut to this many characters (after redaction, so no secret is cut in half). */
export const MAX_REDACT_CHARS = 64 * 1024;
/** How much of a long string past the cut is still scanned, so a secret across the cut is caught. */
const CUT_SLACK = 4096;

/** Field names whose values are secrets whatever they look like. */
const SECRET_KEY =
  /(pass(word|wd|phrase)?|secret|token|api[-_]?key|authori[sz]ation|credential|private[-_]?key|cookie|signature|access[-_]?key|session[-_]?id|(^|[-_])(auth|sig|pwd)$)/i;

/** Query/form parameter names that carry credentials (`?token=…`, `api_key=…`, `sig=…`). */
const SECRET_PARAM =
  'access_token|refresh_token|id_token|auth_token|token|api[-_]?key|apikey|key|sig|signature|secret|client_secret|password|passwd|pwd|session|sessionid|private_token|x-amz-signature|x-amz-credential|x-amz-security-token|aws_secret_access_key|aws_session_token';

/**
 * Value patterns, each a secret whatever the field is called. Order matters: whole
 * blocks (PEM) first, then structures (URLs, headers), then single tokens.
 */
const VALUE_PATTERNS: ReadonlyArray<readonly [RegExp, string]> = [
  // PEM private keys (RSA, EC, OPENSSH, ENCRYPTED, …), also when the END line is missing.
  [
    /-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----[\s\S]*?(-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|$)/g,
    REDACTED,
  ],
  // Credentials in a URL's userinfo: https://user:pass@host, https://TOKEN@host.
  [/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@"'<>]+@/gi, `$1${REDACTED}@`],
  // Credential parameters in URLs, forms and `name=value` text.
  [new RegExp(`(^|[^A-Za-z0-9_-])((?:${SECRET_PARAM})=)[^&\\s#"'<>]+`, 'gi'), `$1$2${REDACTED}`],
  // JSON text inside a string: "password": "…".
  [
    new RegExp(`("(?:${SECRET_PARAM}|password|authorization)"\\s*:\\s*")(?:[^"\\\\]|\\\\.)*"`, 'gi'),
    `$1${REDACTED}"`,
  ],
  // An Authorization header's value, whatever its scheme: `Authorization: Basic dTpw`.
  [/\b((?:proxy-)?authori[sz]ation"?\s*[:=]\s*"?)([A-Za-z-]+\s+)?[^\s"',;]+/gi, `$1$2${REDACTED}`],
  // A scheme and credentials without the header name; a credential looks like one (a digit
  // or a base64/token symbol), so English ("Basic usage") is left alone.
  [
    /\b(Bearer|Basic|Token|Digest)(\s+)(?=[A-Za-z0-9._~+/=:-]*[0-9=+/._~:-])[A-Za-z0-9._~+/=:-]{4,}/g,
    `$1$2${REDACTED}`,
  ],
  // JWTs (header.payload.signature, both base64url JSON objects).
  [/\beyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*/g, REDACTED],
  // OpenAI / Anthropic (sk-, sk-proj-, sk-ant-), Stripe secret and restricted keys, webhook secrets.
  [/\bsk-[A-Za-z0-9_-]{8,}/g, REDACTED],
  [/\b(sk|rk)_(live|test)_[A-Za-z0-9]{8,}/g, REDACTED],
  [/\bwhsec_[A-Za-z0-9]{16,}/g, REDACTED],
  // Google API keys.
  [/\bAIza[0-9A-Za-z_-]{30,}/g, REDACTED],
  // Slack tokens.
  [/\bxox[abposre]-[A-Za-z0-9-]{8,}/g, REDACTED],
  [/\bxapp-[A-Za-z0-9-]{8,}/g, REDACTED],
  // GitHub tokens (classic and fine-grained), GitLab, npm.
  [/\bgh[pousr]_[A-Za-z0-9]{16,}/g, REDACTED],
  [/\bgithub_pat_[A-Za-z0-9_]{20,}/g, REDACTED],
  [/\bglpat-[A-Za-z0-9_-]{16,}/g, REDACTED],
  [/\bnpm_[A-Za-z0-9]{30,}/g, REDACTED],
  // AWS access key ids (long-term and temporary).
  [/\b(AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}/g, REDACTED],
];

/**
 * Returns `text` with every secret-looking value replaced by {@link REDACTED}, cut to
 * `maxChars` characters with a {@link TRUNCATED} marker. Use it on any free text that may
 * quote a tool's input or output: StopReport `unmet_precondition`, RunResult `summary`,
 * log lines, stored errors.
 */
export function redactText(text: string, maxChars: number = MAX_REDACT_CHARS): string {
  const long = text.length > maxChars;
  // Most strings (ids, names, numbers) hold none of what every pattern needs: one scan, not 17.
  if (!long && !MAY_HOLD_SECRET.test(text)) return text;
  const out = replaceSecrets(long ? text.slice(0, maxChars + CUT_SLACK) : text);
  return long || out.length > maxChars ? `${out.slice(0, maxChars)}…${TRUNCATED}` : out;
}

/** Every {@link VALUE_PATTERNS} replacement applied to `text` (no prefilter, no cut). */
export function replaceSecrets(text: string): string {
  let out = text;
  for (const [pattern, replacement] of VALUE_PATTERNS) out = out.replace(pattern, replacement);
  return out;
}

/**
 * What a string must contain for any of {@link VALUE_PATTERNS} to match it, one alternative
 * per pattern (a literal each needs; case-insensitive where the pattern is): a string without
 * any of them is returned as it is (a trace record's args are redacted at every
 * step). test/common/redact.test.ts checks it against the patterns one by one.
 */
const MAY_HOLD_SECRET = new RegExp(
  [
    '-----BEGIN ', // PEM private keys
    ':\\/\\/', // credentials in a URL's userinfo
    '=', // credential parameters
    '"', // JSON text inside a string
    '[Aa][Uu][Tt][Hh][Oo][Rr][Ii][SsZz][Aa][Tt][Ii][Oo][Nn]', // an Authorization header
    'Bearer|Basic|Token|Digest', // a scheme and credentials
    'eyJ', // JWTs
    'sk-', // OpenAI / Anthropic
    '[sr]k_(?:live|test)_', // Stripe
    'whsec_',
    'AIza',
    'xox[abposre]-',
    'xapp-',
    'gh[pousr]_',
    'github_pat_',
    'glpat-',
    'npm_',
    'AKIA|ASIA|ABIA|ACCA',
  ].join('|'),
);

/** Whether a field name says its value is a secret (`password`, `apiKey`, `Authorization`, …). */
export function isSecretKey(name: string): boolean {
  return SECRET_KEY.test(name);
}

/** `{name: "Authorization", value: "…"}` / `{key: "X-Api-Key", value: "…"}`: a header or setting pair. */
function secretPairName(o: Record<string, unknown>): boolean {
  if (!Object.hasOwn(o, 'value')) return false;
  for (const field of ['name', 'key', 'Name', 'Key', 'header']) {
    const n = Object.hasOwn(o, field) ? o[field] : undefined;
    if (typeof n === 'string' && isSecretKey(n)) return true;
  }
  return false;
}

/** Defines `key` as an own enumerable data property: never a setter, never `__proto__`'s. */
function put(target: object, key: string | number, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/** Options of {@link redact}. */
export interface RedactOptions {
  /** Default {@link MAX_REDACT_DEPTH}. */
  readonly maxDepth?: number;
  /** Default {@link MAX_REDACT_NODES}. */
  readonly maxNodes?: number;
  /** Default {@link MAX_REDACT_CHARS}. */
  readonly maxChars?: number;
}

/**
 * Returns a copy of `value` with secret-looking fields and values replaced, depth and
 * size bounded (see the module comment). Objects come back as plain objects (own data
 * properties only), arrays as arrays; other values unchanged.
 */
export function redact(value: unknown, options: RedactOptions = {}): unknown {
  const maxDepth = options.maxDepth ?? MAX_REDACT_DEPTH;
  const maxChars = options.maxChars ?? MAX_REDACT_CHARS;
  let budget = options.maxNodes ?? MAX_REDACT_NODES;

  const walk = (v: unknown, depth: number): unknown => {
    if (budget-- <= 0) return TRUNCATED;
    if (typeof v === 'string') return redactText(v, maxChars);
    if (v === null || typeof v !== 'object') return v;
    if (depth >= maxDepth) return TRUNCATED;
    if (Array.isArray(v)) {
      const out: unknown[] = [];
      for (let i = 0; i < v.length; i++) {
        if (budget <= 0) {
          out.push(TRUNCATED);
          break;
        }
        put(out, i, walk(v[i], depth + 1));
      }
      return out;
    }
    const o = v as Record<string, unknown>;
    const pair = secretPairName(o);
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(o)) {
      if (budget <= 0) {
        put(out, TRUNCATED, TRUNCATED);
        break;
      }
      const child = o[k];
      const secret = (isSecretKey(k) || (pair && k === 'value')) && child !== null && child !== undefined;
      put(out, k, secret ? REDACTED : walk(child, depth + 1));
    }
    return out;
  };
  return walk(value, 0);
}
