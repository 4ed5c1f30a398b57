/**
 * Fingerprints (docs/spec.md §3): tool name + canonical args. Differences without meaning (key
 * order, surrounding white space, defaulted fields, request/trace ids) must vanish;
 * everything that can change a result (pages, cursors, versions, array order, case)
 * must stay.
 */
import { z } from 'zod';
import { canonicalize, canonicalJson, fingerprintOf, hash64, normalizeCall, removePaths } from '../../guard';

const searchArgs = z.object({
  q: z.string(),
  limit: z.number().int().default(10),
  page: z.number().int().default(1),
  requestId: z.string().optional(),
});
const searchSpec = { parse: (a: unknown) => searchArgs.parse(a), nonSemantic: ['requestId'] };

const fp = (tool: string, args: unknown, spec = {}) => normalizeCall(tool, args, spec).fingerprint;

describe('canonicalize', () => {
  it('sorts object keys at every depth', () => {
    expect(canonicalJson({ b: 1, a: { d: 2, c: [{ f: 1, e: 2 }] } })).toBe(
      '{"a":{"c":[{"e":2,"f":1}],"d":2},"b":1}',
    );
  });

  it('trims strings, including inside arrays and nested objects', () => {
    expect(canonicalize({ q: '  x\n', list: [' a ', { s: '\tb' }] })).toEqual({
      q: 'x',
      list: ['a', { s: 'b' }],
    });
  });

  it('keeps array order, because order can change a result', () => {
    expect(canonicalJson([2, 1])).not.toBe(canonicalJson([1, 2]));
  });

  it('drops undefined fields and maps undefined array items to null, as JSON does', () => {
    expect(canonicalize({ a: undefined, b: [undefined, 1] })).toEqual({ b: [null, 1] });
  });

  it('reads -0 as 0, non-finite numbers as null, bigints as strings and dates as ISO text', () => {
    expect(canonicalize({ z: -0, n: Number.NaN, i: Infinity, big: 12n, d: new Date(0) })).toEqual({
      big: '12',
      d: '1970-01-01T00:00:00.000Z',
      i: null,
      n: null,
      z: 0,
    });
  });

  it('does not change letter case', () => {
    expect(canonicalJson({ q: 'Inv' })).not.toBe(canonicalJson({ q: 'inv' }));
  });
});

describe('removePaths', () => {
  it('removes top-level and nested dot paths and leaves the input untouched', () => {
    const input = { requestId: 'r', meta: { traceId: 't', keep: 1 }, q: 'x' };
    expect(removePaths(input, ['requestId', 'meta.traceId'])).toEqual({ meta: { keep: 1 }, q: 'x' });
    expect(input.meta.traceId).toBe('t');
  });

  it('removes a field from every array element with *', () => {
    expect(
      removePaths(
        {
          items: [
            { id: 1, traceId: 'a' },
            { id: 2, traceId: 'b' },
          ],
        },
        ['items.*.traceId'],
      ),
    ).toEqual({
      items: [{ id: 1 }, { id: 2 }],
    });
  });

  it('ignores paths that do not exist', () => {
    expect(removePaths({ a: 1 }, ['b.c', 'a.x', ''])).toEqual({ a: 1 });
  });
});

describe('hash64', () => {
  it('is 16 hex digits, stable across calls, and differs for different text', () => {
    const h = hash64('search:{"q":"x"}');
    expect(h).toMatch(/^[0-9a-f]{16}$/);
    expect(hash64('search:{"q":"x"}')).toBe(h);
    expect(hash64('search:{"q":"y"}')).not.toBe(h);
    expect(hash64('')).toMatch(/^[0-9a-f]{16}$/);
  });

  it('has no collisions over 50,000 short distinct inputs', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 50_000; i++) seen.add(hash64(`{"q":"q${i}"}`));
    expect(seen.size).toBe(50_000);
  });
});

describe('normalizeCall', () => {
  it('names the tool in the fingerprint: tool:16-hex', () => {
    expect(fp('search', { q: 'x' })).toMatch(/^search:[0-9a-f]{16}$/);
    expect(fp('search', { q: 'x' })).toBe(fingerprintOf('search', { q: 'x' }));
  });

  it('gives identical args to different tools different fingerprints', () => {
    expect(fp('get_ticket', { id: 7 })).not.toBe(fp('get_comments', { id: 7 }));
  });

  it('treats key order, white space and a request id as the same call', () => {
    expect(fp('search', { requestId: 'r2', page: 1, q: ' x ' }, searchSpec)).toBe(
      fp('search', { q: 'x', page: 1, requestId: 'r1' }, searchSpec),
    );
  });

  it('treats an explicit default as the same call as the omitted field (zod schema)', () => {
    expect(fp('search', { q: 'x', limit: 10 }, searchSpec)).toBe(fp('search', { q: 'x' }, searchSpec));
    expect(normalizeCall('search', { q: 'x' }, searchSpec).canonicalArgs).toEqual({
      limit: 10,
      page: 1,
      q: 'x',
    });
  });

  it('fills fixture defaults only where the field is absent', () => {
    const spec = { defaults: { limit: 10 } };
    expect(fp('search', { q: 'x' }, spec)).toBe(fp('search', { q: 'x', limit: 10 }, spec));
    expect(fp('search', { q: 'x', limit: 50 }, spec)).not.toBe(fp('search', { q: 'x' }, spec));
  });

  it('keeps page, cursor and version changes as different calls', () => {
    const base = fp('search', { q: 'x' }, searchSpec);
    expect(fp('search', { q: 'x', page: 2 }, searchSpec)).not.toBe(base);
    expect(fp('list', { cursor: 'c1' })).not.toBe(fp('list', { cursor: 'c2' }));
    expect(fp('get', { id: 1, version: 3 })).not.toBe(fp('get', { id: 1, version: 4 }));
  });

  it('treats missing args as {}', () => {
    expect(fp('ping', undefined)).toBe(fp('ping', {}));
    expect(fp('ping', null)).toBe(fp('ping', {}));
  });

  it('lets the schema reject invalid args (the caller classifies that as PRECONDITION invalid_args)', () => {
    expect(() => normalizeCall('search', { q: 42 }, searchSpec)).toThrow(z.ZodError);
  });
});
