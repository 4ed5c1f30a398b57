/**
 * A lost commit after a successful side effect (docs/ledger.md "Commit retry"): the ledger's
 * PostgreSQL database becomes unreachable right after the side effect ran, for real — a
 * dedicated database closed with `ALLOW_CONNECTIONS false` and its backends terminated, or
 * the ledger's role locked out — and the commit is retried with the same fencing token while
 * the lease is provably ours. A retry never overwrites an executor that took over.
 */
import crypto from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from 'pg';
import {
  executeOnce,
  ExpiredDispatchPolicy,
  isTransientDatabaseError,
  LedgerState,
  openLedger,
  StaleTokenError,
  type CommitRetry,
  type Ledger,
} from '../../storage/ledger';
import { TEST_PG_URL } from './helpers/backends';

const name = `commit_retry_${crypto.randomBytes(5).toString('hex')}`;
const base = { tool: 'charge_card', argsHash: 'sha256:h1', runId: 'run-commit-retry', owner: 'ours' };

/** PostgreSQL URL of the dedicated database, as `user`. */
function dbUrl(user: string): string {
  const u = new URL(TEST_PG_URL);
  u.username = user;
  u.pathname = `/${name}`;
  u.search = '';
  return u.toString();
}

describe('commit retry with the same fencing token (real PostgreSQL outage)', () => {
  let admin: Client;
  /** Connects as the database's own role (the one the role outage locks out). */
  let ours: Ledger;
  /** Another executor, as the superuser. */
  let other: Ledger;
  const effects = new Map<string, number>();
  const effect = (key: string) => effects.set(key, (effects.get(key) ?? 0) + 1);

  const sql = (text: string) => admin.query(text);
  /** Nobody can connect to the database; every open connection to it is terminated. */
  const closeDatabase = async () => {
    await sql(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
    await sql(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${name}'`);
  };
  const openDatabase = () => sql(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`);
  /** Only our role is locked out (the other executor still reaches the database). */
  const lockOutOurRole = async () => {
    await sql(`ALTER ROLE ${name} NOLOGIN`);
    await sql(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '${name}'`);
  };
  const letOurRoleIn = () => sql(`ALTER ROLE ${name} LOGIN`);
  /** Polls the database clock until the lease of `key` has expired. */
  const untilLeaseExpired = async (key: string) => {
    while (((await other.get(key))?.leaseRemainingMs ?? 0) >= 0) await sleep(50);
  };

  beforeAll(async () => {
    admin = new Client({ connectionString: TEST_PG_URL });
    await admin.connect();
    await sql(`CREATE ROLE ${name} LOGIN`);
    await sql(`CREATE DATABASE ${name} OWNER ${name}`);
    ours = await openLedger(dbUrl(name));
    other = await openLedger(dbUrl(new URL(TEST_PG_URL).username || 'postgres'), { migrate: false });
  });
  afterAll(async () => {
    await ours?.close().catch(() => undefined);
    await other?.close().catch(() => undefined);
    await sql(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined);
    await sql(`DROP ROLE IF EXISTS ${name}`).catch(() => undefined);
    await admin?.end();
  });

  it('a commit refused while the database is closed is retried with the same token and lands: SUCCEEDED, one execution', async () => {
    const key = 'cr-outage';
    const retries: CommitRetry[] = [];
    let token = -1;
    let reopened: Promise<unknown> | null = null;
    const outcome = await executeOnce(
      ours,
      {
        ...base,
        key,
        leaseMs: 20_000,
        onCommitRetry: (r) => {
          retries.push(r);
          // Two refused commits are proof enough; the outage ends while the lease is ours.
          if (retries.length === 2) reopened = openDatabase();
        },
      },
      async (ctx) => {
        token = ctx.token;
        effect(key);
        await closeDatabase();
        return { chargeId: 'ch_1' };
      },
    );
    await reopened;
    expect(outcome).toEqual({ kind: 'executed', key, result: { chargeId: 'ch_1' } });
    expect(retries.length).toBeGreaterThanOrEqual(2);
    expect(retries.map((r) => r.attempt).slice(0, 2)).toEqual([1, 2]);
    // The real driver errors of a closed database, every one of them classified transient.
    expect(retries.every((r) => isTransientDatabaseError(r.error))).toBe(true);
    expect(retries.map((r) => (r.error as Error).message).join('\n')).toMatch(
      /not currently accepting connections|terminat/i,
    );
    const rec = await ours.get(key);
    expect(rec).toMatchObject({ state: LedgerState.SUCCEEDED, token, result: { chargeId: 'ch_1' } });
    expect(effects.get(key)).toBe(1);
    // A duplicate is answered from the ledger: the counter does not move.
    const again = await executeOnce(ours, { ...base, key, owner: 'dup', leaseMs: 20_000 }, async () => {
      effect(key);
      return { chargeId: 'ch_2' };
    });
    expect(again).toMatchObject({ kind: 'cached', result: { chargeId: 'ch_1' } });
    expect(effects.get(key)).toBe(1);
  });

  it('gives up once the lease can no longer be proven ours: DISPATCHED, then UNKNOWN, never a second execution', async () => {
    const key = 'cr-too-long';
    const retries: CommitRetry[] = [];
    const leaseMs = 1_000;
    const run = executeOnce(
      ours,
      { ...base, key, leaseMs, onCommitRetry: (r) => retries.push(r) },
      async () => {
        effect(key);
        await closeDatabase();
        return { chargeId: 'ch_long' };
      },
    );
    let thrown: unknown;
    try {
      await run;
    } catch (err) {
      thrown = err;
    } finally {
      await openDatabase();
    }
    expect(isTransientDatabaseError(thrown)).toBe(true);
    expect(retries.length).toBeGreaterThanOrEqual(1);
    expect(Math.max(...retries.map((r) => r.leaseLeftMs))).toBeLessThanOrEqual(leaseMs);
    expect(await ours.get(key)).toMatchObject({ state: LedgerState.DISPATCHED, result: null });
    await untilLeaseExpired(key);
    const after = await executeOnce(ours, { ...base, key, owner: 'next', leaseMs }, async () => {
      effect(key);
      return { chargeId: 'ch_dup' };
    });
    expect(after).toMatchObject({ kind: 'unknown', record: { state: LedgerState.UNKNOWN } });
    expect(effects.get(key)).toBe(1);
  });

  it('a commit after the lease was lost to a higher token is rejected with StaleTokenError and overwrites nothing', async () => {
    const key = 'cr-stale';
    const leaseMs = 800;
    let ourToken = -1;
    let theirToken = -1;
    const outcome = await executeOnce(ours, { ...base, key, leaseMs }, async (ctx) => {
      ourToken = ctx.token;
      effect(key);
      // We cannot renew; our lease runs out in database time and another executor takes over.
      await lockOutOurRole();
      await untilLeaseExpired(key);
      const c = await other.claim({
        ...base,
        key,
        owner: 'other',
        leaseMs: 60_000,
        expiredDispatch: ExpiredDispatchPolicy.TAKEOVER,
      });
      expect(c).toMatchObject({ kind: 'claimed', takenOverFrom: LedgerState.DISPATCHED });
      theirToken = (c as { token: number }).token;
      await letOurRoleIn();
      return { chargeId: 'ch_ours' };
    });
    expect(theirToken).toBeGreaterThan(ourToken);
    // Our commit was refused: the record is theirs, still DISPATCHED, without our result.
    expect(outcome).toMatchObject({ kind: 'in_progress', key });
    expect(await other.get(key)).toMatchObject({
      state: LedgerState.DISPATCHED,
      token: theirToken,
      owner: 'other',
      result: null,
    });
    await expect(ours.commit(key, ourToken, { chargeId: 'ch_ours' })).rejects.toBeInstanceOf(StaleTokenError);
    expect((await other.get(key))?.token).toBe(theirToken);
    expect(effects.get(key)).toBe(1);
  });

  it('a retry that finds its own earlier commit landed (the answer was lost) reports executed', async () => {
    const key = 'cr-lost-answer';
    // The one injected fault: the real commit lands, then its answer is lost as a reset would lose it.
    let first = true;
    const lossy: Ledger = Object.create(ours, {
      commit: {
        value: async (k: string, t: number, r: unknown) => {
          await ours.commit(k, t, r);
          if (first) {
            first = false;
            throw Object.assign(new Error('Connection terminated unexpectedly'), { code: 'ECONNRESET' });
          }
        },
      },
    }) as Ledger;
    const retries: CommitRetry[] = [];
    const outcome = await executeOnce(
      lossy,
      { ...base, key, leaseMs: 5_000, onCommitRetry: (r) => retries.push(r) },
      async () => {
        effect(key);
        return { chargeId: 'ch_lost' };
      },
    );
    expect(outcome).toEqual({ kind: 'executed', key, result: { chargeId: 'ch_lost' } });
    expect(retries).toHaveLength(1);
    expect(await ours.get(key)).toMatchObject({
      state: LedgerState.SUCCEEDED,
      result: { chargeId: 'ch_lost' },
    });
    expect(effects.get(key)).toBe(1);
  });

  it('a commit error that is not an outage is not retried', async () => {
    const key = 'cr-not-transient';
    const retries: CommitRetry[] = [];
    // A BigInt cannot be stored as JSON: the commit fails the same way every time.
    await expect(
      executeOnce(ours, { ...base, key, leaseMs: 5_000, onCommitRetry: (r) => retries.push(r) }, async () => {
        effect(key);
        return { amount: 1n };
      }),
    ).rejects.toThrow(/BigInt/);
    expect(retries).toHaveLength(0);
    expect(effects.get(key)).toBe(1);
  });
});
