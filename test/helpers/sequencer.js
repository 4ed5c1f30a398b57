/**
 * jest testSequencer: the slowest files start first, so each overlaps everything else on the
 * other worker instead of running alone at the end. On a clean clone jest has no timings of
 * earlier runs and orders by file size, which put the 1,000-turn long-run test (a small file)
 * last. After the named files, jest's own order (its cached timings when it has them).
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports -- jest loads this file as CommonJS
const Sequencer = require('@jest/test-sequencer').default;

/** The files that take longest, slowest first (docs/performance.md, "The test suite"). */
const SLOWEST_FIRST = [
  'test/long/long-run.test.ts',
  'test/chaos/chaos.test.ts',
  'test/client/agentctl.test.ts',
  'test/package/pack.test.ts',
];

class SlowestFirst extends Sequencer {
  sort(tests) {
    const rank = (t) => {
      const i = SLOWEST_FIRST.findIndex((f) => t.path.replace(/\\/g, '/').endsWith(f));
      return i === -1 ? SLOWEST_FIRST.length : i;
    };
    const rest = super.sort(tests.filter((t) => rank(t) === SLOWEST_FIRST.length));
    const named = tests.filter((t) => rank(t) < SLOWEST_FIRST.length).sort((a, b) => rank(a) - rank(b));
    return [...named, ...rest];
  }
}

module.exports = SlowestFirst;
