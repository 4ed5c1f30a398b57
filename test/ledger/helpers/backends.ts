/**
 * Real databases for ledger tests: a SQLite file in a fresh temp dir, or a fresh PostgreSQL
 * schema (so parallel jest workers never share tables). Both are dropped on cleanup.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { openLedger, type Ledger } from '../../../storage/ledger';
import { openSqlite, type DatabaseSync, type SQLInputValue } from '../../../storage/sqlite-driver';

/** PostgreSQL used by the tests. */
export const TEST_PG_URL = process.env.TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** One backend under test. */
export interface TestDb {
  /** `sqlite` or `postgres`. */
  name: 'sqlite' | 'postgres';
  /** LEDGER_URL for this database (child processes open it too). */
  url: string;
  /** A temp dir for counter files and the like. */
  dir: string;
  /** Opens (and migrates) a new ledger connection; closed by {@link cleanup}. */
  open(): Promise<Ledger>;
  /** Test-only time travel: moves the lease of `key` one hour into the past. */
  expireLease(key: string): Promise<void>;
  /** Test-only: moves `finished_at` of `key` back by `ms`. */
  ageFinished(key: string, ms: number): Promise<void>;
  /** Runs raw SQL (with `?` placeholders) against the database. */
  exec(sql: string, params?: unknown[]): Promise<Record<string, unknown>[]>;
  /** Closes every ledger opened here and drops the database. */
  cleanup(): Promise<void>;
}

const BACKENDS = ['sqlite', 'postgres'] as const;
/** Names of both backends, for `describe.each`. */
export const backendNames: ('sqlite' | 'postgres')[] = [...BACKENDS];

/** Creates a fresh database of the given backend. */
export async function createTestDb(name: 'sqlite' | 'postgres'): Promise<TestDb> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ledger-test-'));
  const opened: Ledger[] = [];
  const open = async () => {
    const l = await openLedger(url);
    opened.push(l);
    return l;
  };
  let url: string;
  let exec: TestDb['exec'];
  let close: () => Promise<void>;
  if (name === 'sqlite') {
    const file = path.join(dir, 'ledger.db');
    url = `sqlite:${file}`;
    let admin: DatabaseSync | undefined;
    const db = () => {
      if (admin) return admin;
      admin = openSqlite(file);
      admin.exec('PRAGMA busy_timeout = 10000');
      return admin;
    };
    exec = async (sql, params = []) => {
      // `all` runs any statement: a write answers no rows.
      return db()
        .prepare(sql)
        .all(...(params as SQLInputValue[])) as Record<string, unknown>[];
    };
    close = async () => {
      admin?.close();
    };
  } else {
    const schema = `ledger_test_${crypto.randomBytes(6).toString('hex')}`;
    const u = new URL(TEST_PG_URL);
    u.searchParams.set('schema', schema);
    url = u.toString();
    const client = new Client({ connectionString: TEST_PG_URL, options: `-c search_path=${schema}` });
    await client.connect();
    await client.query(`CREATE SCHEMA ${schema}`);
    exec = async (sql, params = []) => {
      let n = 0;
      return (
        await client.query(
          sql.replace(/\?/g, () => `$${++n}`),
          params,
        )
      ).rows;
    };
    close = async () => {
      await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await client.end();
    };
  }
  return {
    name,
    url,
    dir,
    open,
    exec,
    expireLease: async (key) => {
      await exec(
        name === 'sqlite'
          ? 'UPDATE ledger_records SET lease_expires_at = lease_expires_at - 3600000 WHERE key = ?'
          : "UPDATE ledger_records SET lease_expires_at = lease_expires_at - interval '1 hour' WHERE key = ?",
        [key],
      );
    },
    ageFinished: async (key, ms) => {
      await exec(
        name === 'sqlite'
          ? 'UPDATE ledger_records SET finished_at = finished_at - ? WHERE key = ?'
          : "UPDATE ledger_records SET finished_at = finished_at - (?::double precision * interval '1 millisecond') WHERE key = ?",
        [ms, key],
      );
    },
    cleanup: async () => {
      await Promise.all(opened.map((l) => l.close().catch(() => undefined)));
      await close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
