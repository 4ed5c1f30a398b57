/**
 * common/redact.ts: every secret pattern of issue #10 never survives in text or in a
 * value (property tests over random surroundings), `__proto__` and friends never touch a
 * prototype, and deep or huge values are cut with a marker instead of walked unbounded.
 */
import fc from 'fast-check';
import {
  MAX_REDACT_CHARS,
  MAX_REDACT_DEPTH,
  MAX_REDACT_NODES,
  REDACTED,
  TRUNCATED,
  redact,
  redactText,
  replaceSecrets,
} from '../../common/redact';
import { toStoredError } from '../../storage/ledger/stored-error';

const chars = (alphabet: string, min: number, max: number) =>
  fc.string({ unit: fc.constantFrom(...alphabet.split('')), minLength: min, maxLength: max });
const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const B64URL = `${ALNUM}_-`;
const B64 = `${ALNUM}+/`;
const UPPER_DIGITS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0234567';
/** Text around a secret: any words, joined to it by a separator a log line or a JSON dump would use. */
const words = fc.string({ unit: fc.constantFrom(...'abc xyz 123 .:,'.split('')), maxLength: 30 });
const sep = fc.constantFrom(' ', '\n', ': ', '"', "'", '(', ', ', '\t', '[', '=');
const endSep = fc.constantFrom('', ' ', '\n', '"', "'", ')', ',', ';', ']');

/** A secret family: the text that carries it, and the part that must not survive. */
interface Case {
  readonly carrier: string;
  readonly secret: string;
}
const families: Record<string, fc.Arbitrary<Case>> = {
  'Authorization: Basic': chars(B64, 4, 40).map((c) => ({
    carrier: `Authorization: Basic ${c}==`,
    secret: `${c}==`,
  })),
  'Basic credentials': chars(B64, 8, 40).map((c) => ({ carrier: `Basic ${c}9=`, secret: `${c}9=` })),
  'Bearer token': chars(B64URL, 8, 60).map((c) => ({ carrier: `Bearer ${c}.x1`, secret: `${c}.x1` })),
  'URL userinfo': fc
    .tuple(chars(ALNUM, 1, 12), chars(`${ALNUM}!$%*`, 6, 24))
    .map(([u, p]) => ({ carrier: `https://${u}:${p}@db.example.com:5432/app`, secret: `:${p}@` })),
  'token in a URL': fc
    .tuple(
      fc.constantFrom(
        'token',
        'access_token',
        'api_key',
        'apikey',
        'sig',
        'X-Amz-Signature',
        'client_secret',
        'password',
      ),
      chars(`${B64URL}%.`, 8, 40),
    )
    .map(([name, v]) => ({ carrier: `https://h.example/cb?state=ok&${name}=${v}&x=1`, secret: `=${v}` })),
  JWT: fc
    .tuple(chars(B64URL, 8, 40), chars(B64URL, 8, 80), chars(B64URL, 8, 43))
    .map(([h, p, s]) => ({ carrier: `eyJ${h}.eyJ${p}.${s}`, secret: `${p}.${s}` })),
  'Stripe key': fc
    .tuple(fc.constantFrom('sk_live_', 'sk_test_', 'rk_live_', 'rk_test_'), chars(ALNUM, 16, 40))
    .map(([prefix, body]) => ({ carrier: `${prefix}${body}`, secret: body })),
  'Google API key': chars(B64URL, 35, 35).map((body) => ({ carrier: `AIza${body}`, secret: body })),
  'Slack token': fc
    .tuple(fc.constantFrom('xoxb-', 'xoxp-', 'xoxa-', 'xoxr-'), chars(`${ALNUM}-`, 10, 40))
    .map(([prefix, body]) => ({ carrier: `${prefix}1${body}`, secret: `1${body}` })),
  'GitHub token': fc
    .tuple(fc.constantFrom('ghp_', 'gho_', 'ghs_', 'ghu_'), chars(ALNUM, 36, 36))
    .map(([prefix, body]) => ({ carrier: `${prefix}${body}`, secret: body })),
  'AWS access key id': fc
    .tuple(fc.constantFrom('AKIA', 'ASIA'), chars(UPPER_DIGITS, 16, 16))
    .map(([prefix, body]) => ({ carrier: `${prefix}${body}`, secret: body })),
  'AWS secret in config text': chars(B64, 40, 40).map((v) => ({
    carrier: `aws_secret_access_key=${v}`,
    secret: v,
  })),
  'OpenAI / Anthropic key': fc
    .tuple(fc.constantFrom('sk-', 'sk-proj-', 'sk-ant-api03-'), chars(B64URL, 20, 60))
    .map(([prefix, body]) => ({ carrier: `${prefix}${body}`, secret: body })),
  'PEM private key': fc
    .tuple(fc.constantFrom('RSA ', 'EC ', 'OPENSSH ', ''), chars(B64, 40, 200))
    .map(([kind, body]) => ({
      carrier: `-----BEGIN ${kind}PRIVATE KEY-----\n${body}\n-----END ${kind}PRIVATE KEY-----`,
      secret: body,
    })),
};

