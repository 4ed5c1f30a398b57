/**
 * The tenant spend store on real SQLite and PostgreSQL (issue 18): reserve under the cap,
 * settle the actual cost, refuse what would cross it, expire a crashed worker's reservation
 * (it keeps counting at its worst case until it leaves the window), concurrent reservations
 * never sum above the cap, and a raise is in force only when the worker's operators trust it.
 */
import { generateOperatorKey, signRequest } from '../../operators/sign';
import { OperatorRegistry } from '../../operators/registry';
import {
  checkSpendLimits,
  raiseSignedFields,
  raiseSubject,
  raiseVerifier,
  SpendInputError,
  SpendLimitsInvalidError,
  spendLimitsFromEnv,
  SpendStore,
} from '../../storage/spend';
import { backendNames, createTestDb, type TestDb } from '../ledger/helpers/backends';
import { createActivities } from '../../activities/create-activities';
import { ToolRegistry } from '../../tools/registry';

const LIMITS = { acme: { maxUsd: 1, windowMs: 3_600_000 } };

describe.each(backendNames)('the spend store on %s', (backend) => {
  let db: TestDb;
  let store: SpendStore;
  beforeEach(async () => {
    db = await createTestDb(backend);
    store = SpendStore.over(await db.open(), LIMITS);
  });
  afterEach(() => db.cleanup());

  test('reserves, settles the actual cost, and refuses a call that would cross the cap', async () => {
    const a = await store.reserve('acme', 'run-1', 'gpt-4o-mini', 0.4);
    expect(a.kind).toBe('reserved');
    expect((await store.status('acme')).inFlightUsd).toBe(0.4);
    // In flight at its worst case: 0.4 + 0.7 > 1.
    const b = await store.reserve('acme', 'run-2', 'gpt-4o-mini', 0.7);
    expect(b).toMatchObject({ kind: 'refused', usedUsd: 0.4 });
    if (b.kind === 'refused') expect(b.detail).toMatch(/tenant "acme" has used \$0.4 of its \$1 cap/);
    // Settled at its actual cost, the room comes back.
    expect(await store.settle(a.id, 0.1)).toBe(true);
    expect(await store.settle(a.id, 0.9)).toBe(false); // once only
    const c = await store.reserve('acme', 'run-2', 'gpt-4o-mini', 0.7);
    expect(c.kind).toBe('reserved');
    const st = await store.status('acme');
    expect(st).toMatchObject({ settledUsd: 0.1, inFlightUsd: 0.7, usedUsd: 0.8, availableUsd: 0.2 });
    expect(st.calls).toEqual({ settled: 1, inFlight: 1, refused: 1 });
    // Exactly up to the cap is allowed; a cent more is not.
    expect((await store.reserve('acme', 'run-3', 'm', 0.2)).kind).toBe('reserved');
    expect((await store.reserve('acme', 'run-3', 'm', 0.01)).kind).toBe('refused');
  });

  test('a tenant without a cap is recorded, never refused; a model without a price is refused under a cap', async () => {
    expect((await store.reserve('other', 'run-1', 'm', 1000)).kind).toBe('reserved');
    expect((await store.status('other')).availableUsd).toBeNull();
    const r = await store.reserve('acme', 'run-1', 'local-model', null);
    expect(r.kind).toBe('refused');
    if (r.kind === 'refused') expect(r.detail).toMatch(/model "local-model" has no price/);
  });

  test("a crashed worker's reservation expires: no longer in flight, still counted until it leaves the window", async () => {
    const a = await store.reserve('acme', 'run-1', 'm', 0.6);
    if (a.kind !== 'reserved') throw new Error('expected a reservation');
    const past =
      backend === 'postgres'
        ? "clock_timestamp() - interval '1 second'"
        : "CAST(unixepoch('subsec') * 1000 AS INTEGER) - 1000";
    await db.exec(`UPDATE agent_spend_reservations SET lease_until = ${past} WHERE id = ?`, [a.id]);
    let st = await store.status('acme');
    expect(st).toMatchObject({ inFlightUsd: 0, expiredUsd: 0.6, usedUsd: 0.6 });
    expect(st.calls.inFlight).toBe(0);
    // The model may have billed it before the crash: a call that would cross the cap is still refused.
    expect((await store.reserve('acme', 'run-2', 'm', 0.5)).kind).toBe('refused');
    expect(await store.roomFor('run-2')).toMatchObject({ ok: false });
    // Out of the window, it no longer counts.
    const older =
      backend === 'postgres'
        ? "clock_timestamp() - interval '2 hours'"
        : "CAST(unixepoch('subsec') * 1000 AS INTEGER) - 7200000";
    await db.exec(`UPDATE agent_spend_reservations SET created_at = ${older} WHERE id = ?`, [a.id]);
    st = await store.status('acme');
    expect(st.usedUsd).toBe(0);
    // The window has room again for run-2's refused call: its spend_limit stop lifts.
    expect(await store.roomFor('run-2')).toMatchObject({ ok: true });
    expect((await store.reserve('acme', 'run-2', 'm', 0.5)).kind).toBe('reserved');
  });

  test('concurrent reservations never sum above the cap', async () => {
    // PostgreSQL: three connections (as three workers). SQLite: one connection per process
    // (its async units must not interleave with another connection of the same thread);
    // across processes BEGIN IMMEDIATE serialises them.
    const more = async () => (backend === 'postgres' ? SpendStore.over(await db.open(), LIMITS) : store);
    const stores = [store, await more(), await more()];
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        (stores[i % 3] as SpendStore).reserve('acme', `run-${i}`, 'm', 0.07),
      ),
    );
    const reserved = results.filter((r) => r.kind === 'reserved').length;
    // 14 × 0.07 = 0.98 ≤ 1 < 15 × 0.07.
    expect(reserved).toBe(14);
    expect((await store.status('acme')).inFlightUsd).toBeCloseTo(0.98, 10);
  });

  test('roomFor: the refused call of a run fits again after a raise of the cap', async () => {
    await store.reserve('acme', 'run-1', 'm', 0.9);
    expect((await store.reserve('acme', 'run-2', 'm', 0.5)).kind).toBe('refused');
    expect(await store.roomFor('run-2')).toMatchObject({ ok: false });
    await store.raise({ tenant: 'acme', maxUsd: 2, actor: 'ops', reason: 'quarter end' });
    expect((await store.status('acme')).cap).toMatchObject({
      maxUsd: 2,
      windowMs: 3_600_000,
      source: 'raise',
    });
    expect(await store.roomFor('run-2')).toMatchObject({ ok: true });
    await expect(store.raise({ tenant: 'acme', maxUsd: -1, actor: 'ops', reason: 'x' })).rejects.toThrow(
      SpendInputError,
    );
  });

  test('with operators, only a raise signed by an operator whose role allows that cap is in force', async () => {
    const alice = generateOperatorKey('alice');
    const bob = generateOperatorKey('bob');
    const operators = OperatorRegistry.fromFile({
      operators: {
        alice: { publicKey: alice.publicKey, roles: ['finance'] },
        bob: { publicKey: bob.publicKey, roles: ['oncall'] },
      },
      roles: { finance: { raiseSpendUsd: 5 }, oncall: { stop: true } },
    });
    const trusted = store.verifiedBy(raiseVerifier(operators));
    const signed = (key: typeof alice, id: string, maxUsd: number) =>
      signRequest(
        key.keyFile,
        'raise_spend',
        raiseSubject('acme'),
        raiseSignedFields({ id, actor: key.keyFile.operator, reason: 'more', maxUsd, windowMs: 3_600_000 }),
      );
    // Unsigned, signed by a role without the permission, above the role's ceiling: not in force.
    await trusted.raise({ tenant: 'acme', maxUsd: 3, actor: 'alice', reason: 'more' });
    await trusted.raise({
      id: 'spr_bob',
      tenant: 'acme',
      maxUsd: 3,
      actor: 'bob',
      reason: 'more',
      auth: signed(bob, 'spr_bob', 3),
    });
    await trusted.raise({
      id: 'spr_big',
      tenant: 'acme',
      maxUsd: 9,
      actor: 'alice',
      reason: 'more',
      auth: signed(alice, 'spr_big', 9),
    });
    expect((await trusted.status('acme')).cap).toMatchObject({ maxUsd: 1, source: 'config' });
    // A signature over other fields (the cap edited after signing) does not verify either.
    await trusted.raise({
      id: 'spr_edit',
      tenant: 'acme',
      maxUsd: 4,
      actor: 'alice',
      reason: 'more',
      auth: signed(alice, 'spr_edit', 2),
    });
    expect((await trusted.status('acme')).cap).toMatchObject({ maxUsd: 1, source: 'config' });
    await trusted.raise({
      id: 'spr_ok',
      tenant: 'acme',
      maxUsd: 3,
      actor: 'alice',
      reason: 'more',
      auth: signed(alice, 'spr_ok', 3),
    });
    expect((await trusted.status('acme')).cap).toMatchObject({
      maxUsd: 3,
      source: 'raise',
      raiseId: 'spr_ok',
    });
  });
});

