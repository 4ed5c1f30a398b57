/**
 * LEDGER_URL query parameters of the PostgreSQL ledger: pool size and timeouts are the
 * ledger's own (taken out before `pg` sees the URL), libpq parameters pass through, and a
 * parameter that is neither is a clear error instead of a silently ignored typo.
 */
import crypto from 'node:crypto';
import { Client } from 'pg';
import { LedgerConnectionError, openLedger, type Ledger } from '../../storage/ledger';
import { parsePostgresUrl } from '../../storage/ledger/postgres-ledger';
import { createTestDb, TEST_PG_URL, type TestDb } from './helpers/backends';

describe('parsePostgresUrl', () => {
  const base = 'postgres://alice:pw@db.example:5432/agents';

  it('takes the ledger parameters out of the URL and maps them to pool settings', () => {
    const { connectionString, options } = parsePostgresUrl(
      `${base}?schema=ledger&pool_max=20&connect_timeout_ms=5000&idle_timeout_ms=30000&statement_timeout_ms=10000`,
    );
    expect(connectionString).toBe(base);
    expect(options).toEqual({
      schema: 'ledger',
      maxConnections: 20,
      pool: { connectionTimeoutMillis: 5000, idleTimeoutMillis: 30000, statement_timeout: 10000 },
    });
  });

  it('keeps libpq parameters for pg and defaults the connect timeout to 10 s', () => {
    const { connectionString, options } = parsePostgresUrl(`${base}?sslmode=require&application_name=w1`);
    expect(new URL(connectionString).searchParams.get('sslmode')).toBe('require');
    expect(new URL(connectionString).searchParams.get('application_name')).toBe('w1');
    expect(options).toEqual({ pool: { connectionTimeoutMillis: 10_000 } });
  });

  it('names an unknown parameter and lists the known ones', () => {
    expect(() => parsePostgresUrl(`${base}?poolmax=20`)).toThrow(
      /unknown LEDGER_URL parameter "poolmax" \(the ledger's: schema, pool_max, connect_timeout_ms/,
    );
  });

  it.each([
    ['pool_max=0', /pool_max must be an integer >= 1, got "0"/],
    ['pool_max=ten', /pool_max must be an integer >= 1/],
    ['connect_timeout_ms=-1', /connect_timeout_ms must be an integer number of ms >= 0, got "-1"/],
    ['statement_timeout_ms=1.5', /statement_timeout_ms must be an integer/],
    ['idle_timeout_ms=', /idle_timeout_ms must be an integer/],
  ])('rejects %s', (query, message) => {
    expect(() => parsePostgresUrl(`${base}?${query}`)).toThrow(message);
  });

  it('openLedger turns a bad parameter into a LedgerConnectionError without the password', async () => {
    const err = await openLedger(`${base}?pool_max=abc`).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LedgerConnectionError);
    expect((err as Error).message).toContain('pool_max must be an integer');
    expect((err as Error).message).not.toContain(':pw@');
  });
});

describe('PostgreSQL ledger with URL parameters (real server)', () => {
  let db: TestDb;
  let admin: Client;
  const opened: Ledger[] = [];
  beforeAll(async () => {
    db = await createTestDb('postgres');
    admin = new Client({ connectionString: TEST_PG_URL });
    await admin.connect();
  });
  afterAll(async () => {
    await Promise.all(opened.map((l) => l.close().catch(() => undefined)));
    await admin?.end();
    await db?.cleanup();
  });

  const claim = (ledger: Ledger, key: string) =>
    ledger.claim({ key, tool: 'pay', argsHash: 'h', runId: 'r', owner: 'w', leaseMs: 60_000 });

  it('statement_timeout_ms makes the server cancel a claim stuck behind a row lock', async () => {
    const appName = `alg-url-${crypto.randomBytes(4).toString('hex')}`;
    const url = new URL(db.url);
    url.searchParams.set('statement_timeout_ms', '300');
    url.searchParams.set('pool_max', '2');
    url.searchParams.set('application_name', appName);
    const ledger = await openLedger(url.toString());
    opened.push(ledger);
    const key = `k-${crypto.randomUUID()}`;
    expect((await claim(ledger, key)).kind).toBe('claimed');

    // The pass-through parameter reached the server: the pool's sessions carry its name.
    const sessions = await admin.query(
      'SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1',
      [appName],
    );
    expect(sessions.rows[0].n).toBeGreaterThanOrEqual(1);

    // Another session holds the record's row lock; the second claim must read it FOR UPDATE.
    const schema = url.searchParams.get('schema');
    const locker = new Client({ connectionString: TEST_PG_URL });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query(`SELECT 1 FROM ${schema}.ledger_records WHERE key = $1 FOR UPDATE`, [key]);
      const err = await claim(ledger, key).catch((e: unknown) => e);
      expect(String((err as Error).message)).toMatch(/statement timeout/);
    } finally {
      await locker.query('ROLLBACK').catch(() => undefined);
      await locker.end();
    }
    // The pool recovered: the same ledger answers once the lock is gone.
    expect((await claim(ledger, key)).kind).not.toBe('claimed');
  });
});
