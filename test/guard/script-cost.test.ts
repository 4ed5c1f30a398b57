/**
 * The work of reading a script's calls (issue 32): counted, not timed. Every read of an entry
 * of the script array is counted through a Proxy; the reads per call must not grow with the
 * script's length, in the offline replay and in the cursor the durable workflow keeps.
 * Before the cursor, `scriptCallAt` walked from the first entry for every index: a script of
 * n distinct calls read n²/2 entries.
 */
import { parseReplayFile, replay, type ReplayEntry, ScriptCursor } from '../../guard';

/** The entries behind a Proxy that counts every read of one of them. */
function counted<T>(entries: T[]): { entries: T[]; reads: () => number } {
  let reads = 0;
  const proxy = new Proxy(entries, {
    get(target, key, receiver) {
      if (typeof key === 'string' && /^\d+$/.test(key)) reads += 1;
      return Reflect.get(target, key, receiver) as unknown;
    },
  });
  return { entries: proxy, reads: () => reads };
}

/** A script of n distinct plain calls (no loop, no stop), with a repeat entry in the middle. */
function script(n: number): ReplayEntry[] {
  const calls: ReplayEntry[] = Array.from({ length: n }, (_, i) => ({
    tool: 'read',
    args: { id: `r-${i}` },
  }));
  calls.splice(n >> 1, 0, { repeat: { times: 3, call: { tool: 'read', args: { id: 'x-{i}' } } } });
  return calls;
}

describe('the work per script call stays flat in the length of the script', () => {
  // Distinct reads, no progress: only the no-progress limit would stop them, and it is lifted.
  const config = { maxSteps: 1_000_000, noProgressLimit: 1_000_000 };

  it('the replay reads each entry a bounded number of times (1,000 vs 10,000 calls)', () => {
    const perCall = (n: number) => {
      const file = parseReplayFile({ config, calls: script(n) });
      const c = counted(file.calls);
      const out = replay({ ...file, calls: c.entries });
      expect(out.executed + out.cached).toBe(n + 3);
      return c.reads() / (n + 3);
    };
    const small = perCall(1_000);
    const large = perCall(10_000);
    // Walking from the first entry made this ratio ~10 (and each figure ~n/2).
    expect(large / small).toBeLessThan(1.5);
    expect(large).toBeLessThan(4);
  });

  it('the cursor reads the next call in O(1) and any other in O(log n), the same calls as a walk', () => {
    const perCall = (n: number, order: (i: number) => number) => {
      const c = counted(script(n));
      const cursor = new ScriptCursor(c.entries);
      const built = c.reads();
      let found = 0;
      for (let i = 0; i < cursor.length; i++) if (cursor.at(order(i)) !== undefined) found += 1;
      expect(found).toBe(cursor.length);
      return (c.reads() - built) / cursor.length;
    };
    expect(perCall(1_000, (i) => i)).toBe(1);
    expect(perCall(100_000, (i) => i)).toBe(1);
    // Out of order (a resumed run, a retried turn): a binary search on the index built once.
    const scattered = (n: number) => (i: number) => (i * 7919) % (n + 3);
    expect(perCall(100_000, scattered(100_000))).toBe(1);
    const cursor = new ScriptCursor(script(10));
    expect([4, 5, 6, 7, 8].map((i) => cursor.at(i))).toEqual([
      { tool: 'read', args: { id: 'r-4' } },
      { tool: 'read', args: { id: 'x-0' } },
      { tool: 'read', args: { id: 'x-1' } },
      { tool: 'read', args: { id: 'x-2' } },
      { tool: 'read', args: { id: 'r-5' } },
    ]);
    expect(cursor.at(13)).toBeUndefined();
    expect(cursor.at(2)).toEqual({ tool: 'read', args: { id: 'r-2' } });
    expect(new ScriptCursor([{ repeat: { times: 0, call: { tool: 'a' } } }, { tool: 'b' }]).at(0)).toEqual({
      tool: 'b',
    });
  });
});
