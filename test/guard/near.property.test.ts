/**
 * Near repeats (docs/spec.md §3, Near repeats): the token-set relation is symmetric, reworded
 * queries match, a meaningful word more or less does not; the guard stops reworded repeats
 * `near_call_repeat` and still names an exact repeat `same_call_repeat`.
 */
import fc from 'fast-check';
import { z } from 'zod';
import {
  LoopGuard,
  normalizeCall,
  parseReplayFile,
  replay,
  ReplayFormatError,
  similarTokens,
  STOP_WORDS,
} from '../../guard';
import { defineTool } from '../../tools/define-tool';

const SPEC = { similarArgs: ['query'] } as const;
const keyOf = (args: Record<string, unknown>) => normalizeCall('search', args, SPEC).similarKey;

const word = fc.stringMatching(/^[a-z][a-z0-9]{1,7}$/).filter((w) => !STOP_WORDS.has(w));
const words = fc.uniqueArray(word, { minLength: 1, maxLength: 6 });

/** The same words in another order, case and punctuation, with stop words thrown in. */
const reworded = (ws: readonly string[], seed: number): string => {
  const order = [...ws].sort(
    (a, b) => ((a.length * 31 + seed) % 7) - ((b.length * 31 + seed) % 7) || a.localeCompare(b),
  );
  const decorated = order.map((w, i) => (i % 2 === seed % 2 ? w.toUpperCase() : w));
  const glue = [' ', ', ', ' the ', '? ', ' -- ', ' of '];
  return (
    decorated.reduce(
      (acc, w, i) => (i === 0 ? w : acc + (glue[(i + seed) % glue.length] as string) + w),
      '',
    ) + (seed % 2 ? '!' : '')
  );
};

describe('near repeats', () => {
  it('the relation is symmetric and reflexive', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (a, b) => {
        const ka = keyOf({ query: a });
        const kb = keyOf({ query: b });
        expect(ka === kb).toBe(kb === ka);
        expect(keyOf({ query: a })).toBe(ka);
      }),
    );
  });

  it('reworded queries (order, case, punctuation, stop words) match', () => {
    fc.assert(
      fc.property(words, fc.nat(100), fc.nat(100), (ws, s1, s2) => {
        expect(keyOf({ query: reworded(ws, s1) })).toBe(keyOf({ query: reworded(ws, s2) }));
        expect(similarTokens(reworded(ws, s1))).toEqual([...ws].sort());
      }),
    );
  });

  it('a query with a meaningful word more does not match, nor do other args that differ', () => {
    fc.assert(
      fc.property(words, word, fc.nat(100), (ws, extra, seed) => {
        fc.pre(!ws.includes(extra));
        expect(keyOf({ query: reworded([...ws, extra], seed) })).not.toBe(
          keyOf({ query: reworded(ws, seed) }),
        );
        const q = reworded(ws, seed);
        expect(keyOf({ query: q, cursor: '3' })).not.toBe(keyOf({ query: q, cursor: '4' }));
      }),
    );
  });

  it('the guard stops reworded searches near_call_repeat and an exact one same_call_repeat', () => {
    const call = (query: string) => {
      const n = normalizeCall('search', { query }, SPEC);
      return { tool: 'search', fingerprint: n.fingerprint, similarKey: n.similarKey ?? null };
    };
    const run = (queries: string[]) => {
      const g = new LoopGuard({ noProgressLimit: 50 });
      for (const [i, q] of queries.entries()) {
        const b = g.before(call(q), i);
        if (b.decision === 'stop') return b.reason;
        g.after(call(q), { kind: 'SUCCESS' }, 0, i);
      }
      return 'ran';
    };
    expect(run(['disk full on db-1', 'DB-1: full disk!', 'the disk on db-1 is full'])).toBe(
      'near_call_repeat',
    );
    expect(run(['disk full', 'disk full', 'disk full'])).toBe('same_call_repeat');
    expect(run(['disk full', 'disk full', 'memory full'])).toBe('ran');
  });

  it('declaring an arg the schema lacks is a TypeError naming it, at definition', () => {
    const def = {
      name: 'lookup',
      description: 'x',
      effect: 'read' as const,
      schema: z.object({ query: z.string() }).strict(),
      execute: () => ({ data: null }),
    };
    expect(() => defineTool({ ...def, similarArgs: ['query'] })).not.toThrow();
    expect(() => defineTool({ ...def, similarArgs: ['qeury'] })).toThrow(/similarArgs names "qeury"/);
  });

  it('a replay file declares similarArgs for its fixture tools; a bad one is refused naming the field', () => {
    const calls = ['disk full', 'Full disk', 'the disk is full'].map((q) => ({
      tool: 'search',
      args: { q },
    }));
    const out = replay(parseReplayFile({ tools: { search: { similarArgs: ['q'] } }, calls }));
    expect(out).toMatchObject({
      terminal_state: 'STOPPED_LOOP_GUARD',
      reason: 'near_call_repeat',
      executed: 2,
    });
    // Without the declaration the three are distinct calls: only the no-progress rule stops them.
    expect(replay(parseReplayFile({ calls })).reason).toBe('no_progress');
    expect(() => parseReplayFile({ tools: { search: { similarArgs: 'q' } }, calls })).toThrow(
      ReplayFormatError,
    );
    expect(() => parseReplayFile({ tools: { search: { similarArgs: 'q' } }, calls })).toThrow(/similarArgs/);
  });
});