describe('redactText', () => {
  it.each(Object.entries(families))('a %s never survives, whatever surrounds it', (_name, family) => {
    fc.assert(
      fc.property(words, sep, family, endSep, words, (before, s1, c, s2, after) => {
        const out = redactText(`${before}${s1}${c.carrier}${s2}${after}`);
        expect(out).not.toContain(c.secret);
        expect(out).toContain(REDACTED);
      }),
      { numRuns: 150 },
    );
  });

  it.each(Object.entries(families))(
    'a %s never survives as a field value or inside an array',
    (_name, family) => {
      fc.assert(
        fc.property(family, fc.constantFrom('note', 'url', 'detail', 'q'), (c, field) => {
          const out = JSON.stringify(redact({ [field]: c.carrier, list: [`see ${c.carrier}`] }));
          expect(out).not.toContain(c.secret);
        }),
        { numRuns: 50 },
      );
    },
  );

  it('skips the patterns only for text none of them can match (its prefilter, issue 42)', () => {
    // Pieces every pattern needs, in and out of case, mixed with ordinary characters.
    const pieces = [
      '-----BEGIN ',
      'PRIVATE KEY-----',
      '://',
      '@',
      '=',
      '"',
      ':',
      'Authorization',
      'AUTHORISATION',
      'proxy-authorization',
      'Bearer ',
      'Basic ',
      'Token ',
      'Digest ',
      'eyJ',
      '.',
      'sk-',
      'sk_live_',
      'rk_test_',
      'whsec_',
      'AIza',
      'xoxb-',
      'xapp-',
      'ghp_',
      'github_pat_',
      'glpat-',
      'npm_',
      'AKIA',
      'ASIA',
      'token',
      'password',
      'x',
      'Z',
      '9',
      '_',
      '-',
      ' ',
      '\n',
    ];
    const text = fc.array(fc.oneof(fc.constantFrom(...pieces), chars(`${B64URL}+/`, 1, 24)), {
      maxLength: 12,
    });
    fc.assert(
      fc.property(text, (parts) => {
        const s = parts.join('');
        expect(redactText(s)).toBe(replaceSecrets(s));
      }),
      { numRuns: 3000 },
    );
    fc.assert(
      fc.property(fc.string({ maxLength: 80 }), (s) => expect(redactText(s)).toBe(replaceSecrets(s))),
      { numRuns: 1000 },
    );
  });

  it('keeps ordinary text intact', () => {
    for (const text of [
      'Basic usage of the API is documented',
      'Token budget exhausted after 12 steps',
      'https://example.com/docs?page=2&q=temporal',
      'task-runner-12345 finished; see doc-llm-1',
      'email ann@example.com about order 42',
    ]) {
      expect(redactText(text)).toBe(text);
    }
  });

  it('redacts named credentials in JSON text and header pairs', () => {
    expect(redactText('{"password": "hunter2", "user": "ann"}')).toBe(
      `{"password": "${REDACTED}", "user": "ann"}`,
    );
    expect(
      redact({
        headers: [
          { name: 'Authorization', value: 'opaque-value-1' },
          { key: 'X-Api-Key', value: 'opaque-value-2' },
          { name: 'Content-Type', value: 'application/json' },
        ],
      }),
    ).toEqual({
      headers: [
        { name: 'Authorization', value: REDACTED },
        { key: 'X-Api-Key', value: REDACTED },
        { name: 'Content-Type', value: 'application/json' },
      ],
    });
  });

  it('cuts long text with a marker, and a secret across the cut is still redacted', () => {
    const key = `sk_live_${'a'.repeat(40)}`;
    const text = `${'x'.repeat(MAX_REDACT_CHARS - 10)} ${key} tail`;
    const out = redactText(text);
    expect(out.endsWith(`…${TRUNCATED}`)).toBe(true);
    expect(out.length).toBe(MAX_REDACT_CHARS + 1 + TRUNCATED.length);
    expect(out).not.toContain('sk_live_aaaa');
    expect(redactText('short', 3)).toBe(`sho…${TRUNCATED}`);
  });
});

