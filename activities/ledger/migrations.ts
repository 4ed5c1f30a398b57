/**
 * Versioned schema migrations, one list per dialect. Append new versions; never edit an
 * applied one. Both lists must keep the same version numbers and meaning.
 */

/** One schema change. */
export interface Migration {
  /** Strictly increasing, starting at 1. */
  version: number;
  /** Short description, stored in `ledger_migrations`. */
  name: string;
  /** Statements, run in order inside one transaction. */
  statements: readonly string[];
}

const STATES = `'CLAIMED','DISPATCHED','SUCCEEDED','FAILED_FINAL','UNKNOWN'`;

/** SQLite: the table that records which migrations ran (created before the first one). */
export const SQLITE_MIGRATIONS_TABLE =
  'CREATE TABLE IF NOT EXISTS ledger_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)';

/** PostgreSQL: the table that records which migrations ran (created before the first one). */
export const POSTGRES_MIGRATIONS_TABLE =
  'CREATE TABLE IF NOT EXISTS ledger_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL)';

/**
 * SQLite: times are integer milliseconds since the epoch taken from the database
 * (`unixepoch('subsec')`), so a worker's `Date.now()` never enters lease arithmetic.
 */
export const SQLITE_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'create ledger records, fencing counter and resolutions',
    statements: [
      `CREATE TABLE ledger_records (
        key TEXT PRIMARY KEY,
        tool TEXT NOT NULL,
        args_hash TEXT NOT NULL,
        run_id TEXT NOT NULL,
        owner TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN (${STATES})),
        token INTEGER NOT NULL,
        lease_expires_at INTEGER,
        result TEXT,
        error TEXT,
        attempts INTEGER NOT NULL DEFAULT 1,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        dispatched_at INTEGER,
        finished_at INTEGER,
        resolved_as TEXT,
        resolved_by TEXT,
        resolution_reason TEXT,
        resolved_at INTEGER,
        resolved_prior_state TEXT
      )`,
      `CREATE INDEX ledger_records_state_finished ON ledger_records (state, finished_at)`,
      `CREATE INDEX ledger_records_updated ON ledger_records (updated_at)`,
      `CREATE TABLE ledger_fencing (id INTEGER PRIMARY KEY CHECK (id = 1), last_token INTEGER NOT NULL)`,
      `INSERT INTO ledger_fencing (id, last_token) VALUES (1, 0)`,
      `CREATE TABLE ledger_resolutions (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        key TEXT NOT NULL,
        resolved_as TEXT NOT NULL,
        actor TEXT NOT NULL,
        reason TEXT NOT NULL,
        prior_state TEXT NOT NULL,
        result TEXT,
        at INTEGER NOT NULL
      )`,
      `CREATE INDEX ledger_resolutions_key ON ledger_resolutions (key)`,
    ],
  },
];

/**
 * PostgreSQL: `timestamptz` from `clock_timestamp()`; results as `json` (not `jsonb`) so a
 * replay returns the stored text exactly; fencing tokens from one sequence shared by all keys.
 */
export const POSTGRES_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'create ledger records, fencing sequence and resolutions',
    statements: [
      `CREATE TABLE ledger_records (
        key text PRIMARY KEY,
        tool text NOT NULL,
        args_hash text NOT NULL,
        run_id text NOT NULL,
        owner text NOT NULL,
        state text NOT NULL CHECK (state IN (${STATES})),
        token bigint NOT NULL,
        lease_expires_at timestamptz,
        result json,
        error json,
        attempts integer NOT NULL DEFAULT 1,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        dispatched_at timestamptz,
        finished_at timestamptz,
        resolved_as text,
        resolved_by text,
        resolution_reason text,
        resolved_at timestamptz,
        resolved_prior_state text
      )`,
      `CREATE INDEX ledger_records_state_finished ON ledger_records (state, finished_at)`,
      `CREATE INDEX ledger_records_updated ON ledger_records (updated_at)`,
      `CREATE SEQUENCE ledger_fencing_seq`,
      `CREATE TABLE ledger_resolutions (
        id bigserial PRIMARY KEY,
        key text NOT NULL,
        resolved_as text NOT NULL,
        actor text NOT NULL,
        reason text NOT NULL,
        prior_state text NOT NULL,
        result json,
        at timestamptz NOT NULL
      )`,
      `CREATE INDEX ledger_resolutions_key ON ledger_resolutions (key)`,
    ],
  },
];

/** Throws when the database was migrated by a newer release than this one. */
export function assertNotNewer(applied: readonly number[], known: readonly Migration[], where: string): void {
  const newest = Math.max(0, ...known.map((m) => m.version));
  const unknown = applied.filter((v) => v > newest);
  if (unknown.length > 0) {
    throw new Error(
      `Ledger schema at ${where} has migration(s) ${unknown.join(', ')} unknown to this release (newest known: ${newest}). ` +
        'Upgrade this worker instead of running an older release against a newer schema.',
    );
  }
}
