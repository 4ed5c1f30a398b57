import { main } from '../../client/agentctl';
import { LedgerConnectionError, LedgerState, openLedger, redactUrl, type Ledger } from '../../storage/ledger';
import { backendNames, createTestDb, type TestDb } from './helpers/backends';
import { executions } from './helpers/counter';

describe.each(backendNames)('agentctl ledger on %s', (backend) => {
  let db: TestDb;
  let ledger: Ledger;

  beforeAll(async () => {
    db = await createTestDb(backend);
    ledger = await db.open();
  });
  afterAll(async () => db.cleanup());
  /** `agentctl ledger …` in process, through agentctl's own runner (exit codes as a user sees them). */
  async function agentctl(...argv: string[]) {
    let out = '';
    let err = '';
    const code = await main(['ledger', ...argv], {
      env: { LEDGER_URL: db.url },
      io: { out: (t) => void (out += t), err: (t) => void (err += t) },
    });
    return { out, err, code };
  }

  async function unknownRecord(key: string) {
    const c = await ledger.claim({
      key,
      tool: 'pay',
      argsHash: 'h',
      runId: 'run-cli',
      owner: 'w',
      leaseMs: 5_000,
    });
    if (c.kind !== 'claimed') throw new Error('must claim');
    await ledger.dispatch(key, c.token);
    await db.expireLease(key);
    expect(
      (await ledger.claim({ key, tool: 'pay', argsHash: 'h', runId: 'r', owner: 'w2', leaseMs: 1 })).kind,
    ).toBe('unknown');
  }

  it('lists records as a table and as JSON, filtered by state', async () => {
    await unknownRecord('cli-list');
    const table = await agentctl('list');
    expect(table.code).toBe(0);
    expect(table.out).toMatch(/^KEY\s+STATE\s+TOOL/);
    expect(table.out).toMatch(/cli-list\s+UNKNOWN\s+pay/);
    const json = await agentctl('list', '--state', 'UNKNOWN', '--json');
    expect((JSON.parse(json.out) as { key: string }[]).map((r) => r.key)).toContain('cli-list');
    expect((await agentctl('list', '--state', 'NOPE')).code).toBe(2);
    expect(executions(db.dir)).toBe(0);
  });

  it("lists one run's records with --run, every state, and nothing of other runs", async () => {
    for (const key of ['run-a-1', 'run-a-2']) {
      const c = await ledger.claim({
        key,
        tool: 'pay',
        argsHash: 'h',
        runId: 'run-a',
        owner: 'w',
        leaseMs: 5_000,
      });
      if (c.kind !== 'claimed') throw new Error('must claim');
    }
    const other = await ledger.claim({
      key: 'run-b-1',
      tool: 'pay',
      argsHash: 'h',
      runId: 'run-b',
      owner: 'w',
      leaseMs: 5_000,
    });
    expect(other.kind).toBe('claimed');
    const json = await agentctl('list', '--run', 'run-a', '--json');
    expect(json.code).toBe(0);
    const rows = JSON.parse(json.out) as { key: string; runId: string }[];
    expect(rows.map((r) => r.key).sort()).toEqual(['run-a-1', 'run-a-2']);
    expect(rows.every((r) => r.runId === 'run-a')).toBe(true);
    const none = await agentctl('list', '--run', 'run-a', '--state', 'SUCCEEDED', '--json');
    expect(JSON.parse(none.out)).toEqual([]);
    expect(executions(db.dir)).toBe(0);
  });

  it('shows one record and how to settle it, or fails with exit 1 for a missing key', async () => {
    await unknownRecord('cli-show');
    const shown = await agentctl('show', 'cli-show');
    expect(shown.code).toBe(0);
    expect(shown.out).toMatch(/state\s+UNKNOWN/);
    expect(shown.out).toContain('agentctl ledger resolve cli-show');
    expect(JSON.parse((await agentctl('show', 'cli-show', '--json')).out)).toMatchObject({ key: 'cli-show' });
    const missing = await agentctl('show', 'nope');
    expect(missing).toMatchObject({
      code: 1,
      err: expect.stringContaining('no ledger record for key "nope"'),
    });
  });

  it('resolves an UNKNOWN record with actor and reason stored, and refuses bad usage with exit 2', async () => {
    await unknownRecord('cli-resolve');
    expect(
      (await agentctl('resolve', 'cli-resolve', '--as', 'maybe', '--actor', 'a', '--reason', 'r')).code,
    ).toBe(2);
    expect((await agentctl('resolve', 'cli-resolve', '--as', 'succeeded', '--reason', 'r')).code).toBe(2);
    expect(
      (
        await agentctl(
          'resolve',
          'cli-resolve',
          '--as',
          'succeeded',
          '--actor',
          'a',
          '--reason',
          'r',
          '--result',
          '{x',
        )
      ).code,
    ).toBe(2);
    const ok = await agentctl(
      'resolve',
      'cli-resolve',
      '--as',
      'succeeded',
      '--actor',
      'alice',
      '--reason',
      'charge ch_1 visible in dashboard',
      '--result',
      '{"chargeId":"ch_1"}',
    );
    expect(ok).toMatchObject({ code: 0, out: expect.stringContaining('UNKNOWN -> SUCCEEDED by alice') });
    expect(await ledger.get('cli-resolve')).toMatchObject({
      state: LedgerState.SUCCEEDED,
      result: { chargeId: 'ch_1' },
      resolution: { actor: 'alice', reason: 'charge ch_1 visible in dashboard' },
    });
    const again = await agentctl(
      'resolve',
      'cli-resolve',
      '--as',
      'failed',
      '--actor',
      'bob',
      '--reason',
      'r',
    );
    expect(again).toMatchObject({ code: 1, err: expect.stringContaining('Cannot resolve') });
  });

  it('reaps with a TTL in hours', async () => {
    const r = await agentctl('reap', '--ttl-hours', '72', '--json');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out)).toEqual({ removed: 0, ttlHours: 72 });
    expect((await agentctl('reap', '--ttl-hours', 'soon')).code).toBe(2);
  });
});

describe('openLedger', () => {
  it('names the URL with the password redacted and how to fix it for an unknown scheme', async () => {
    await expect(openLedger('mysql://u:hunter2@h/db')).rejects.toThrow(LedgerConnectionError);
    await expect(openLedger('mysql://u:hunter2@h/db')).rejects.toThrow(
      /"mysql:\/\/u:\*\*\*@h\/db".*Set LEDGER_URL/,
    );
  });

  it('fails fast and clearly for an unreachable PostgreSQL', async () => {
    const err = await openLedger('postgres://u:hunter2@127.0.0.1:1/db').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LedgerConnectionError);
    expect((err as Error).message).toContain('postgres://u:***@127.0.0.1:1/db');
    expect((err as Error).message).not.toContain('hunter2');
  });

  it('opens an in-memory SQLite ledger for tests', async () => {
    const l = await openLedger('sqlite::memory:');
    expect(l.backend).toBe('sqlite');
    expect(await l.list()).toEqual([]);
    await l.close();
  });

  it('redacts passwords only', () => {
    expect(redactUrl('postgres://u:p@h:5432/d?schema=s')).toBe('postgres://u:***@h:5432/d?schema=s');
    expect(redactUrl('sqlite:./data/ledger.db')).toBe('sqlite:./data/ledger.db');
  });
});
