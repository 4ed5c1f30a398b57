/**
 * How a person should read a tool's args: a tool may declare, per top-level
 * arg, the unit an amount is in and its scale, so the approvals console shows
 * `amountCents: 12500  = 125.00 EUR` next to the raw value instead of leaving a person to
 * trust an agent-written `reference: "125.00 EUR"`.
 *
 * ```ts
 * defineTool({ name: 'transfer_funds', …, display: { amountCents: { unit: 'EUR', scale: 100 } } })
 * ```
 *
 * `unit` is what the number counts once divided by `scale` (default 1): `scale: 100` for an
 * amount in cents, shown with two decimals. A hint is checked when the tool is defined: a bad
 * one is a TypeError naming the tool, the arg and the field. Pure: no Node imports.
 */

/** How one arg is displayed. */
export interface ArgDisplay {
  /** The unit the displayed number is in: a currency code, `ms`, `bytes`, … (1–16 printable ASCII). */
  readonly unit: string;
  /** The raw value divided by this is the displayed number (a power of ten ≥ 1, default 1). */
  readonly scale?: number;
}

/** A tool's hints, by top-level arg name. */
export type ArgDisplayHints = Readonly<Record<string, ArgDisplay>>;

const UNIT = /^[\x21-\x7e](?:[\x20-\x7e]{0,14}[\x21-\x7e])?$/;

/** Throws a TypeError naming `tool`, the arg and the field of the first bad hint. */
export function checkArgDisplay(tool: string, hints: unknown): ArgDisplayHints {
  const bad = (what: string): never => {
    throw new TypeError(`defineTool(${tool}): display${what}`);
  };
  if (hints === null || typeof hints !== 'object' || Array.isArray(hints))
    bad(': must be an object of { arg: { unit, scale? } }');
  for (const [arg, hint] of Object.entries(hints as Record<string, unknown>)) {
    if (hint === null || typeof hint !== 'object' || Array.isArray(hint))
      bad(`.${arg}: must be { unit, scale? }`);
    const h = hint as Record<string, unknown>;
    const extra = Object.keys(h).find((k) => k !== 'unit' && k !== 'scale');
    if (extra) bad(`.${arg}.${extra}: unknown field (a hint has unit and scale)`);
    if (typeof h.unit !== 'string' || !UNIT.test(h.unit))
      bad(`.${arg}.unit: must be 1-16 printable ASCII characters, got ${JSON.stringify(h.unit)}`);
    if (h.scale !== undefined) {
      const s = h.scale;
      if (typeof s !== 'number' || !Number.isInteger(s) || s < 1 || !/^10*$/.test(String(s)))
        bad(`.${arg}.scale: must be 1, 10, 100, … (a power of ten), got ${JSON.stringify(s)}`);
    }
  }
  return hints as ArgDisplayHints;
}

/**
 * `value` as a person reads it with `hint`: `125.00 EUR` for 12500 with `{ unit: 'EUR', scale: 100 }`.
 * Exact for integers (no floating point): null when the value is not a finite number or a
 * string of digits (then only the raw value is shown).
 */
export function formatArg(value: unknown, hint: ArgDisplay): string | null {
  const raw =
    typeof value === 'number' && Number.isFinite(value)
      ? value
      : typeof value === 'string' && /^-?\d{1,30}$/.test(value)
        ? value
        : null;
  if (raw === null) return null;
  const scale = hint.scale ?? 1;
  const digits = String(scale).length - 1;
  if (typeof raw === 'number' && !Number.isInteger(raw))
    return `${(raw / scale).toFixed(Math.max(digits, 2))} ${hint.unit}`;
  const text = String(raw);
  const neg = text.startsWith('-');
  const abs = (neg ? text.slice(1) : text).padStart(digits + 1, '0');
  const whole = abs.slice(0, abs.length - digits).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  const frac = digits ? `.${abs.slice(abs.length - digits)}` : '';
  return `${neg ? '-' : ''}${whole}${frac} ${hint.unit}`;
}

/** The hints of the tools that declare any, by tool name (what the console is given). */
export function displayHintsOf(
  tools: Iterable<{ readonly name: string; readonly display?: ArgDisplayHints }>,
): Record<string, ArgDisplayHints> {
  const out: Record<string, ArgDisplayHints> = {};
  for (const t of tools) if (t.display && Object.keys(t.display).length) out[t.name] = t.display;
  return out;
}
