/**
 * The demo "world": a small SQLite database the demo tools read and change — a document
 * index to search, records, notifications, payments, slow jobs and a permission table.
 * Its `version` is the external state the guard measures progress by: it moves when
 * the world changes or a run learns a new fact, never because the model says so.
 *
 * Every statement is written against {@link Tx}, so a write can run on the world's own
 * connection or inside the ledger's commit transaction (when both live in one database
 * file), which makes the business write and the ledger record atomic.
 */
import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { AsyncMutex } from '../storage/ledger/async-mutex';
import { openSqlite, type DatabaseSync, type SQLInputValue } from '../storage/sqlite-driver';
import type { Tx } from '../tools/tx';
import type { ProgressSource } from '../activities/progress';

export type { Tx };

const SCHEMA = `
CREATE TABLE IF NOT EXISTS world_meta (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL);
INSERT OR IGNORE INTO world_meta (id, version) VALUES (1, 0);
CREATE TABLE IF NOT EXISTS world_docs (id TEXT PRIMARY KEY, topic TEXT NOT NULL, title TEXT NOT NULL, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS world_facts (run_id TEXT NOT NULL, fact TEXT NOT NULL, PRIMARY KEY (run_id, fact));
CREATE TABLE IF NOT EXISTS world_records (id TEXT PRIMARY KEY, body TEXT NOT NULL, version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS world_notifications (op_key TEXT PRIMARY KEY, channel TEXT NOT NULL, message TEXT NOT NULL, run_id TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS world_payments (op_key TEXT PRIMARY KEY, customer TEXT NOT NULL, amount_cents INTEGER NOT NULL, currency TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS world_jobs (id TEXT PRIMARY KEY, polls_needed INTEGER NOT NULL, polls INTEGER NOT NULL, state TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS world_permissions (permission TEXT PRIMARY KEY, granted INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS world_deploys (op_key TEXT PRIMARY KEY, service TEXT NOT NULL, version TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS world_tool_calls (run_id TEXT NOT NULL, tool TEXT NOT NULL, count INTEGER NOT NULL, PRIMARY KEY (run_id, tool));
`;

const SEED_DOCS: ReadonlyArray<readonly [string, string, string, string]> = [
  ['doc-1', 'temporal', 'Durable execution', 'Workflows survive crashes by replaying history.'],
  ['doc-2', 'temporal', 'Activities', 'Activities are at-least-once; make side effects idempotent.'],
  [
    'doc-3',
    'temporal',
    'Signals and updates',
    'Signals are async; updates return a result after validation.',
  ],
  ['doc-4', 'temporal', 'Continue-as-new', 'Long runs start a fresh history with their state.'],
  ['doc-5', 'temporal', 'Search attributes', 'Index workflows by custom keys for list filters.'],
  ['doc-6', 'agents', 'Loop guards', 'Stop repeated calls before they execute.'],
  ['doc-7', 'agents', 'Idempotency keys', 'One business operation, one side effect.'],
];

/** The demo world over one SQLite database file. */
export class World {
  private constructor(
    private readonly db: DatabaseSync,
    /** Absolute path of the database file (':memory:' for in-memory). */
    readonly file: string,
  ) {}

  /** Opens (and migrates) the world at `sqlite:PATH` or a plain path. */
  static open(url: string): World {
    const file = worldFile(url);
    if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
    const db = openSqlite(file);
    db.exec('PRAGMA journal_mode = WAL');
    db.exec('PRAGMA busy_timeout = 5000');
    db.exec(SCHEMA);
    const insert = db.prepare(
      'INSERT OR IGNORE INTO world_docs (id, topic, title, body) VALUES (?, ?, ?, ?)',
    );
    for (const d of SEED_DOCS) insert.run(...d);
    return new World(db, file);
  }

  /**
   * One connection serves every activity of the worker. An async transaction yields
   * between statements, so every use of the connection is serialised: a statement from
   * another activity must never land inside (and roll back with) someone else's transaction.
   */
  private readonly lock = new AsyncMutex();

  /** Statements on the connection as it is; used only while {@link lock} is held. */
  private readonly inner: Tx = {
    run: async (sql, params = []) => ({
      changes: Number(this.db.prepare(sql).run(...(params as SQLInputValue[])).changes),
    }),
    all: async <T>(sql: string, params: readonly unknown[] = []) =>
      this.db.prepare(sql).all(...(params as SQLInputValue[])) as unknown as T[],
    get: async <T>(sql: string, params: readonly unknown[] = []) =>
      this.db.prepare(sql).get(...(params as SQLInputValue[])) as unknown as T | undefined,
  };

