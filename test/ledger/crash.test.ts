import { executeOnce, executeOnceAtomic, LedgerState, type Ledger } from '../../storage/ledger';
import { backendNames, createTestDb, type TestDb } from './helpers/backends';
import { bump, executions } from './helpers/counter';
import { runFixture, sleep } from './helpers/spawn';

const LEASE_MS = 800;
const base = {
  tool: 'charge_card',
  argsHash: 'h1',
  runId: 'run-after-crash',
  owner: 'survivor',
  leaseMs: LEASE_MS,
};

describe.each(backendNames)('crash recovery on %s (real child processes, SIGKILL)', (backend) => {
  let db: TestDb;
  let ledger: Ledger;

  beforeAll(async () => {
    db = await createTestDb(backend);
    ledger = await db.open();
    await db.exec('CREATE TABLE world_accounts (id TEXT PRIMARY KEY, balance INTEGER NOT NULL)');
    await db.exec("INSERT INTO world_accounts (id, balance) VALUES ('acct-1', 100)");
  });
  afterAll(async () => db.cleanup());

  const crash = async (key: string, mode: string) => {
    const child = await runFixture('crash-worker.ts', {
      url: db.url,
      key,
      dir: db.dir,
      mode,
      leaseMs: LEASE_MS,
    });
    expect({ signal: child.signal, stderr: child.stderr }).toEqual({ signal: 'SIGKILL', stderr: '' });
  };
  const effect = (key: string) => async () => {
    bump(db.dir, key);
    return { chargeId: `ch_${key}` };
  };

  it('does not re-execute after SIGKILL between side effect and commit: UNKNOWN, needs a human', async () => {
    const key = 'crash-after-effect';
    await crash(key, 'after-side-effect');
    expect(executions(db.dir, key)).toBe(1);
    expect((await executeOnce(ledger, { ...base, key }, effect(key))).kind).toBe('in_progress');
    await sleep(LEASE_MS + 150);
    const after = await executeOnce(ledger, { ...base, key }, effect(key));
    expect(after).toMatchObject({ kind: 'unknown', key, record: { state: LedgerState.UNKNOWN, key } });
    expect((await executeOnce(ledger, { ...base, key, owner: 'another' }, effect(key))).kind).toBe('unknown');
    expect(executions(db.dir, key)).toBe(1);
    expect((await ledger.get(key))?.dispatchedAt).not.toBeNull();
  });

  it('re-executes a vendor-idempotent tool with the same key after SIGKILL post-dispatch', async () => {
    const key = 'crash-vendor-idempotent';
    await crash(key, 'after-side-effect');
    await sleep(LEASE_MS + 150);
    const vendorKeys: string[] = [];
    const outcome = await executeOnce(ledger, { ...base, key, vendorIdempotent: true }, async (ctx) => {
      vendorKeys.push(ctx.key);
      expect(ctx.reExecution).toBe(true);
      bump(db.dir, key);
      return { chargeId: 'ch_same' };
    });
    expect(outcome).toMatchObject({ kind: 'executed', result: { chargeId: 'ch_same' } });
    expect(vendorKeys).toEqual([key]);
    expect(executions(db.dir, key)).toBe(2);
    expect((await executeOnce(ledger, { ...base, key, vendorIdempotent: true }, effect(key))).kind).toBe(
      'cached',
    );
    expect(executions(db.dir, key)).toBe(2);
  });

  it('settles a SIGKILLed dispatch through the tool reconcile lookup instead of UNKNOWN', async () => {
    const key = 'crash-reconcile';
    await crash(key, 'after-side-effect');
    await sleep(LEASE_MS + 150);
    const asked: string[] = [];
    const reconcile = async (k: string) => {
      asked.push(k);
      return { status: 'succeeded' as const, result: { chargeId: 'ch_found' } };
    };
    const outcome = await executeOnce(ledger, { ...base, key, reconcile }, effect(key));
    expect(outcome).toEqual({ kind: 'cached', key, result: { chargeId: 'ch_found' }, source: 'reconcile' });
    expect(asked).toEqual([key]);
    expect(await ledger.get(key)).toMatchObject({ state: LedgerState.SUCCEEDED });
    expect(executions(db.dir, key)).toBe(1);
  });

  it('executes exactly once later after SIGKILL before dispatch', async () => {
    const key = 'crash-before-dispatch';
    await crash(key, 'before-dispatch');
    expect((await executeOnce(ledger, { ...base, key }, effect(key))).kind).toBe('in_progress');
    await sleep(LEASE_MS + 150);
    const others = await Promise.all([db.open(), db.open(), db.open()]);
    const outcomes = await Promise.all(
      [ledger, ...others].map((l, i) => executeOnce(l, { ...base, key, owner: `w${i}` }, effect(key))),
    );
    expect(outcomes.filter((o) => o.kind === 'executed')).toHaveLength(1);
    expect(
      outcomes.every((o) => o.kind === 'executed' || o.kind === 'in_progress' || o.kind === 'cached'),
    ).toBe(true);
    expect(await ledger.get(key)).toMatchObject({ state: LedgerState.SUCCEEDED, attempts: 2 });
    expect(executions(db.dir, key)).toBe(1);
  });

  it('loses nothing and doubles nothing when killed inside the atomic business-write transaction', async () => {
    const key = 'crash-atomic';
    await crash(key, 'atomic-mid-transaction');
    expect(await db.exec("SELECT balance FROM world_accounts WHERE id = 'acct-1'")).toEqual([
      { balance: 100 },
    ]);
    await sleep(LEASE_MS + 150);
    const debit = async (tx: Parameters<Parameters<typeof executeOnceAtomic>[2]>[0]) => {
      bump(db.dir, key);
      await tx.run('UPDATE world_accounts SET balance = balance - 10 WHERE id = ?', ['acct-1']);
      return 'debited';
    };
    expect((await executeOnceAtomic(ledger, { ...base, key }, debit)).kind).toBe('executed');
    expect((await executeOnceAtomic(ledger, { ...base, key }, debit)).kind).toBe('cached');
    expect(await db.exec("SELECT balance FROM world_accounts WHERE id = 'acct-1'")).toEqual([
      { balance: 90 },
    ]);
    expect(executions(db.dir, key)).toBe(1);
  });

  it('returns the stored result with zero calls after a whole-stack restart', async () => {
    const key = 'restart';
    const child = await runFixture('crash-worker.ts', {
      url: db.url,
      key,
      dir: db.dir,
      mode: 'complete',
      leaseMs: 5_000,
    });
    expect(child.code).toBe(0);
    expect(JSON.parse(child.stdout)).toMatchObject({ kind: 'executed' });
    await ledger.close();
    ledger = await db.open();
    const outcome = await executeOnce(ledger, { ...base, key }, effect(key));
    expect(outcome).toEqual({ kind: 'cached', key, result: { chargeId: `ch_${key}` }, source: 'ledger' });
    expect(executions(db.dir, key)).toBe(1);
  });
});
