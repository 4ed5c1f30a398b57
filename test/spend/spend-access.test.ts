/**
 * The spend access the `plan` activity hands a planner (worker/spend.ts): a
 * refusal is the planner's `SpendLimitError` / `UnpricedModelError` (the run stops
 * `spend_limit`), a database failure is `SpendStoreUnavailableError` (→ `LedgerUnavailable` →
 * `infrastructure_fault`), and a settle that fails leaves the reservation counted, never fails
 * the turn whose model already answered.
 */
import { spendAccess } from '../../worker/spend';
import { SpendLimitError, UnpricedModelError } from '../../planners/errors';
import { SpendStore, SpendStoreUnavailableError } from '../../storage/spend';
import { createTestDb, type TestDb } from '../ledger/helpers/backends';

describe('spendAccess', () => {
  let db: TestDb;
  let store: SpendStore;
  beforeEach(async () => {
    db = await createTestDb('sqlite');
    store = SpendStore.over(await db.open(), { acme: { maxUsd: 1, windowMs: 60_000 } });
  });
  afterEach(() => db.cleanup());

  it('reserves and settles through the store; refusals are the planner errors the workflow maps', async () => {
    const access = spendAccess(store, 'acme', 'run-1');
    const ticket = await access.reserve(0.6, 'gpt-4o-mini');
    await ticket.settle(0.2);
    expect((await store.status('acme')).settledUsd).toBe(0.2);
    await expect(access.reserve(0.9, 'gpt-4o-mini')).rejects.toThrow(SpendLimitError);
    await expect(access.reserve(null, 'local-llama')).rejects.toThrow(UnpricedModelError);
    expect((await store.status('acme')).calls).toEqual({ settled: 1, inFlight: 0, refused: 2 });
  });

  it('a database failure is SpendStoreUnavailableError; a failed settle is swallowed and leaves the worst case counted', async () => {
    const broken = Object.create(store) as SpendStore;
    broken.reserve = () => Promise.reject(new Error('connection refused'));
    await expect(spendAccess(broken, 'acme', 'r').reserve(0.1, 'm')).rejects.toThrow(
      SpendStoreUnavailableError,
    );

    const flaky = Object.create(store) as SpendStore;
    flaky.settle = () => Promise.reject(new Error('connection reset'));
    const ticket = await spendAccess(flaky, 'acme', 'r').reserve(0.3, 'm');
    await expect(ticket.settle(0.01)).resolves.toBeUndefined();
    expect((await store.status('acme')).inFlightUsd).toBe(0.3);
  });
});
