/**
 * Ledger migration 10 (issue 31) on SQLite, from a database at migration 9 holding audit rows:
 * every row survives with its id, the audit stays append-only (its triggers are made again),
 * and the new `submitted` action is accepted while an unknown one is still refused.
 */
import { SQLITE_MIGRATIONS } from '../../storage/migrations';
import { openSqlite } from '../../storage/sqlite-driver';

describe('ledger migration 10: the audit learns `submitted` (SQLite)', () => {
  it('keeps every audit row and id, stays append-only, accepts submitted', () => {
    const db = openSqlite(':memory:');
    const apply = (versions: (v: number) => boolean) => {
      for (const m of SQLITE_MIGRATIONS.filter((x) => versions(x.version))) {
        db.exec('BEGIN');
        m.statements.forEach((sql) => db.exec(sql));
        db.exec('COMMIT');
      }
    };
    apply((v) => v <= 9);
    const insert = db.prepare(
      "INSERT INTO approval_audit (at, action, run_id, approval_id, actor, detail) VALUES (1, ?, 'r', NULL, 'a', ?)",
    );
    insert.run('requested', 'one');
    insert.run('approved', 'two');
    expect(() => insert.run('submitted', 'too early')).toThrow(/CHECK/);
    apply((v) => v === 10);
    expect(db.prepare('SELECT id, action, detail FROM approval_audit ORDER BY id').all()).toEqual([
      { id: 1, action: 'requested', detail: 'one' },
      { id: 2, action: 'approved', detail: 'two' },
    ]);
    insert.run('submitted', 'three');
    expect(db.prepare("SELECT id FROM approval_audit WHERE action = 'submitted'").get()).toEqual({ id: 3 });
    expect(() => insert.run('approved-ish', 'x')).toThrow(/CHECK/);
    expect(() => db.exec('UPDATE approval_audit SET detail = NULL')).toThrow(/append-only/);
    expect(() => db.exec('DELETE FROM approval_audit')).toThrow(/append-only/);
    db.close();
  });
});
