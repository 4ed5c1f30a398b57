/**
 * Which args differ (guard/args-diff.ts, issue 30's idempotency_conflict report): the paths where
 * two calls' args differ, with both values, in key order, bounded in number and size.
 */
import { argsDiff, ARGS_DIFF_LIMIT, ARGS_DIFF_VALUE_CHARS } from '../../guard';

describe('argsDiff', () => {
  it('names nested paths, array indexes and keys only one side has', () => {
    const held = { to: { account: 'a-1', bank: 'x' }, items: [1, 2, 3], note: 'hi', same: true };
    const proposed = { to: { account: 'a-2', bank: 'x' }, items: [1, 9, 3], extra: 5, same: true };
    expect(argsDiff(held, proposed)).toEqual([
      { path: 'extra', proposed: 5 },
      { path: 'items[1]', held: 2, proposed: 9 },
      { path: 'note', held: 'hi' },
      { path: 'to.account', held: 'a-1', proposed: 'a-2' },
    ]);
  });

  it('equal args differ nowhere; arrays of other lengths and other types differ as a whole', () => {
    expect(argsDiff({ a: [1, { b: 2 }] }, { a: [1, { b: 2 }] })).toEqual([]);
    expect(argsDiff({ a: [1, 2] }, { a: [1] })).toEqual([{ path: 'a', held: [1, 2], proposed: [1] }]);
    expect(argsDiff('x', { a: 1 })).toEqual([{ path: '(args)', held: 'x', proposed: { a: 1 } }]);
  });

  it('is bounded: at most the limit, long values cut', () => {
    const many = (v: number) => Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, v]));
    expect(argsDiff(many(1), many(2))).toHaveLength(ARGS_DIFF_LIMIT);
    const [d] = argsDiff({ t: 'a'.repeat(1000) }, { t: 'b' });
    expect(String(d?.held)).toHaveLength(ARGS_DIFF_VALUE_CHARS + 1);
    expect(String(d?.held).endsWith('…')).toBe(true);
  });
});
