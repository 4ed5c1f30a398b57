/**
 * Default classification of thrown errors (docs/spec.md §2.2), against errors the real
 * drivers throw: a busy or restarting database is RETRYABLE (nothing committed), never a
 * final failure that would end the run FAILED.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Client } from 'pg';
import { ZodError, z } from 'zod';
import { classifyError } from '../../tools/classify';

const PG_URL = process.env.TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

describe('classifyError', () => {
  it('a locked SQLite database (SQLITE_BUSY from better-sqlite3) is RETRYABLE database_unavailable', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'alg-cls-')), 'x.db');
    const a = new Database(file, { timeout: 1 });
    const b = new Database(file, { timeout: 1 });
    a.exec('CREATE TABLE t (x)');
    a.exec('BEGIN IMMEDIATE');
    let thrown: unknown;
    try {
      b.exec('BEGIN IMMEDIATE');
    } catch (err) {
      thrown = err;
    }
    a.exec('ROLLBACK');
    a.close();
    b.close();
    expect((thrown as { code?: string }).code).toBe('SQLITE_BUSY');
    expect(classifyError(thrown)).toMatchObject({ kind: 'RETRYABLE', code: 'database_unavailable' });
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
