import fc from 'fast-check';
import {
  canonicalize,
  canonicalJson,
  fingerprintCall,
  hashCanonical,
  normalizeCall,
  sortKeys,
} from '../../guard';

const values = fc.anything({
  withBigInt: true,
  withDate: true,
  withNullPrototype: true,
  withObjectString: false,
});

describe('canonical form and its one-pass hash', () => {
  it('writes the canonical object, keys in code-unit order even where JS objects reorder them', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        expect(JSON.parse(canonicalJson(v))).toEqual(canonicalize(v));
      }),
      { numRuns: 2000 },
    );
    // A plain object lists integer-like keys first; the canonical text does not.
    expect(canonicalJson({ '0': 1, '': 2 })).toBe('{"":2,"0":1}');
  });

  it('hashes two values alike exactly when their canonical texts are equal', () => {
    fc.assert(
      fc.property(values, values, (a, b) => {
        const sameText = canonicalJson(a) === canonicalJson(b);
        return sameText === (hashCanonical(a) === hashCanonical(b));
      }),
      { numRuns: 3000 },
    );
  });

  it('hashes a value and its canonical form alike (fingerprints from either path agree)', () => {
    fc.assert(
      fc.property(fc.string(), values, (tool, v) => {
        const n = normalizeCall(tool, v);
        return (
          hashCanonical(v) === hashCanonical(canonicalize(v)) && n.fingerprint === fingerprintCall(tool, v)
        );
      }),
      { numRuns: 2000 },
    );
  });

  it('treats -0 as 0, large and fractional numbers by value, and keeps "5" apart from 5', () => {
    expect(hashCanonical(-0)).toBe(hashCanonical(0));
    expect(hashCanonical(2 ** 40)).not.toBe(hashCanonical(2 ** 40 + 1));
    expect(hashCanonical(1.5)).not.toBe(hashCanonical(1));
    expect(hashCanonical('5')).not.toBe(hashCanonical(5));
    expect(hashCanonical({ a: [1, 2] })).not.toBe(hashCanonical({ a: [2, 1] }));
  });

  it('sorts keys exactly as Array#sort does', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: 'binary' }), { maxLength: 30 }), (keys) => {
        const expected = [...keys].sort();
        return JSON.stringify(sortKeys([...keys])) === JSON.stringify(expected);
      }),
      { numRuns: 2000 },
    );
  });
});
