/**
 * What a person must check (issue 31 item 5): the held-out attack's look-alike payees — a
 * Cyrillic `а`/`о`, a trailing zero-width space, a right-to-left override — never render as
 * `acc-vendor-7` (client/console/args-view.ts), and a tool's display hints show an amount in
 * its unit (tools/arg-display.ts); a bad hint is refused naming the tool, arg and field.
 */
import { z } from 'zod';
import { argsView } from '../../client/console/args-view';
import { checkArgDisplay, displayHintsOf, formatArg } from '../../tools/arg-display';
import { defineTool } from '../../tools/define-tool';

/** The text the page shows (segments in order). */
const shown = (args: unknown) =>
  argsView(args)
    .segments.map((s) => s.s)
    .join('');

describe('the args a person checks', () => {
  const real = { to: 'acc-vendor-7', amountCents: 12500 };
  const lookalikes = ['\u0430cc-vend\u043er-7', 'acc-vendor-7\u200b', 'acc-\u202e7-rodnev\u202c'];

  it('shows each look-alike payee differently from the real one, with a warning naming the code points', () => {
    const realText = shown(real);
    expect(argsView(real).warnings).toEqual([]);
    expect(argsView(real).segments.every((s) => s.k === 't')).toBe(true);
    const texts = lookalikes.map((to) => shown({ ...real, to }));
    for (const t of texts) expect(t).not.toBe(realText);
    expect(new Set(texts).size).toBe(3);
    // Cyrillic letters are kept, marked, and followed by their code points.
    expect(texts[0]).toContain('а\u2009U+0430cc-vend');
    expect(argsView({ to: lookalikes[0] }).warnings).toEqual([
      'args.to: U+0430 Cyrillic at 0, U+043E Cyrillic at 8',
    ]);
    // Invisible and bidi characters are escaped, never drawn as themselves.
    expect(texts[1]).toContain('acc-vendor-7\\u200b"');
    expect(texts[1]).not.toContain('\u200b');
    expect(argsView({ to: lookalikes[1] }).warnings).toEqual(['args.to: U+200B ZERO WIDTH SPACE at 12']);
    expect(texts[2]).toContain('acc-\\u202e7-rodnev\\u202c');
    expect(texts[2]).not.toMatch(/[\u202a-\u202e]/);
    expect(argsView({ to: lookalikes[2] }).warnings[0]).toContain('U+202E RIGHT-TO-LEFT OVERRIDE at 4');
    // Segments say which are which (the page colours them).
    expect(argsView({ to: lookalikes[1] }).segments.filter((s) => s.k === 'x')).toEqual([
      { k: 'x', s: '\\u200b' },
    ]);
  });

  it('flags keys too, and nested strings by their path', () => {
    const w = argsView({ meta: { ['n\u0430me']: ['ok', 'x\u00a0y'] } }).warnings;
    expect(w).toEqual([
      'args.meta key "nаme": U+0430 Cyrillic at 1',
      'args.meta.nаme[1]: U+00A0 NO-BREAK SPACE at 1',
    ]);
  });

  it('shows a hinted amount in its unit, exactly, next to the raw value', () => {
    const hints = { amountCents: { unit: 'EUR', scale: 100 } };
    expect(argsView({ amountCents: 12500 }, hints).amounts).toEqual([
      { arg: 'amountCents', raw: '12500', shown: '125.00 EUR' },
    ]);
    expect(formatArg(4_999_900, { unit: 'EUR', scale: 100 })).toBe('49,999.00 EUR');
    expect(formatArg(5, { unit: 'EUR', scale: 100 })).toBe('0.05 EUR');
    expect(formatArg(-120, { unit: 'EUR', scale: 100 })).toBe('-1.20 EUR');
    expect(formatArg(1500, { unit: 'ms' })).toBe('1,500 ms');
    expect(formatArg('12500', { unit: 'EUR', scale: 100 })).toBe('125.00 EUR');
    expect(formatArg('12.5 EUR', { unit: 'EUR', scale: 100 })).toBeNull();
    expect(argsView({ amountCents: 'lots' }, hints).amounts).toEqual([]);
  });

  it('refuses a malformed hint naming the tool, the arg and the field; defineTool checks it', () => {
    expect(() => checkArgDisplay('t', { a: { unit: '' } })).toThrow('defineTool(t): display.a.unit: must be');
    expect(() => checkArgDisplay('t', { a: { unit: 'EUR', scale: 3 } })).toThrow(
      'defineTool(t): display.a.scale: must be 1, 10, 100',
    );
    expect(() => checkArgDisplay('t', { a: { unit: 'E\u200bUR' } })).toThrow('display.a.unit');
    expect(() => checkArgDisplay('t', { a: { unit: 'EUR', colour: 'red' } })).toThrow(
      'display.a.colour: unknown field',
    );
    const base = {
      name: 'pay',
      description: 'pay',
      effect: 'read' as const,
      schema: z.object({ amountCents: z.number() }),
      execute: () => ({ data: null }),
    };
    expect(() => defineTool({ ...base, display: { amountCents: { unit: 'EUR', scale: 7 } } })).toThrow(
      'defineTool(pay): display.amountCents.scale',
    );
    const ok = defineTool({ ...base, display: { amountCents: { unit: 'EUR', scale: 100 } } });
    expect(displayHintsOf([ok, { ...base, name: 'other' }])).toEqual({
      pay: { amountCents: { unit: 'EUR', scale: 100 } },
    });
  });
});
