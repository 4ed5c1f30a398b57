/**
 * Default classification of thrown errors (docs/spec.md §2.2), against errors the real
 * drivers throw: a busy or restarting database is RETRYABLE (nothing committed), never a
 * final failure that would end the run FAILED.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { ZodError, z } from 'zod';
import { openSqlite } from '../../storage/sqlite-driver';
import { classifyError } from '../../tools/classify';

const PG_URL = process.env.TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

describe('classifyError', () => {
  it('a locked SQLite database (SQLITE_BUSY, SQLITE_LOCKED from node:sqlite) is RETRYABLE database_unavailable', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'alg-cls-')), 'x.db');
    const a = openSqlite(file);
    const b = openSqlite(file); // busy timeout 0: fails at once
    a.exec('CREATE TABLE t (x); INSERT INTO t VALUES (1), (2)');
    a.exec('BEGIN IMMEDIATE');
    const busy = thrownBy(() => b.exec('BEGIN IMMEDIATE'));
    a.exec('ROLLBACK');
    // SQLITE_LOCKED: a table dropped under a statement of the same connection still reading it.
    const reading = a.prepare('SELECT x FROM t').iterate();
    reading.next();
    const locked = thrownBy(() => a.exec('DROP TABLE t'));
    reading.return?.();
    a.close();
    b.close();
    expect(busy).toMatchObject({ code: 'ERR_SQLITE_ERROR', errcode: 5 });
    expect(locked).toMatchObject({ code: 'ERR_SQLITE_ERROR', errcode: 6 });
    for (const err of [busy, locked])
      expect(classifyError(err)).toMatchObject({ kind: 'RETRYABLE', code: 'database_unavailable' });
    // A tool's own database on a native driver that names the code (better-sqlite3's SqliteError).
    expect(
      classifyError(Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY_SNAPSHOT' })),
    ).toMatchObject({ kind: 'RETRYABLE', code: 'database_unavailable' });
  });

  it('a closed, read-only or constraint-failing SQLite database is a final tool_error, not an outage', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'alg-cls-')), 'x.db');
    const db = openSqlite(file);
    db.exec('CREATE TABLE t (x PRIMARY KEY); INSERT INTO t VALUES (1)');
    const constraint = thrownBy(() => db.exec('INSERT INTO t VALUES (1)'));
    db.close();
    const closed = thrownBy(() => db.exec('SELECT 1'));
    const readOnly = openSqlite(file, { readOnly: true });
    const refused = thrownBy(() => readOnly.exec('INSERT INTO t VALUES (2)'));
    readOnly.close();
    expect(closed).toMatchObject({ code: 'ERR_INVALID_STATE' });
    expect(refused).toMatchObject({ code: 'ERR_SQLITE_ERROR', errcode: 8 }); // SQLITE_READONLY
    expect(constraint).toMatchObject({ code: 'ERR_SQLITE_ERROR', errcode: 1555 }); // SQLITE_CONSTRAINT_PRIMARYKEY
    for (const err of [closed, refused, constraint])
      expect(classifyError(err)).toMatchObject({ kind: 'FATAL', code: 'tool_error' });
  });

  it('a PostgreSQL that refuses connections (57P03-class, 08xxx, a killed backend) is RETRYABLE', async () => {
    // A real server error: a backend terminated by an administrator (57P01).
    const admin = new Client({ connectionString: PG_URL });
    const victim = new Client({ connectionString: PG_URL });
    await admin.connect();
    await victim.connect();
    victim.on('error', () => undefined);
    const pid = (await victim.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    await admin.query('SELECT pg_terminate_backend($1)', [pid]);
    let thrown: unknown;
    try {
      await victim.query('SELECT 1');
    } catch (err) {
      thrown = err;
    }
    await admin.end();
    await victim.end().catch(() => undefined);
    const r = classifyError(thrown);
    expect(r.kind).toBe('RETRYABLE');
    for (const code of ['57P03', '08006', '53300', '40P01'])
      expect(classifyError(Object.assign(new Error('db'), { code }))).toMatchObject({
        kind: 'RETRYABLE',
        code: 'database_unavailable',
      });
  });

  it('keeps the other defaults: zod → invalid_args, 403 → permission_denied, anything else → tool_error', () => {
    let zerr: ZodError | undefined;
    try {
      z.object({ a: z.string() }).parse({});
    } catch (e) {
      zerr = e as ZodError;
    }
    expect(classifyError(zerr)).toMatchObject({ kind: 'PRECONDITION', code: 'invalid_args' });
    expect(classifyError(Object.assign(new Error('no'), { status: 403 }))).toMatchObject({
      kind: 'FATAL',
      code: 'permission_denied',
    });
    expect(classifyError(Object.assign(new Error('x'), { code: '23505' }))).toMatchObject({
      kind: 'FATAL',
      code: 'tool_error',
    });
  });
});

/** What `fn` threw (undefined when it returned). */
function thrownBy(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  return undefined;
}