  /** The world's own connection as a {@link Tx}; each statement runs on its own. */
  readonly tx: Tx = {
    run: (sql, params) => this.lock.run(() => this.inner.run(sql, params)),
    all: <T>(sql: string, params?: readonly unknown[]) => this.lock.run(() => this.inner.all<T>(sql, params)),
    get: <T>(sql: string, params?: readonly unknown[]) => this.lock.run(() => this.inner.get<T>(sql, params)),
  };

  /** Runs `fn` in one IMMEDIATE transaction on the world's own connection. */
  transaction<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    return this.lock.run(async () => {
      this.db.exec('BEGIN IMMEDIATE');
      try {
        const out = await fn(this.inner);
        this.db.exec('COMMIT');
        return out;
      } catch (err) {
        this.db.exec('ROLLBACK');
        throw err;
      }
    });
  }

  /** The run's progress version: world changes plus facts this run has learned. */
  async progressVersion(runId: string, tx: Tx = this.tx): Promise<number> {
    const row = await tx.get<{ v: number }>(
      'SELECT (SELECT version FROM world_meta WHERE id = 1) + (SELECT COUNT(*) FROM world_facts WHERE run_id = ?) AS v',
      [runId],
    );
    return Number(row?.v ?? 0);
  }

  /** Bumps the world version (every business write calls this in its transaction). */
  async bump(tx: Tx = this.tx): Promise<void> {
    await tx.run('UPDATE world_meta SET version = version + 1 WHERE id = 1');
  }

  /** Counts one real execution of `tool` for `runId` (what tests and the demo assert on). */
  async countCall(runId: string, tool: string, tx: Tx = this.tx): Promise<void> {
    await tx.run(
      'INSERT INTO world_tool_calls (run_id, tool, count) VALUES (?, ?, 1) ON CONFLICT (run_id, tool) DO UPDATE SET count = world_tool_calls.count + 1',
      [runId, tool],
    );
  }

  /** Execution counters of a run (or of all runs when `runId` is omitted), by tool. */
  async counters(runId?: string): Promise<Record<string, number>> {
    const rows = runId
      ? await this.tx.all<{ tool: string; n: number }>(
          'SELECT tool, SUM(count) AS n FROM world_tool_calls WHERE run_id = ? GROUP BY tool',
          [runId],
        )
      : await this.tx.all<{ tool: string; n: number }>(
          'SELECT tool, SUM(count) AS n FROM world_tool_calls GROUP BY tool',
        );
    return Object.fromEntries(rows.map((r) => [r.tool, Number(r.n)]));
  }

  /** Grants a permission (an operator's change in the world). */
  async grant(permission: string): Promise<void> {
    await this.transaction(async (tx) => {
      await tx.run(
        'INSERT INTO world_permissions (permission, granted) VALUES (?, 1) ON CONFLICT (permission) DO UPDATE SET granted = 1',
        [permission],
      );
      await this.bump(tx);
    });
  }

  /** Revokes a permission. */
  async revoke(permission: string): Promise<void> {
    await this.transaction(async (tx) => {
      await tx.run(
        'INSERT INTO world_permissions (permission, granted) VALUES (?, 0) ON CONFLICT (permission) DO UPDATE SET granted = 0',
        [permission],
      );
      await this.bump(tx);
    });
  }

  /** Whether a permission is granted. */
  async hasPermission(permission: string, tx: Tx = this.tx): Promise<boolean> {
    const row = await tx.get<{ granted: number }>(
      'SELECT granted FROM world_permissions WHERE permission = ?',
      [permission],
    );
    return row?.granted === 1;
  }

  /** Adds a document to the index (a change in the world the agent can discover). */
  async addDoc(id: string, topic: string, title: string, body: string): Promise<void> {
    await this.transaction(async (tx) => {
      await tx.run('INSERT OR REPLACE INTO world_docs (id, topic, title, body) VALUES (?, ?, ?, ?)', [
        id,
        topic,
        title,
        body,
      ]);
      await this.bump(tx);
    });
  }

  /** Closes the connection. */
  close(): void {
    this.db.close();
  }
}

/** The file path behind a world URL (`sqlite:PATH`, `sqlite::memory:` or a plain path). */
export function worldFile(url: string): string {
  const raw = url.startsWith('sqlite:') ? url.slice('sqlite:'.length) : url;
  if (raw === ':memory:') return raw;
  if (raw.includes('://')) throw new TypeError(`WORLD_URL must be a SQLite path (sqlite:PATH), got "${url}"`);
  return resolve(raw);
}

/** The demo world as the worker's progress source: its version plus the facts the run learned. */
export function worldProgress(world: World): ProgressSource {
  return { name: 'demo world', version: (runId) => world.progressVersion(runId) };
}