describe('AGENT_SPEND_LIMITS', () => {
  test.each([
    ['{not json', /AGENT_SPEND_LIMITS is not valid JSON/],
    ['{"acme": {"maxUsd": -1, "windowMs": 1000}}', /AGENT_SPEND_LIMITS\.acme\.maxUsd: must be ≥ 0/],
    ['{"acme": {"maxUsd": 1}}', /AGENT_SPEND_LIMITS\.acme\.windowMs/],
    ['{"acme": {"maxUsd": 1, "windowMs": 0}}', /AGENT_SPEND_LIMITS\.acme\.windowMs: must be > 0/],
    ['{"acme": {"maxUsd": "5", "windowMs": 1000}}', /AGENT_SPEND_LIMITS\.acme\.maxUsd: must be a number/],
    ['{"acme": {"maxUsd": 1, "windowMs": 1000, "cap": 2}}', /AGENT_SPEND_LIMITS\.acme/],
    ['{"bad tenant!": {"maxUsd": 1, "windowMs": 1000}}', /AGENT_SPEND_LIMITS/],
    ['[1]', /AGENT_SPEND_LIMITS/],
  ])('%s is refused, naming the variable and the field', (text, message) => {
    let err: unknown;
    try {
      spendLimitsFromEnv({ AGENT_SPEND_LIMITS: text });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SpendLimitsInvalidError);
    expect((err as Error).message).toMatch(message);
  });

  test('the worker refuses to start with malformed limits, naming the variable and the field', async () => {
    const db = await createTestDb('sqlite');
    const saved = process.env.AGENT_SPEND_LIMITS;
    try {
      const ledger = await db.open();
      process.env.AGENT_SPEND_LIMITS = '{"acme": {"maxUsd": -1, "windowMs": 60000}}';
      expect(() => createActivities({ registry: new ToolRegistry(), ledger })).toThrow(
        /AGENT_SPEND_LIMITS\.acme\.maxUsd: must be ≥ 0/,
      );
      // Limits given in code are checked the same way.
      delete process.env.AGENT_SPEND_LIMITS;
      expect(() =>
        createActivities({
          registry: new ToolRegistry(),
          ledger,
          spendLimits: { acme: { maxUsd: 1, windowMs: -1 } },
        }),
      ).toThrow(/spendLimits\.acme\.windowMs: must be > 0/);
      expect(() =>
        createActivities({ registry: new ToolRegistry(), ledger, spendLimits: LIMITS }),
      ).not.toThrow();
    } finally {
      if (saved === undefined) delete process.env.AGENT_SPEND_LIMITS;
      else process.env.AGENT_SPEND_LIMITS = saved;
      await db.cleanup();
    }
  });

  test('unset or blank: no limits; valid: parsed', () => {
    expect(spendLimitsFromEnv({})).toBeNull();
    expect(spendLimitsFromEnv({ AGENT_SPEND_LIMITS: ' ' })).toBeNull();
    expect(spendLimitsFromEnv({ AGENT_SPEND_LIMITS: JSON.stringify(LIMITS) })).toEqual(LIMITS);
    expect(() => checkSpendLimits({ acme: { maxUsd: -2, windowMs: 1 } }, 'spendLimits')).toThrow(
      /spendLimits\.acme\.maxUsd/,
    );
  });
});
