/**
 * The blocked call's args as a person must check them: a look-alike payee
 * must not render as the real one. The args' JSON is cut into segments the page draws as text:
 *
 *  - `x`: an invisible or layout character (zero-width, bidi controls like U+202E, no-break and
 *    other odd spaces, control characters) — shown escaped, `\u200b`, marked, never as itself;
 *  - `u`: any other non-ASCII character (a Cyrillic `а` in `acc-vendor-7`) — shown, followed
 *    by its code point, marked;
 *  - `t`: plain ASCII text.
 *
 * and `warnings` name each string (by its path in the args) that holds any, with the code
 * points and their script or name. With the tool's display hints (tools/arg-display.ts) each
 * hinted top-level arg is also shown in its unit (`amounts`). Pure: no Node imports.
 */
import { formatArg, type ArgDisplayHints } from '../../tools/arg-display';

/** A piece of the rendered args. */
export interface ArgSegment {
  readonly k: 't' | 'x' | 'u';
  readonly s: string;
}

/** What the page shows for a blocked call's args. */
export interface ArgsView {
  readonly segments: readonly ArgSegment[];
  /** One line per string that holds invisible or non-ASCII characters. */
  readonly warnings: readonly string[];
  /** The hinted args in their units: `{ arg: 'amountCents', raw: '12500', shown: '125.00 EUR' }`. */
  readonly amounts: readonly { readonly arg: string; readonly raw: string; readonly shown: string }[];
}

/** Names of the invisible characters most used to disguise text. */
const NAMES: Record<number, string> = {
  0x00a0: 'NO-BREAK SPACE',
  0x00ad: 'SOFT HYPHEN',
  0x034f: 'COMBINING GRAPHEME JOINER',
  0x061c: 'ARABIC LETTER MARK',
  0x180e: 'MONGOLIAN VOWEL SEPARATOR',
  0x200b: 'ZERO WIDTH SPACE',
  0x200c: 'ZERO WIDTH NON-JOINER',
  0x200d: 'ZERO WIDTH JOINER',
  0x200e: 'LEFT-TO-RIGHT MARK',
  0x200f: 'RIGHT-TO-LEFT MARK',
  0x202a: 'LEFT-TO-RIGHT EMBEDDING',
  0x202b: 'RIGHT-TO-LEFT EMBEDDING',
  0x202c: 'POP DIRECTIONAL FORMATTING',
  0x202d: 'LEFT-TO-RIGHT OVERRIDE',
  0x202e: 'RIGHT-TO-LEFT OVERRIDE',
  0x2060: 'WORD JOINER',
  0x2066: 'LEFT-TO-RIGHT ISOLATE',
  0x2067: 'RIGHT-TO-LEFT ISOLATE',
  0x2068: 'FIRST STRONG ISOLATE',
  0x2069: 'POP DIRECTIONAL ISOLATE',
  0xfeff: 'ZERO WIDTH NO-BREAK SPACE',
};

/** Invisible, format, control, separator and odd-space characters (not the plain space). */
const INVISIBLE =
  /[\p{Cf}\p{Cc}\p{Zl}\p{Zp}\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000\u034f\u115f\u1160\u3164\uffa0]/u;
const SCRIPTS = ['Latin', 'Cyrillic', 'Greek', 'Armenian', 'Hebrew', 'Arabic', 'Cherokee', 'Han'] as const;

const hex = (cp: number) => cp.toString(16).toUpperCase().padStart(4, '0');

/** What a non-ASCII character is, for a warning: its name or script. */
function kindOf(ch: string, cp: number): string {
  if (NAMES[cp]) return NAMES[cp];
  if (INVISIBLE.test(ch)) return 'invisible';
  for (const s of SCRIPTS) if (new RegExp(`\\p{Script=${s}}`, 'u').test(ch)) return s;
  return /\p{L}/u.test(ch) ? 'letter' : /\p{M}/u.test(ch) ? 'combining mark' : 'symbol';
}

/** The JSON text with invisible characters escaped and other non-ASCII characters marked. */
function segmentsOf(text: string): ArgSegment[] {
  const out: ArgSegment[] = [];
  let plain = '';
  const flush = () => {
    if (plain) out.push({ k: 't', s: plain });
    plain = '';
  };
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    if (cp < 0x80 && cp >= 0x20) plain += ch;
    else if (ch === '\n')
      plain += ch; // JSON's own line breaks (a string's are escaped as \n)
    else if (INVISIBLE.test(ch)) {
      flush();
      out.push({ k: 'x', s: cp > 0xffff ? `\\u{${hex(cp)}}` : `\\u${hex(cp).toLowerCase()}` });
    } else {
      flush();
      out.push({ k: 'u', s: `${ch}\u2009U+${hex(cp)}` });
    }
  }
  flush();
  return out;
}

/** One warning per string (keys included) holding a character the page marks. */
function warningsOf(value: unknown, path: string, out: string[]): void {
  const check = (s: string, where: string) => {
    const found: string[] = [];
    let i = 0;
    for (const ch of s) {
      const cp = ch.codePointAt(0)!;
      if (cp >= 0x80 || (cp < 0x20 && ch !== '\n')) found.push(`U+${hex(cp)} ${kindOf(ch, cp)} at ${i}`);
      i++;
    }
    if (found.length)
      out.push(`${where}: ${found.slice(0, 8).join(', ')}${found.length > 8 ? `, … (${found.length})` : ''}`);
  };
  if (typeof value === 'string') check(value, path);
  else if (Array.isArray(value)) value.forEach((v, i) => warningsOf(v, `${path}[${i}]`, out));
  else if (value && typeof value === 'object')
    for (const [k, v] of Object.entries(value)) {
      check(k, `${path} key ${JSON.stringify(k)}`);
      warningsOf(v, `${path}.${k}`, out);
    }
}

/** The view of `args` (already redacted) for a call of a tool with `hints`. */
export function argsView(args: unknown, hints?: ArgDisplayHints): ArgsView {
  const warnings: string[] = [];
  warningsOf(args, 'args', warnings);
  const amounts: { arg: string; raw: string; shown: string }[] = [];
  if (hints && args && typeof args === 'object' && !Array.isArray(args))
    for (const [arg, hint] of Object.entries(hints)) {
      const v = (args as Record<string, unknown>)[arg];
      const shown = formatArg(v, hint);
      if (shown !== null) amounts.push({ arg, raw: String(v), shown });
    }
  return { segments: segmentsOf(JSON.stringify(args, null, 2) ?? 'null'), warnings, amounts };
}