describe('redact: prototypes', () => {
  const dangerous = fc.constantFrom('__proto__', 'constructor', 'prototype', 'a', 'toString');
  /** JSON text with those keys at any depth, parsed: JSON.parse makes `__proto__` an own key. */
  const hostile: fc.Arbitrary<string> = fc.letrec<{ node: string }>((tie) => ({
    node: fc.oneof(
      { depthSize: 'small' },
      fc.constant('{"polluted": true}'),
      fc.constant('1'),
      fc.constant('"x"'),
      fc
        .array(fc.tuple(dangerous, tie('node')), { maxLength: 4 })
        .map((entries) => `{${entries.map(([k, v]) => `${JSON.stringify(k)}: ${v}`).join(', ')}}`),
      fc.array(tie('node'), { maxLength: 3 }).map((items) => `[${items.join(', ')}]`),
    ),
  })).node;

  it('never lets __proto__ / constructor / prototype keys touch a prototype, and keeps them as data', () => {
    fc.assert(
      fc.property(hostile, (text) => {
        const input = JSON.parse(text) as unknown;
        const out = redact(input);
        const visit = (v: unknown): void => {
          if (v === null || typeof v !== 'object') return;
          expect(Object.getPrototypeOf(v)).toBe(Array.isArray(v) ? Array.prototype : Object.prototype);
          for (const k of Object.keys(v)) visit((v as Record<string, unknown>)[k]);
        };
        visit(out);
        // Lossless: the same JSON as the input (nothing in it is a secret).
        expect(JSON.stringify(out)).toBe(JSON.stringify(input));
        expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      }),
      { numRuns: 300 },
    );
  });

  it('a __proto__ key does not give the copy inherited fields', () => {
    const out = redact(JSON.parse('{"__proto__": {"isAdmin": true}, "a": 1}')) as Record<string, unknown>;
    expect(out.isAdmin).toBeUndefined();
    expect(Object.getOwnPropertyNames(out)).toEqual(['__proto__', 'a']);
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
  });
});

describe('redact: caps', () => {
  it(`cuts nesting at depth ${MAX_REDACT_DEPTH} with a marker, without recursing further`, () => {
    let deep: unknown = 'leaf';
    for (let i = 0; i < 100_000; i++) deep = { d: deep };
    let out = redact(deep);
    let depth = 0;
    while (out && typeof out === 'object') {
      out = (out as { d: unknown }).d;
      depth++;
    }
    expect(depth).toBe(MAX_REDACT_DEPTH);
    expect(out).toBe(TRUNCATED);
  });

  it(`copies at most ${MAX_REDACT_NODES} values of a huge array or object, then a marker`, () => {
    const big = Array.from({ length: 50_000 }, (_, i) => i);
    const out = redact(big) as unknown[];
    expect(out.length).toBe(MAX_REDACT_NODES);
    expect(out[out.length - 1]).toBe(TRUNCATED);
    const wide = Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`k${i}`, i]));
    const o = redact(wide) as Record<string, unknown>;
    expect(Object.keys(o).length).toBeLessThanOrEqual(MAX_REDACT_NODES);
    expect(o[TRUNCATED]).toBe(TRUNCATED);
  });

  it('survives a cycle (bounded by depth and size, not by luck)', () => {
    const a: Record<string, unknown> = { name: 'a' };
    a.self = a;
    a.list = [a, a];
    expect(() => JSON.stringify(redact(a))).not.toThrow();
  });

  it('honours smaller caps passed in', () => {
    expect(redact({ a: { b: { c: 1 } } }, { maxDepth: 2 })).toEqual({ a: { b: TRUNCATED } });
    expect(redact(['abcdef'], { maxChars: 2 })).toEqual([`ab…${TRUNCATED}`]);
  });
});

describe('toStoredError (the ledger keeps and replays tool errors)', () => {
  it('stores the message redacted, whatever was thrown', () => {
    const key = 'sk_live_0123456789abcdefghij';
    expect(toStoredError(new Error(`charge failed for ${key}`))).toEqual({
      name: 'Error',
      message: `charge failed for ${REDACTED}`,
    });
    expect(toStoredError(`GET https://u:pw123456@api/x?token=abcdef123 failed`).message).toBe(
      `GET https://${REDACTED}@api/x?token=${REDACTED} failed`,
    );
    expect(
      JSON.stringify(toStoredError({ code: 'E1', detail: { authorization: `Bearer ${key}` } })),
    ).not.toContain(key);
  });
});
