import {
  executeOnce,
  executeOnceAtomic,
  LedgerConflictError,
  LedgerState,
  LedgerStateError,
  SideEffectErrorClass,
  StaleTokenError,
  type Ledger,
} from '../../activities/ledger';
import { backendNames, createTestDb, type TestDb } from './helpers/backends';
import { bump, executions } from './helpers/counter';

const base = { tool: 'charge_card', argsHash: 'h1', runId: 'run-1', owner: 'w1', leaseMs: 5_000 };

describe.each(backendNames)('ledger semantics on %s', (backend) => {
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

  beforeAll(async () => {
    db = await createTestDb(backend);
    ledger = await db.open();
  });
  afterAll(async () => db.cleanup());

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
    expect(first).toMatchObject({ kind: 'failed_final', replayed: false, error: { code: 'card_declined' } });
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
    await expect(ledger.resolve(key, { as: 'succeeded', actor: ' ', reason: 'r' })).rejects.toThrow(/actor/);
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
});
