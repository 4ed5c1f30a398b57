import { LedgerState } from '../../storage/ledger';
import { backendNames, createTestDb, type TestDb } from './helpers/backends';
import { executions } from './helpers/counter';
import { runFixture } from './helpers/spawn';

const PROCESSES = 5;
const CLAIMERS_PER_PROCESS = 10;

describe.each(backendNames)('concurrent claimers on %s', (backend) => {
  let db: TestDb;

  beforeAll(async () => {
    db = await createTestDb(backend);
    await (await db.open()).migrate();
  });
  afterAll(async () => db.cleanup());

  it('runs the side effect once for 50 concurrent claimers in 5 processes', async () => {
    const key = 'race-1';
    const startAt = Date.now() + 2_500;
    const children = await Promise.all(
      Array.from({ length: PROCESSES }, () =>
        runFixture('claim-race.ts', {
          url: db.url,
          key,
          dir: db.dir,
          claimers: CLAIMERS_PER_PROCESS,
          startAt,
          leaseMs: 10_000,
        }),
      ),
    );
    for (const c of children) expect({ code: c.code, stderr: c.stderr }).toEqual({ code: 0, stderr: '' });
    const kinds = children.flatMap((c) => JSON.parse(c.stdout) as string[]);
    expect(kinds).toHaveLength(PROCESSES * CLAIMERS_PER_PROCESS);
    expect(kinds.filter((k) => k === 'executed')).toHaveLength(1);
    expect(kinds.every((k) => ['executed', 'in_progress', 'cached'].includes(k))).toBe(true);
    expect(executions(db.dir, key)).toBe(1);
    const ledger = await db.open();
    expect(await ledger.get(key)).toMatchObject({ state: LedgerState.SUCCEEDED, attempts: 1 });
  });
});
