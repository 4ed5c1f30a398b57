/**
 * Served usage (issue 40) on real SQLite and PostgreSQL: every request of a turn is counted once
 * across the plan activity's attempts; a request whose end was never recorded (a worker killed
 * between the reply and its record) counts at its worst case, never zero; a killed last attempt's
 * rows are carried by the run's next turn; and the bad usage figures a server may send are counted
 * as docs/spec.md §7.10 says.
 */
import { countedUsage } from '../../planners/call-ceiling';
import { ServedUsageStore } from '../../storage/spend';
import { backendNames, createTestDb, type TestDb } from '../ledger/helpers/backends';

const WORST = { tokens: 5000, costUsd: 0.002 };
const answered = (tokens: number, finish = 'done') =>
  ({
    state: 'answered',
    usage: { tokens, costUsd: tokens / 1e6 },
    basis: 'reported',
    finish,
    elapsedMs: 10,
  }) as const;

describe.each(backendNames)('served usage on %s', (backend) => {
  let db: TestDb;
  let store: ServedUsageStore;
  beforeEach(async () => {
    db = await createTestDb(backend);
    store = ServedUsageStore.over(await db.open())!;
  });
  afterEach(() => db.cleanup());

  test('a retry carries every attempt of its turn once; the cut reply is known to the next attempt', async () => {
    const a1 = store.turn('run-1', 'r/1', 1);
    await a1.begin();
    const cut = await a1.sent(WORST, 64);
    await a1.ended(cut, answered(364, 'truncated'));
    // Attempt 1 ends by itself (its failure carries the claim); Temporal retries.
    expect(await a1.claim()).toMatchObject({ tokens: 364, requests: 1, orphans: 0, estimated: 0 });
    const a2 = store.turn('run-1', 'r/1', 2);
    await a2.begin();
    expect(await a2.earlier()).toEqual({
      requests: 1,
      lastReply: { attempt: 1, finish: 'truncated', maxTokens: 64, elapsedMs: 10 },
    });
    await a2.ended(await a2.sent(WORST, 128), answered(341));
    // The workflow sees only attempt 2's outcome: both replies, once.
    expect(await a2.claim()).toMatchObject({ tokens: 705, requests: 2 });
    // The next turn claims nothing of them.
    const next = store.turn('run-1', 'r/2', 1);
    await next.begin();
    expect(await next.claim()).toMatchObject({ tokens: 0, requests: 0 });
  });

  test('a request without a recorded end counts at its worst case; a killed last attempt is carried by the next turn', async () => {
    const a = store.turn('run-2', 'r/7', 1);
    await a.begin();
    await a.ended(await a.sent(WORST, 64), answered(300));
    await a.sent(WORST, 128); // the worker died here: no end recorded, no claim
    const other = store.turn('run-other', 'x/1', 1);
    await other.sent(WORST, 64);
    // The run's next turn (after the stop and a resume) carries the orphans, at their worst case.
    const b = store.turn('run-2', 'r/9', 1);
    await b.begin();
    await b.ended(await b.sent(WORST, 64), answered(200));
    const claimed = await b.claim();
    expect(claimed).toMatchObject({ tokens: 300 + 5000 + 200, requests: 3, orphans: 2, estimated: 1 });
    expect(claimed.costUsd).toBeCloseTo(300 / 1e6 + 0.002 + 200 / 1e6, 12);
    // Claimed once: a retry of that turn carries them again, the turn after does not.
    const b2 = store.turn('run-2', 'r/9', 2);
    await b2.begin();
    expect(await b2.claim()).toMatchObject({ requests: 3 });
    expect(await store.turn('run-2', 'r/10', 1).claim()).toMatchObject({ requests: 0 });
  });
});

describe('what an answered request counts (bad usage from the server)', () => {
  test('reported usage counts as it is', () => {
    expect(countedUsage({ tokens: 120, costUsd: 0.0001 }, WORST)).toEqual({
      usage: { tokens: 120, costUsd: 0.0001 },
      basis: 'reported',
    });
  });
  test('missing, zero, negative or non-finite usage counts at the request worst case, never zero', () => {
    for (const bad of [
      undefined,
      null,
      {},
      { tokens: 0, costUsd: 0 },
      { tokens: -5, costUsd: 0 },
      { tokens: NaN, costUsd: 0 },
      { tokens: 10, costUsd: -1 },
    ])
      expect(countedUsage(bad as never, WORST)).toEqual({ usage: WORST, basis: 'estimated' });
    expect(countedUsage(undefined, { tokens: 900, costUsd: null })).toEqual({
      usage: { tokens: 900, costUsd: 0 },
      basis: 'estimated',
    });
  });
  test('usage above the request own bound counts as reported (what the provider bills), marked above_bound', () => {
    expect(countedUsage({ tokens: 9000, costUsd: 0.01 }, WORST)).toEqual({
      usage: { tokens: 9000, costUsd: 0.01 },
      basis: 'above_bound',
    });
  });
});
