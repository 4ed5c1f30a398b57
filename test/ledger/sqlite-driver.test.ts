/**
 * The SQLite driver is Node's built-in `node:sqlite` (storage/sqlite-driver.ts): loading the
 * product's SQLite ledger prints nothing (Node 22's "SQLite is an experimental feature"
 * warning is dropped, every other warning passes), integers stay integers, the busy timeout
 * is the one asked for, and a closed ledger says so.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runInThisContext } from 'node:vm';
import { SqliteLedger } from '../../storage/ledger';
import { openSqlite, type DatabaseSync } from '../../storage/sqlite-driver';

const ROOT = join(__dirname, '..', '..');

/** Runs `script` in a fresh Node (this one), with tsx's hook for the TypeScript sources. */
function node(script: string): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, ['-r', 'tsx/cjs', '-e', script], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('the SQLite driver (node:sqlite)', () => {
  it('opening, migrating and using the SQLite ledger prints nothing; loading node:sqlite bare does on Node 22', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'alg-driver-')), 'ledger.db');
    const ours = node(`
const { openLedger } = require('./storage/ledger');
(async () => {
  const ledger = await openLedger(${JSON.stringify(`sqlite:${file}`)});
  const c = await ledger.claim({ key: 'k', tool: 't', argsHash: 'h', runId: 'r', owner: 'o', leaseMs: 60000 });
  await ledger.commit('k', c.token, { ok: true });
  console.log((await ledger.get('k')).state);
  await ledger.close();
  process.emitWarning('still shown', 'ExperimentalWarning');
})();`);
    expect(ours.status).toBe(0);
    expect(ours.stdout.trim()).toBe('SUCCEEDED');
    // Only the warning the script raised itself: the filter is exactly Node's SQLite one.
    expect(ours.stderr).toMatch(/ExperimentalWarning: still shown/);
    expect(ours.stderr).not.toMatch(/SQLite/);
    // The control: the same Node loading the module itself warns (Node 24 does not).
    const bare = node(`require('node:sqlite')`);
    expect(bare.status).toBe(0);
    if (process.versions.node.startsWith('22.')) expect(bare.stderr).toMatch(/SQLite is an experimental/);
  });

  it("leaves Node's process.emitWarning as it was", () => {
    // Node's own process (under jest `process` is a copy; the driver patches Node's for the load).
    const nodeProcess = runInThisContext('process') as NodeJS.Process;
    const before = nodeProcess.emitWarning;
    openSqlite(':memory:').close();
    expect(nodeProcess.emitWarning).toBe(before);
  });

  describe('on a ledger file', () => {
    let ledger: SqliteLedger;
    let raw: DatabaseSync;

    beforeEach(async () => {
      const file = join(mkdtempSync(join(tmpdir(), 'alg-driver-')), 'ledger.db');
      ledger = new SqliteLedger(file, { busyTimeoutMs: 2_500 });
      await ledger.migrate();
      raw = openSqlite(file);
    });
    afterEach(async () => {
      raw.close();
      await ledger.close();
    });

    it('stores tokens, times and counters as INTEGER and reads them back as numbers', async () => {
      const c = await ledger.claim({
        key: 'k',
        tool: 't',
        argsHash: 'h',
        runId: 'r',
        owner: 'o',
        leaseMs: 60_000,
      });
      if (c.kind !== 'claimed') throw new Error(`not claimed: ${c.kind}`);
      await ledger.renew('k', c.token, 30_000.4);
      await ledger.dispatch('k', c.token);
      await ledger.commit('k', c.token, { n: 1 });
      const types = raw
        .prepare(
          `SELECT typeof(token) AS token, typeof(attempts) AS attempts, typeof(created_at) AS created,
                  typeof(dispatched_at) AS dispatched, typeof(finished_at) AS finished
           FROM ledger_records WHERE key = 'k'`,
        )
        .get();
      expect({ ...types }).toEqual({
        token: 'integer',
        attempts: 'integer',
        created: 'integer',
        dispatched: 'integer',
        finished: 'integer',
      });
      const row = raw.prepare("SELECT token, created_at FROM ledger_records WHERE key = 'k'").get() as {
        token: unknown;
        created_at: unknown;
      };
      expect([typeof row.token, Number.isInteger(row.token), typeof row.created_at]).toEqual([
        'number',
        true,
        'number',
      ]);
      expect(row.token).toBe(c.token);
      expect(typeof c.token).toBe('number');
    });

    it('waits the busy timeout it was given', () => {
      const db = (ledger as unknown as { db: DatabaseSync }).db;
      expect({ ...db.prepare('PRAGMA busy_timeout').get() }).toEqual({ timeout: 2_500 });
    });

    it('a closed ledger refuses work with a clear error, and closes once', async () => {
      await ledger.close();
      await expect(ledger.get('k')).rejects.toHaveProperty(
        'message',
        expect.stringMatching(/^the SQLite ledger at .*ledger\.db is closed$/),
      );
      await ledger.close(); // no second close of the database
    });
  });

  it('a busy timeout that is not a number of milliseconds is refused, naming it', () => {
    expect(() => new SqliteLedger(':memory:', { busyTimeoutMs: Number.NaN })).toThrow(
      /busyTimeoutMs must be a non-negative number of milliseconds, got NaN/,
    );
    expect(() => new SqliteLedger(':memory:', { busyTimeoutMs: -1 })).toThrow(/busyTimeoutMs/);
  });
});
