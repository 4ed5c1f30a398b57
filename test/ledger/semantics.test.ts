/**
 * The ledger protocol, once, against every backend: each outcome of docs/ledger.md (claim,
 * duplicate, live claim, expired claim and dispatch, conflict, failures, fencing, resolution,
 * retention, atomic writes, migrations) on a real SQLite file and a real PostgreSQL schema.
 * Every test counts the side effect's real executions, so a refused duplicate that ran
 * anyway fails the test.
 */
import {
  executeOnce,
  executeOnceAtomic,
  ExpiredDispatchPolicy,
  LedgerConflictError,
  LedgerConnectionError,
  LedgerState,
  LedgerStateError,
  openLedger,
  SideEffectErrorClass,
  StaleTokenError,
  type Ledger,
} from '../../storage/ledger';
import { backendNames, createTestDb, type TestDb } from './helpers/backends';
import { bump, executions } from './helpers/counter';

const base = { tool: 'charge_card', argsHash: 'h1', runId: 'run-1', owner: 'w1', leaseMs: 5_000 };

describe.each(backendNames)('ledger protocol on %s', (backend) => {
  let db: TestDb;
  let ledger: Ledger;
  let n = 0;
  const nextKey = () => `op-${++n}`;
  const effect =
    (key: string, result: unknown = { ok: key }) =>
    async () => {
      bump(db.dir, key);
      return result;
    };

  /**
   * An executor that claimed and dispatched `key`, maybe performed the side effect, and died:
   * its lease is moved into the past. Returns the dead executor's token.
   */
  const deadDispatch = async (key: string, { performed = false } = {}) => {
    const c = await ledger.claim({ ...base, key, owner: 'dead' });
    if (c.kind !== 'claimed') throw new Error(`expected to claim ${key}, got ${c.kind}`);
    await ledger.dispatch(key, c.token);
    if (performed) bump(db.dir, key);
    await db.expireLease(key);
    return c.token;
  };

  beforeAll(async () => {
    db = await createTestDb(backend);
    ledger = await db.open();
  });
  afterAll(async () => db.cleanup());

  describe('claim', () => {
    it('executes the first claim and replays the stored result to a duplicate with zero tool calls', async () => {
      const key = nextKey();
      const first = await executeOnce(ledger, { ...base, key }, effect(key, { chargeId: 'ch_1' }));
      expect(first).toEqual({ kind: 'executed', key, result: { chargeId: 'ch_1' } });
      const again = await executeOnce(ledger, { ...base, key, owner: 'w2', runId: 'run-2' }, effect(key));
      expect(again).toEqual({ kind: 'cached', key, result: { chargeId: 'ch_1' }, source: 'ledger' });
      expect(executions(db.dir, key)).toBe(1);
      const rec = await ledger.get(key);
      expect(rec).toMatchObject({
        state: LedgerState.SUCCEEDED,
        tool: 'charge_card',
        argsHash: 'h1',
        attempts: 1,
      });
      expect(rec?.dispatchedAt).not.toBeNull();
    });

    it('answers a duplicate with retryable in_progress while a live lease is held, never a second execution', async () => {
      const key = nextKey();
      const c = await ledger.claim({ ...base, key });
      expect(c.kind).toBe('claimed');
      const dup = await executeOnce(ledger, { ...base, key, owner: 'w2' }, effect(key));
      expect(dup.kind).toBe('in_progress');
      if (dup.kind === 'in_progress') expect(dup.retryAfterMs).toBeGreaterThan(3_000);
      expect(executions(db.dir, key)).toBe(0);
    });

    it('refuses the same key with other arguments as a conflict and leaves the stored record unchanged', async () => {
      const key = nextKey();
      await executeOnce(ledger, { ...base, key }, effect(key, { amount: 10 }));
      const before = await ledger.get(key);
      const clash = await executeOnce(ledger, { ...base, key, argsHash: 'h2' }, effect(key));
      expect(clash.kind).toBe('conflict');
      if (clash.kind === 'conflict') {
        expect(clash.error).toBeInstanceOf(LedgerConflictError);
        expect(clash.error.message).toContain(`"${key}"`);
        expect(clash.error.message).toContain('h2');
        expect(clash.error).toMatchObject({
          name: 'LedgerConflictError',
          storedArgsHash: 'h1',
          requestedArgsHash: 'h2',
        });
      }
      await expect(ledger.claim({ ...base, key, tool: 'refund' })).rejects.toThrow(
        /tool refund \(stored: charge_card\)/,
      );
      expect(await ledger.get(key)).toEqual(before);
      expect(executions(db.dir, key)).toBe(1);
    });

    it('answers every claim from the stored state: claimed, succeeded, failed_final, in_progress, unknown', async () => {
      const fresh = nextKey();
      const c = await ledger.claim({ ...base, key: fresh });
      expect(c).toEqual({ kind: 'claimed', token: expect.any(Number), takenOverFrom: null });
      const rec = await ledger.get(fresh);
      expect(rec).toMatchObject({ state: LedgerState.CLAIMED, attempts: 1, owner: 'w1', runId: 'run-1' });
      expect(rec?.leaseRemainingMs).toBeGreaterThan(0);
      expect(rec?.leaseRemainingMs).toBeLessThanOrEqual(base.leaseMs);
      const live = await ledger.claim({ ...base, key: fresh, owner: 'w2' });
      expect(live.kind).toBe('in_progress');
      if (live.kind === 'in_progress') {
        expect(live.retryAfterMs).toBeGreaterThan(0);
        expect(live.retryAfterMs).toBeLessThanOrEqual(base.leaseMs);
      }

      const done = nextKey();
      await executeOnce(ledger, { ...base, key: done }, effect(done, { n: 1 }));
      expect(await ledger.claim({ ...base, key: done })).toEqual({ kind: 'succeeded', result: { n: 1 } });

      const failed = nextKey();
      const f = await ledger.claim({ ...base, key: failed });
      if (f.kind !== 'claimed') throw new Error('must claim');
      await ledger.fail(failed, f.token, Object.assign(new Error('declined'), { code: 'card_declined' }), {
        final: true,
      });
      expect(await ledger.claim({ ...base, key: failed })).toEqual({
        kind: 'failed_final',
        error: { name: 'Error', message: 'declined', code: 'card_declined' },
      });

      const lost = nextKey();
      await deadDispatch(lost);
      const u = await ledger.claim({ ...base, key: lost });
      expect(u).toMatchObject({ kind: 'unknown', record: { key: lost, state: LedgerState.UNKNOWN } });
      // Sticky: asking again, even asking for takeover, does not reopen it.
      expect(
        await ledger.claim({ ...base, key: lost, expiredDispatch: ExpiredDispatchPolicy.TAKEOVER }),
      ).toMatchObject({ kind: 'unknown' });
      expect(executions(db.dir, fresh) + executions(db.dir, lost)).toBe(0);
      expect(executions(db.dir, done)).toBe(1);
    });

    it('refuses malformed claims before touching the database', async () => {
      const key = nextKey();
      await expect(ledger.claim({ ...base, key, argsHash: '' })).rejects.toThrow(
        /"argsHash" must be a non-empty string/,
      );
      await expect(ledger.claim({ ...base, key, leaseMs: 0 })).rejects.toThrow(
        /lease must be a positive number/,
      );
      expect(await ledger.get(key)).toBeNull();
    });
  });

  describe('expired dispatch (the executor died after announcing the side effect)', () => {
    it('turns an expired DISPATCHED record UNKNOWN by default and never re-executes it', async () => {
      const key = nextKey();
      await deadDispatch(key, { performed: true });
      const outcome = await executeOnce(ledger, { ...base, key }, effect(key));
      expect(outcome).toMatchObject({ kind: 'unknown', key, record: { state: LedgerState.UNKNOWN } });
      const rec = await ledger.get(key);
      expect(rec).toMatchObject({ state: LedgerState.UNKNOWN, leaseExpiresAt: null });
      expect(rec?.finishedAt).not.toBeNull();
      expect((await executeOnce(ledger, { ...base, key, owner: 'w3' }, effect(key))).kind).toBe('unknown');
      expect(executions(db.dir, key)).toBe(1);
    });

    it('hands an expired DISPATCHED record over, still DISPATCHED with a larger token, when asked to', async () => {
      const key = nextKey();
      const dead = await deadDispatch(key);
      const c = await ledger.claim({
        ...base,
        key,
        owner: 'w2',
        expiredDispatch: ExpiredDispatchPolicy.TAKEOVER,
      });
      expect(c).toMatchObject({ kind: 'claimed', takenOverFrom: LedgerState.DISPATCHED });
      if (c.kind !== 'claimed') throw new Error('must claim');
      expect(c.token).toBeGreaterThan(dead);
      expect(await ledger.get(key)).toMatchObject({
        state: LedgerState.DISPATCHED,
        owner: 'w2',
        attempts: 2,
      });
      await expect(ledger.commit(key, dead, {})).rejects.toThrow(StaleTokenError);
      expect(executions(db.dir, key)).toBe(0);
    });

    it('re-executes a vendor-idempotent tool with the same key after an expired dispatch', async () => {
      const key = nextKey();
      await deadDispatch(key, { performed: true });
      const seen: { key: string; reExecution: boolean }[] = [];
      const outcome = await executeOnce(ledger, { ...base, key, vendorIdempotent: true }, async (ctx) => {
        seen.push({ key: ctx.key, reExecution: ctx.reExecution });
        bump(db.dir, key);
        return { chargeId: 'ch_same' };
      });
      expect(outcome).toEqual({ kind: 'executed', key, result: { chargeId: 'ch_same' } });
      expect(seen).toEqual([{ key, reExecution: true }]);
      expect(await ledger.get(key)).toMatchObject({ state: LedgerState.SUCCEEDED, attempts: 2 });
      expect(executions(db.dir, key)).toBe(2);
      expect(await executeOnce(ledger, { ...base, key, vendorIdempotent: true }, effect(key))).toMatchObject({
        kind: 'cached',
        result: { chargeId: 'ch_same' },
      });
      expect(executions(db.dir, key)).toBe(2);
    });

    it('settles an expired dispatch through reconcile: succeeded → cached, failed → FAILED_FINAL', async () => {
      const ok = nextKey();
      await deadDispatch(ok, { performed: true });
      const asked: string[] = [];
      const found = await executeOnce(
        ledger,
        {
          ...base,
          key: ok,
          reconcile: async (k) => {
            asked.push(k);
            return { status: 'succeeded', result: { chargeId: 'ch_found' } };
          },
        },
        effect(ok),
      );
      expect(found).toEqual({
        kind: 'cached',
        key: ok,
        result: { chargeId: 'ch_found' },
        source: 'reconcile',
      });
      expect(asked).toEqual([ok]);
      expect(await ledger.get(ok)).toMatchObject({
        state: LedgerState.SUCCEEDED,
        result: { chargeId: 'ch_found' },
      });
      expect(await executeOnce(ledger, { ...base, key: ok }, effect(ok))).toMatchObject({
        kind: 'cached',
        source: 'ledger',
      });
      expect(executions(db.dir, ok)).toBe(1);

      const bad = nextKey();
      await deadDispatch(bad, { performed: true });
      const refused = await executeOnce(
        ledger,
        {
          ...base,
          key: bad,
          reconcile: async () => ({
            status: 'failed',
            error: Object.assign(new Error('declined'), { code: 'card_declined' }),
          }),
        },
        effect(bad),
      );
      expect(refused).toMatchObject({
        kind: 'failed_final',
        replayed: true,
        error: { code: 'card_declined' },
      });
      expect(await ledger.get(bad)).toMatchObject({
        state: LedgerState.FAILED_FINAL,
        error: { code: 'card_declined' },
      });
      expect(await executeOnce(ledger, { ...base, key: bad }, effect(bad))).toMatchObject({
        kind: 'failed_final',
      });
      expect(executions(db.dir, bad)).toBe(1);
    });

    it('executes after an expired dispatch only when reconcile says the vendor never saw it', async () => {
      const key = nextKey();
      await deadDispatch(key);
      const outcome = await executeOnce(
        ledger,
        { ...base, key, reconcile: async () => ({ status: 'not_found' }) },
        effect(key, { chargeId: 'ch_new' }),
      );
      expect(outcome).toEqual({ kind: 'executed', key, result: { chargeId: 'ch_new' } });
      expect(executions(db.dir, key)).toBe(1);
    });

    it('goes UNKNOWN when reconcile cannot tell or throws, and re-executes only a vendor-idempotent tool', async () => {
      const unsure = nextKey();
      await deadDispatch(unsure, { performed: true });
      const u = await executeOnce(
        ledger,
        { ...base, key: unsure, reconcile: async () => ({ status: 'unknown' }) },
        effect(unsure),
      );
      expect(u).toMatchObject({ kind: 'unknown', record: { state: LedgerState.UNKNOWN } });
      expect((await ledger.get(unsure))?.error).toEqual({
        name: 'OutcomeUnknown',
        message: 'reconcile could not tell whether the side effect happened',
      });
      expect(executions(db.dir, unsure)).toBe(1);

      const broken = nextKey();
      await deadDispatch(broken, { performed: true });
      const b = await executeOnce(
        ledger,
        {
          ...base,
          key: broken,
          reconcile: async () => {
            throw new Error('vendor API down');
          },
        },
        effect(broken),
      );
      expect(b.kind).toBe('unknown');
      expect((await ledger.get(broken))?.error).toEqual({
        name: 'OutcomeUnknown',
        message: 'reconcile failed: vendor API down',
      });
      expect(executions(db.dir, broken)).toBe(1);

      const idem = nextKey();
      await deadDispatch(idem, { performed: true });
      const again = await executeOnce(
        ledger,
        { ...base, key: idem, vendorIdempotent: true, reconcile: async () => ({ status: 'unknown' }) },
        effect(idem),
      );
      expect(again.kind).toBe('executed');
      expect(executions(db.dir, idem)).toBe(2);
    });
  });

  describe('failures', () => {
    it('stores a final failure and replays it without calling the tool again', async () => {
      const key = nextKey();
      const declined = Object.assign(new Error('card declined'), { code: 'card_declined' });
      const first = await executeOnce(
        ledger,
        { ...base, key, classifyError: () => SideEffectErrorClass.FINAL },
        async () => {
          bump(db.dir, key);
          throw declined;
        },
      );
      expect(first).toMatchObject({
        kind: 'failed_final',
        replayed: false,
        error: { code: 'card_declined' },
      });
      const again = await executeOnce(ledger, { ...base, key }, effect(key));
      expect(again).toMatchObject({
        kind: 'failed_final',
        replayed: true,
        error: { message: 'card declined' },
      });
      expect(executions(db.dir, key)).toBe(1);
    });

    it('releases the claim on a transient failure before dispatch so exactly one later attempt executes', async () => {
      const key = nextKey();
      const c = await ledger.claim({ ...base, key });
      if (c.kind !== 'claimed') throw new Error('must claim');
      await ledger.fail(key, c.token, new Error('rate limited'), { final: false });
      expect(await ledger.get(key)).toBeNull();
      const outcomes = await Promise.all(
        [1, 2, 3, 4, 5].map((i) => executeOnce(ledger, { ...base, key, owner: `w${i}` }, effect(key))),
      );
      expect(outcomes.filter((o) => o.kind === 'executed')).toHaveLength(1);
      expect(executions(db.dir, key)).toBe(1);
      await expect(ledger.commit(key, c.token, {})).rejects.toThrow(StaleTokenError);
    });

    it('keeps the intent after a maybe-performed transient failure, so the next claim goes UNKNOWN', async () => {
      const key = nextKey();
      const first = await executeOnce(ledger, { ...base, key }, async () => {
        bump(db.dir, key);
        throw new Error('socket timeout after request was sent');
      });
      expect(first.kind).toBe('failed_retryable');
      const next = await executeOnce(ledger, { ...base, key }, effect(key));
      expect(next.kind).toBe('unknown');
      expect(executions(db.dir, key)).toBe(1);
    });

    it('releases a dispatched claim when the tool knows the side effect did not happen', async () => {
      const key = nextKey();
      const first = await executeOnce(
        ledger,
        { ...base, key, classifyError: () => SideEffectErrorClass.NOT_PERFORMED },
        async () => {
          throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
        },
      );
      expect(first.kind).toBe('failed_retryable');
      const next = await executeOnce(ledger, { ...base, key }, effect(key));
      expect(next.kind).toBe('executed');
      expect(executions(db.dir, key)).toBe(1);
    });

    it('keeps a maybe-performed failure DISPATCHED with its lease given up and the error stored', async () => {
      const key = nextKey();
      const c = await ledger.claim({ ...base, key });
      if (c.kind !== 'claimed') throw new Error('must claim');
      await ledger.dispatch(key, c.token);
      bump(db.dir, key);
      await ledger.fail(key, c.token, new Error('socket hang up'), { final: false });
      const rec = await ledger.get(key);
      expect(rec).toMatchObject({ state: LedgerState.DISPATCHED, error: { message: 'socket hang up' } });
      expect(rec?.leaseRemainingMs).toBeLessThanOrEqual(0);
      // No need to wait for the lease: the next claim follows the expired-dispatch rule at once.
      expect((await ledger.claim({ ...base, key })).kind).toBe('unknown');
      expect(executions(db.dir, key)).toBe(1);
    });

    it('stores a final failure before dispatch too, and rejects a second failure by the same token', async () => {
      const key = nextKey();
      const c = await ledger.claim({ ...base, key });
      if (c.kind !== 'claimed') throw new Error('must claim');
      await ledger.fail(key, c.token, 'invalid account', { final: true });
      expect(await ledger.get(key)).toMatchObject({
        state: LedgerState.FAILED_FINAL,
        error: { name: 'Error', message: 'invalid account' },
        leaseExpiresAt: null,
      });
      await expect(ledger.fail(key, c.token, 'again', { final: false })).rejects.toThrow(StaleTokenError);
      await expect(ledger.fail(key, c.token, 'again', { final: true })).rejects.toThrow(StaleTokenError);
      expect(executions(db.dir, key)).toBe(0);
    });
  });

  describe('leases and fencing', () => {
    it('rejects a stale executor commit by the fencing token', async () => {
      const key = nextKey();
      const a = await ledger.claim({ ...base, key, owner: 'A' });
      if (a.kind !== 'claimed') throw new Error('A must claim');
      await db.expireLease(key);
      const b = await ledger.claim({ ...base, key, owner: 'B' });
      expect(b).toMatchObject({ kind: 'claimed', takenOverFrom: LedgerState.CLAIMED });
      if (b.kind !== 'claimed') throw new Error('B must claim');
      expect(b.token).toBeGreaterThan(a.token);
      await expect(ledger.dispatch(key, a.token)).rejects.toBeInstanceOf(StaleTokenError);
      await expect(ledger.commit(key, a.token, { by: 'A' })).rejects.toThrow(StaleTokenError);
      await expect(ledger.renew(key, a.token, 1000)).rejects.toThrow(/fencing token/);
      await ledger.dispatch(key, b.token);
      bump(db.dir, key);
      await ledger.commit(key, b.token, { by: 'B' });
      await expect(ledger.commit(key, a.token, { by: 'A' })).rejects.toThrow(StaleTokenError);
      expect(await ledger.get(key)).toMatchObject({
        state: LedgerState.SUCCEEDED,
        result: { by: 'B' },
        owner: 'B',
      });
      expect(executions(db.dir, key)).toBe(1);
    });

    it('does not let a worker whose clock runs 5 minutes fast take a live lease', async () => {
      const key = nextKey();
      await ledger.claim({ ...base, key, leaseMs: 60_000 });
      const realNow = Date.now;
      const fast = () => realNow.call(Date) + 5 * 60_000;
      Date.now = fast;
      try {
        const other = await db.open();
        const stolen = await executeOnce(other, { ...base, key, owner: 'fast-clock' }, effect(key));
        expect(stolen.kind).toBe('in_progress');
        if (stolen.kind === 'in_progress') expect(stolen.retryAfterMs).toBeGreaterThan(50_000);
        const rec = await other.get(key);
        expect(rec?.owner).toBe('w1');
        expect(rec?.leaseRemainingMs).toBeGreaterThan(50_000);
        // The worker believes the lease ended long ago; the database disagrees.
        expect(Date.parse(rec?.leaseExpiresAt ?? '')).toBeLessThan(Date.now());
      } finally {
        Date.now = realNow;
      }
      expect(executions(db.dir, key)).toBe(0);
    });

    it('renews the lease while a long side effect runs so nobody else takes it', async () => {
      const key = nextKey();
      let second: Awaited<ReturnType<typeof executeOnce>> | undefined;
      const first = await executeOnce(ledger, { ...base, key, leaseMs: 300 }, async () => {
        bump(db.dir, key);
        await new Promise((r) => setTimeout(r, 900));
        second = await executeOnce(ledger, { ...base, key, owner: 'w2', leaseMs: 300 }, effect(key));
        return 'done';
      });
      expect(first.kind).toBe('executed');
      expect(second?.kind).toBe('in_progress');
      expect(executions(db.dir, key)).toBe(1);
    });

    it('says who owns the record in a stale-token rejection, or that it no longer exists', async () => {
      const key = nextKey();
      const a = await ledger.claim({ ...base, key, owner: 'A' });
      if (a.kind !== 'claimed') throw new Error('A must claim');
      await db.expireLease(key);
      const b = await ledger.claim({ ...base, key, owner: 'B' });
      if (b.kind !== 'claimed') throw new Error('B must claim');
      const err = await ledger.markUnknown(key, a.token, 'x').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StaleTokenError);
      expect(err).toMatchObject({
        name: 'StaleTokenError',
        key,
        token: a.token,
        currentToken: b.token,
        currentState: LedgerState.CLAIMED,
      });
      expect((err as Error).message).toBe(
        `Rejected markUnknown for key "${key}" with fencing token ${a.token}: the record is CLAIMED with token ${b.token}. ` +
          'Another executor owns or settled this operation; do not retry with this token.',
      );
      await ledger.fail(key, b.token, new Error('429'), { final: false });
      const gone = await ledger.dispatch(key, b.token).catch((e: unknown) => e);
      expect(gone).toMatchObject({ currentToken: null, currentState: null });
      expect((gone as Error).message).toBe(
        `Rejected dispatch for key "${key}" with fencing token ${b.token}: the record no longer exists.`,
      );
      expect(executions(db.dir, key)).toBe(0);
    });

    it('gives a re-created claim a larger token than the released one, from one counter for all keys', async () => {
      const key = nextKey();
      const first = await ledger.claim({ ...base, key });
      if (first.kind !== 'claimed') throw new Error('must claim');
      await ledger.fail(key, first.token, new Error('429'), { final: false });
      const other = await ledger.claim({ ...base, key: nextKey() });
      const second = await ledger.claim({ ...base, key });
      if (second.kind !== 'claimed' || other.kind !== 'claimed') throw new Error('must claim');
      expect(other.token).toBeGreaterThan(first.token);
      expect(second.token).toBeGreaterThan(other.token);
      expect(await ledger.get(key)).toMatchObject({ token: second.token, attempts: 1 });
    });

    it('accepts a commit on the token alone when the lease lapsed but nobody took over', async () => {
      const key = nextKey();
      const c = await ledger.claim({ ...base, key });
      if (c.kind !== 'claimed') throw new Error('must claim');
      await ledger.dispatch(key, c.token);
      await db.expireLease(key);
      await ledger.renew(key, c.token, 60_000);
      expect((await ledger.get(key))?.leaseRemainingMs).toBeGreaterThan(50_000);
      await db.expireLease(key);
      bump(db.dir, key);
      await ledger.commit(key, c.token, { late: true });
      expect(await ledger.get(key)).toMatchObject({ state: LedgerState.SUCCEEDED, result: { late: true } });
      expect(executions(db.dir, key)).toBe(1);
    });

    it('aborts the side effect signal when another executor takes the lease over, and never commits over it', async () => {
      const key = nextKey();
      const lost: unknown[] = [];
      let aborted = false;
      const outcome = await executeOnce(
        ledger,
        { ...base, key, leaseMs: 300, onLeaseLost: (e) => lost.push(e) },
        async (ctx) => {
          bump(db.dir, key);
          // Take the key over as a second executor would after a network partition.
          for (let i = 0; i < 10; i++) {
            await db.expireLease(key);
            const c = await ledger.claim({
              ...base,
              key,
              owner: 'B',
              leaseMs: 60_000,
              expiredDispatch: ExpiredDispatchPolicy.TAKEOVER,
            });
            if (c.kind === 'claimed') break;
          }
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, 3_000);
            ctx.signal.addEventListener('abort', () => {
              aborted = true;
              clearTimeout(timer);
              resolve();
            });
          });
          return 'late';
        },
      );
      expect(aborted).toBe(true);
      expect(lost).toHaveLength(1);
      expect(lost[0]).toBeInstanceOf(StaleTokenError);
      expect(outcome.kind).toBe('in_progress');
      expect(await ledger.get(key)).toMatchObject({
        state: LedgerState.DISPATCHED,
        owner: 'B',
        result: null,
      });
      expect(executions(db.dir, key)).toBe(1);
    });
  });

  describe('operator resolution', () => {
    it('lets an operator settle an UNKNOWN record, storing who, why and when, and replays it afterwards', async () => {
      const key = nextKey();
      const c = await ledger.claim({ ...base, key });
      if (c.kind !== 'claimed') throw new Error('must claim');
      await ledger.dispatch(key, c.token);
      bump(db.dir, key);
      await expect(ledger.resolve(key, { as: 'succeeded', actor: 'ops', reason: 'x' })).rejects.toThrow(
        LedgerStateError,
      );
      await db.expireLease(key);
      expect((await ledger.claim({ ...base, key })).kind).toBe('unknown');
      await expect(ledger.resolve(key, { as: 'succeeded', actor: ' ', reason: 'r' })).rejects.toThrow(
        /actor/,
      );
      const rec = await ledger.resolve(key, {
        as: 'succeeded',
        actor: 'alice',
        reason: 'vendor dashboard shows ch_9',
        result: { chargeId: 'ch_9' },
      });
      expect(rec).toMatchObject({
        state: LedgerState.SUCCEEDED,
        result: { chargeId: 'ch_9' },
        resolution: {
          as: 'succeeded',
          actor: 'alice',
          reason: 'vendor dashboard shows ch_9',
          priorState: 'UNKNOWN',
        },
      });
      expect(Number.isNaN(Date.parse(rec.resolution?.at ?? ''))).toBe(false);
      const audit = await db.exec('SELECT actor, reason, prior_state FROM ledger_resolutions WHERE key = ?', [
        key,
      ]);
      expect(audit).toEqual([
        { actor: 'alice', reason: 'vendor dashboard shows ch_9', prior_state: 'UNKNOWN' },
      ]);
      await expect(ledger.resolve(key, { as: 'failed', actor: 'bob', reason: 'oops' })).rejects.toThrow(
        /Cannot resolve .* SUCCEEDED/,
      );
      const replay = await executeOnce(ledger, { ...base, key }, effect(key));
      expect(replay).toMatchObject({ kind: 'cached', result: { chargeId: 'ch_9' } });
      expect(executions(db.dir, key)).toBe(1);
    });

    it('settles as failed: duplicates get FAILED_FINAL naming who decided, and nothing runs', async () => {
      const key = nextKey();
      await deadDispatch(key);
      const rec = await ledger.resolve(key, { as: 'failed', actor: 'bob', reason: 'no charge at vendor' });
      expect(rec).toMatchObject({
        state: LedgerState.FAILED_FINAL,
        result: null,
        error: { name: 'ResolvedAsFailed', message: 'no charge at vendor (by bob)' },
        leaseExpiresAt: null,
        // A DISPATCHED record whose lease expired can be settled without a claim first.
        resolution: { as: 'failed', actor: 'bob', priorState: LedgerState.DISPATCHED },
      });
      expect(await executeOnce(ledger, { ...base, key }, effect(key))).toMatchObject({
        kind: 'failed_final',
        replayed: true,
        error: { name: 'ResolvedAsFailed' },
      });
      const audit = await db.exec(
        'SELECT resolved_as, actor, prior_state FROM ledger_resolutions WHERE key = ?',
        [key],
      );
      expect(audit).toEqual([{ resolved_as: 'failed', actor: 'bob', prior_state: 'DISPATCHED' }]);
      expect(executions(db.dir, key)).toBe(0);
    });

    it('refuses to resolve a missing, live, or settled record, and one without a reason', async () => {
      const missing = nextKey();
      await expect(ledger.resolve(missing, { as: 'failed', actor: 'a', reason: 'r' })).rejects.toThrow(
        `Cannot resolve "${missing}": no such ledger record.`,
      );
      const live = nextKey();
      await ledger.claim({ ...base, key: live });
      const err = await ledger
        .resolve(live, { as: 'failed', actor: 'a', reason: 'r' })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(LedgerStateError);
      expect(err).toMatchObject({ key: live, state: LedgerState.CLAIMED });
      const unknown = nextKey();
      await deadDispatch(unknown);
      await expect(ledger.resolve(unknown, { as: 'failed', actor: 'a', reason: '  ' })).rejects.toThrow(
        /reason/,
      );
      expect(await ledger.get(unknown)).toMatchObject({ state: LedgerState.DISPATCHED, resolution: null });
    });
  });

  describe('retention and listing', () => {
    it('reaps old SUCCEEDED and FAILED_FINAL records and never touches CLAIMED, DISPATCHED or UNKNOWN', async () => {
      const keys = {
        ok: nextKey(),
        failed: nextKey(),
        fresh: nextKey(),
        claimed: nextKey(),
        dispatched: nextKey(),
        unknown: nextKey(),
      };
      await executeOnce(ledger, { ...base, key: keys.ok }, effect(keys.ok));
      await executeOnce(ledger, { ...base, key: keys.fresh }, effect(keys.fresh));
      await executeOnce(ledger, { ...base, key: keys.failed, classifyError: () => 'final' }, async () => {
        throw new Error('no');
      });
      await ledger.claim({ ...base, key: keys.claimed });
      const d = await ledger.claim({ ...base, key: keys.dispatched });
      if (d.kind === 'claimed') await ledger.dispatch(keys.dispatched, d.token);
      const u = await ledger.claim({ ...base, key: keys.unknown });
      if (u.kind === 'claimed') await ledger.dispatch(keys.unknown, u.token);
      await db.expireLease(keys.unknown);
      expect((await ledger.claim({ ...base, key: keys.unknown })).kind).toBe('unknown');
      const day = 24 * 3600_000;
      for (const k of [keys.ok, keys.failed, keys.unknown]) await db.ageFinished(k, 80 * 3600_000);
      await db.exec(
        backend === 'sqlite'
          ? 'UPDATE ledger_records SET created_at = created_at - ?, updated_at = updated_at - ? WHERE key IN (?, ?)'
          : "UPDATE ledger_records SET created_at = created_at - (?::float8 * interval '1 ms'), updated_at = updated_at - (?::float8 * interval '1 ms') WHERE key IN (?, ?)",
        [10 * day, 10 * day, keys.claimed, keys.dispatched],
      );
      const removed = await ledger.reap(72 * 3600_000);
      expect(removed).toBe(2);
      expect(await ledger.get(keys.ok)).toBeNull();
      expect(await ledger.get(keys.failed)).toBeNull();
      for (const k of [keys.fresh, keys.claimed, keys.dispatched, keys.unknown])
        expect(await ledger.get(k)).not.toBeNull();
      expect(await ledger.reap(0)).toBeGreaterThanOrEqual(1);
      expect(await ledger.get(keys.fresh)).toBeNull();
      expect(await ledger.get(keys.claimed)).toMatchObject({ state: LedgerState.CLAIMED });
      expect(await ledger.get(keys.dispatched)).toMatchObject({ state: LedgerState.DISPATCHED });
      expect(await ledger.get(keys.unknown)).toMatchObject({ state: LedgerState.UNKNOWN });
      expect(executions(db.dir, keys.ok) + executions(db.dir, keys.fresh)).toBe(2);
    });

    it('lists records by state, newest first', async () => {
      const key = nextKey();
      await ledger.claim({ ...base, key });
      const claimed = await ledger.list({ state: LedgerState.CLAIMED, limit: 50 });
      expect(claimed.every((r) => r.state === LedgerState.CLAIMED)).toBe(true);
      expect(claimed.map((r) => r.key)).toContain(key);
      expect((await ledger.list({ limit: 1 })).length).toBe(1);
      expect(executions(db.dir, key)).toBe(0);
    });

    it('refuses a negative or non-finite reap TTL', async () => {
      await expect(ledger.reap(-1)).rejects.toThrow('reap TTL must be >= 0 ms, got -1');
      await expect(ledger.reap(Number.NaN)).rejects.toThrow(TypeError);
    });
  });

  describe('atomic business writes (commitWith)', () => {
    beforeAll(async () => {
      await db.exec('CREATE TABLE IF NOT EXISTS world_notes (id TEXT PRIMARY KEY, body TEXT NOT NULL)');
    });

    it('stores the business write and SUCCEEDED together, once', async () => {
      const key = nextKey();
      const first = await executeOnceAtomic(ledger, { ...base, key }, async (tx) => {
        bump(db.dir, key);
        await tx.run('INSERT INTO world_notes (id, body) VALUES (?, ?)', [key, 'hello']);
        return (await tx.get<{ body: string }>('SELECT body FROM world_notes WHERE id = ?', [key]))?.body;
      });
      expect(first).toEqual({ kind: 'executed', key, result: 'hello' });
      const again = await executeOnceAtomic(ledger, { ...base, key }, async (tx) => {
        bump(db.dir, key);
        await tx.run('INSERT INTO world_notes (id, body) VALUES (?, ?)', [key, 'again']);
        return 'again';
      });
      expect(again).toMatchObject({ kind: 'cached', result: 'hello' });
      expect(await db.exec('SELECT body FROM world_notes WHERE id = ?', [key])).toEqual([{ body: 'hello' }]);
      expect(executions(db.dir, key)).toBe(1);
    });

    it('rolls the business write back with a failed commit and releases the claim', async () => {
      const key = nextKey();
      const failed = await executeOnceAtomic(ledger, { ...base, key }, async (tx) => {
        await tx.run('INSERT INTO world_notes (id, body) VALUES (?, ?)', [key, 'half']);
        throw new Error('constraint violated downstream');
      });
      expect(failed.kind).toBe('failed_retryable');
      expect(await db.exec('SELECT body FROM world_notes WHERE id = ?', [key])).toEqual([]);
      expect(await ledger.get(key)).toBeNull();
      const retry = await executeOnceAtomic(ledger, { ...base, key }, async (tx) => {
        bump(db.dir, key);
        await tx.run('INSERT INTO world_notes (id, body) VALUES (?, ?)', [key, 'whole']);
        return 'whole';
      });
      expect(retry.kind).toBe('executed');
      expect(executions(db.dir, key)).toBe(1);
    });

    it('refuses a stale token before running the business write', async () => {
      const key = nextKey();
      const a = await ledger.claim({ ...base, key });
      if (a.kind !== 'claimed') throw new Error('must claim');
      await db.expireLease(key);
      await ledger.claim({ ...base, key, owner: 'B' });
      let ran = false;
      await expect(
        ledger.commitWith(key, a.token, () => {
          ran = true;
        }),
      ).rejects.toThrow(StaleTokenError);
      expect(ran).toBe(false);
      expect(executions(db.dir, key)).toBe(0);
    });
  });

  describe('several connections in one process', () => {
    it('interleave claims and commits without waiting on each other, each key once', async () => {
      // On SQLite a unit of work that yielded mid-transaction would block the other
      // connections' BEGIN IMMEDIATE in the busy handler (10 s) and fail "database is locked".
      const ledgers = [ledger, ...(await Promise.all([db.open(), db.open(), db.open()]))];
      const keys = Array.from({ length: 10 }, () => nextKey());
      const started = Date.now();
      const outcomes = await Promise.all(
        ledgers.flatMap((l, i) =>
          keys.map((key) => executeOnce(l, { ...base, key, owner: `c${i}` }, effect(key))),
        ),
      );
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(outcomes.filter((o) => o.kind === 'executed')).toHaveLength(keys.length);
      expect(outcomes.every((o) => ['executed', 'in_progress', 'cached'].includes(o.kind))).toBe(true);
      for (const key of keys) expect(executions(db.dir, key)).toBe(1);
    });
  });

  describe('migrations', () => {
    it('migrates once however many workers migrate at the same time', async () => {
      const others = await Promise.all([db.open(), db.open(), db.open()]);
      await Promise.all([ledger, ...others].map((l) => l.migrate()));
      expect(await db.exec('SELECT version, name FROM ledger_migrations')).toEqual([
        { version: 1, name: expect.stringContaining('create ledger records') },
        { version: 2, name: expect.stringContaining('approvals') },
        { version: 3, name: expect.stringContaining('signature') },
        { version: 4, name: expect.stringContaining('conversation store') },
        { version: 5, name: expect.stringContaining('approval uses') },
        { version: 6, name: expect.stringContaining('progress facts') },
        { version: 7, name: expect.stringContaining('tenant spend') },
        { version: 8, name: expect.stringContaining('paged-out trace') },
        { version: 9, name: expect.stringContaining("ledger records' run") },
        { version: 10, name: expect.stringContaining('submitted') },
        { version: 11, name: expect.stringContaining('served model usage') },
        { version: 12, name: expect.stringContaining('progress versions') },
      ]);
      // Records written before survive a re-migration.
      const key = nextKey();
      await executeOnce(ledger, { ...base, key }, effect(key));
      await ledger.migrate();
      expect(await ledger.get(key)).toMatchObject({ state: LedgerState.SUCCEEDED });
    });

    it("finds one run's records through an index, not a scan of the ledger (migration 9)", async () => {
      if (backend === 'sqlite') {
        const plan = await db.exec(
          'EXPLAIN QUERY PLAN SELECT key FROM ledger_records WHERE run_id = ? ORDER BY updated_at DESC, key LIMIT 100',
          ['run-a'],
        );
        const detail = plan.map((r) => String(r.detail)).join(' | ');
        expect(detail).toContain('ledger_records_run');
        expect(detail).not.toMatch(/SCAN ledger_records(?! USING)/);
      } else {
        // This test's own schema only: the shared database may hold the project's tables in
        // `public` as well (a worker, a bench or the chaos run pointed LEDGER_URL at it).
        const rows = await db.exec(
          "SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() AND indexname = 'ledger_records_run'",
        );
        expect(rows).toHaveLength(1);
        expect(String(rows[0]!.indexdef)).toMatch(/ON \S*ledger_records USING btree \(run_id, updated_at\)/);
      }
    });

    it('refuses a schema migrated by a newer release', async () => {
      const newer = await createTestDb(backend);
      try {
        await newer.open();
        await newer.exec(
          backend === 'sqlite'
            ? "INSERT INTO ledger_migrations (version, name, applied_at) VALUES (99, 'future', 0)"
            : "INSERT INTO ledger_migrations (version, name, applied_at) VALUES (99, 'future', now())",
        );
        const err = await openLedger(newer.url).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(LedgerConnectionError);
        expect((err as Error).message).toMatch(
          /migration\(s\) 99 unknown to this release \(newest known: 12\)/,
        );
      } finally {
        await newer.cleanup();
      }
    });
  });
});
