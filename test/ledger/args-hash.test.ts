/**
 * The ledger's args hash is SHA-256 of the canonical call (docs/spec.md §8): its conflict
 * check no longer rests on the guard's 64-bit fingerprint, and rows written before the
 * upgrade (fingerprint as args hash) still answer a call with that fingerprint. On both
 * backends; every case counts the side effect's real executions.
 */
import {
  executeOnce,
  isSha256ArgsHash,
  LedgerConflictError,
  sha256ArgsHash,
  type Ledger,
} from '../../storage/ledger';
import { backendNames, createTestDb, type TestDb } from './helpers/backends';
import { bump, executions } from './helpers/counter';

describe('sha256ArgsHash', () => {
  it('hashes the canonical form, so key order and surrounding white space do not matter', () => {
    const a = sha256ArgsHash('send', { to: ' +1 ', text: 'hi' } as never);
    expect(a).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(sha256ArgsHash('send', { text: 'hi', to: '+1' })).toBe(a);
    expect(isSha256ArgsHash(a)).toBe(true);
    expect(isSha256ArgsHash('send:0123456789abcdef')).toBe(false);
  });

  it('includes the tool name and every semantic value', () => {
    const a = sha256ArgsHash('send', { to: '+1' });
    expect(sha256ArgsHash('sendx', { to: '+1' })).not.toBe(a);
    expect(sha256ArgsHash('send', { to: '+2' })).not.toBe(a);
    // An injective text: the tool name cannot leak into the args.
    expect(sha256ArgsHash('a', { b: 1 })).not.toBe(sha256ArgsHash('a","b', { b: 1 }));
  });
});

describe.each(backendNames)('ledger args hash on %s', (backend) => {
  let db: TestDb;
  let ledger: Ledger;
  let n = 0;
  const nextKey = () => `ah-${backend}-${++n}`;
  const base = { tool: 'send', runId: 'run-1', owner: 'w1', leaseMs: 5_000 };
  // Two different arg sets whose 64-bit fingerprints collide (constructed: the ledger is
  // handed the same fingerprint for both, as a real collision would).
  const fingerprint = 'send:00000000deadbeef';
  const hashA = sha256ArgsHash('send', { text: 'A' });
  const hashB = sha256ArgsHash('send', { text: 'B' });
  const effect = (key: string) => async () => {
    bump(db.dir, key);
    return { sent: key };
  };

  beforeAll(async () => {
    db = await createTestDb(backend);
    ledger = await db.open();
  });
  afterAll(async () => {
    await db?.cleanup();
  });

  it('tells two arg sets apart by SHA-256 although their fingerprints collide; the second never runs', async () => {
    const key = nextKey();
    const opts = { ...base, key, argsHash: hashA, legacyArgsHash: fingerprint };
    expect((await executeOnce(ledger, opts, effect(key))).kind).toBe('executed');
    const other = await executeOnce(ledger, { ...opts, argsHash: hashB }, effect(key));
    expect(other.kind).toBe('conflict');
    expect(other.kind === 'conflict' && other.error).toBeInstanceOf(LedgerConflictError);
    expect(other.kind === 'conflict' && other.error.storedArgsHash).toBe(hashA);
    expect(executions(db.dir, key)).toBe(1);
    expect((await ledger.get(key))?.argsHash).toBe(hashA);
    // The same call again is the cached result, zero executions.
    expect((await executeOnce(ledger, opts, effect(key))).kind).toBe('cached');
    expect(executions(db.dir, key)).toBe(1);
  });

  it('answers a call from a pre-upgrade row that stored its fingerprint, without running it', async () => {
    const key = nextKey();
    // What the code before the upgrade wrote: the fingerprint as args hash.
    expect((await executeOnce(ledger, { ...base, key, argsHash: fingerprint }, effect(key))).kind).toBe(
      'executed',
    );
    const now = await executeOnce(
      ledger,
      { ...base, key, argsHash: hashA, legacyArgsHash: fingerprint },
      effect(key),
    );
    expect(now).toMatchObject({ kind: 'cached', result: { sent: key } });
    expect(executions(db.dir, key)).toBe(1);
    // The row is not rewritten: the protocol stays read-decide, and the legacy match is exact.
    expect((await ledger.get(key))?.argsHash).toBe(fingerprint);
  });

  it('refuses a pre-upgrade row with another fingerprint as a conflict', async () => {
    const key = nextKey();
    await executeOnce(ledger, { ...base, key, argsHash: 'send:1111111111111111' }, effect(key));
    const now = await executeOnce(
      ledger,
      { ...base, key, argsHash: hashA, legacyArgsHash: fingerprint },
      effect(key),
    );
    expect(now.kind).toBe('conflict');
    expect(executions(db.dir, key)).toBe(1);
  });

  it('never matches a SHA-256 row through the legacy fingerprint', async () => {
    const key = nextKey();
    await executeOnce(ledger, { ...base, key, argsHash: hashA }, effect(key));
    // A call whose legacy hash happens to be the stored SHA-256 text still has to agree on SHA-256.
    await expect(ledger.claim({ ...base, key, argsHash: hashB, legacyArgsHash: hashA })).rejects.toThrow(
      LedgerConflictError,
    );
    expect(executions(db.dir, key)).toBe(1);
  });

  it('refuses an empty legacyArgsHash with a message naming the field', async () => {
    await expect(
      ledger.claim({ ...base, key: nextKey(), argsHash: hashA, legacyArgsHash: '' }),
    ).rejects.toThrow('"legacyArgsHash" must be a non-empty string');
  });
});
