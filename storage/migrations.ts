/**
 * Versioned schema migrations, one list per dialect. Append new versions; never edit an
 * applied one. Both lists must keep the same version numbers and meaning.
 */

import {
  POSTGRES_SERVED_STATEMENTS,
  POSTGRES_SPEND_STATEMENTS,
  SERVED_MIGRATION_NAME,
  SPEND_MIGRATION_NAME,
  SQLITE_SERVED_STATEMENTS,
  SQLITE_SPEND_STATEMENTS,
} from './spend/schema';

/** Migration 8's name (a description stored beside its version; migrations are applied by version). */
export const TRACE_MIGRATION_NAME = 'paged-out trace records of long runs and the reaped runs';

/**
 * Migration 9 (both dialects): one run's ledger records, newest first, without a scan of the
 * whole ledger (`agentctl ledger list --run`, `Ledger.list({ runId })`: `ORDER BY updated_at DESC`).
 * A long run writes 100,000 records and a shared ledger holds many runs'.
 */
const RUN_INDEX_MIGRATION: Migration = {
  version: 9,
  name: "an index on the ledger records' run",
  statements: ['CREATE INDEX ledger_records_run ON ledger_records (run_id, updated_at)'],
};

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
/** The approval audit's actions (`AUDIT_ACTIONS` in storage/approvals/types.ts). */
const AUDIT_ACTIONS = `'requested','approved','denied','consumed','refused'`;

/**
 * Migration 10's audit actions: `submitted` joins them: an approval stored by a
 * client that could not verify it is audited as submitted, never as approved.
 */
const AUDIT_ACTIONS_10 = `'requested','submitted','approved','denied','consumed','refused'`;
const AUDIT_MIGRATION_NAME = "the approval audit's submitted action";

/** SQLite: the table that records which migrations ran (created before the first one). */
/**
 * Migration 12: a run's progress version kept as a number, bumped in the transaction
 * that adds a new fact, instead of counted over all its facts at every step (O(steps) per step:
 * ~0.34 ms at 10,000 facts). Filled from the facts already there.
 */
export const PROGRESS_VERSION_MIGRATION_NAME = 'progress versions kept per run, not counted per step';
const PROGRESS_VERSION_STATEMENTS = (text: string, integer: string): string[] => [
  `CREATE TABLE agent_progress_versions (
    run_id ${text} PRIMARY KEY,
    version ${integer} NOT NULL
  )`,
  `INSERT INTO agent_progress_versions (run_id, version)
   SELECT run_id, COUNT(*) FROM agent_progress_facts GROUP BY run_id`,
];

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
  {
    version: 2,
    name: 'create approvals and the append-only approval audit (storage/approvals)',
    statements: [
      `CREATE TABLE approvals (
        id TEXT PRIMARY KEY,
        run_id TEXT NOT NULL,
        stop_ref TEXT NOT NULL,
        tool TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        args_hash TEXT,
        approver TEXT NOT NULL,
        reason TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        used_at INTEGER,
        used_by_activity TEXT,
        denied_at INTEGER
      )`,
      `CREATE INDEX approvals_run_call ON approvals (run_id, fingerprint)`,
      // What an approval is bound to never changes, and a use or a denial is never taken back.
      `CREATE TRIGGER approvals_binding_immutable BEFORE UPDATE ON approvals
       WHEN NEW.id IS NOT OLD.id OR NEW.run_id IS NOT OLD.run_id OR NEW.stop_ref IS NOT OLD.stop_ref
         OR NEW.tool IS NOT OLD.tool OR NEW.fingerprint IS NOT OLD.fingerprint OR NEW.args_hash IS NOT OLD.args_hash
         OR NEW.approver IS NOT OLD.approver OR NEW.created_at IS NOT OLD.created_at OR NEW.expires_at IS NOT OLD.expires_at
         OR (OLD.used_at IS NOT NULL AND NEW.used_at IS NOT OLD.used_at)
         OR (OLD.denied_at IS NOT NULL AND NEW.denied_at IS NOT OLD.denied_at)
       BEGIN SELECT RAISE(ABORT, 'approvals: the binding, a use and a denial are immutable'); END`,
      `CREATE TABLE approval_audit (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        at INTEGER NOT NULL,
        action TEXT NOT NULL CHECK (action IN (${AUDIT_ACTIONS})),
        run_id TEXT NOT NULL,
        approval_id TEXT,
        actor TEXT NOT NULL,
        detail TEXT
      )`,
      `CREATE INDEX approval_audit_run ON approval_audit (run_id, id)`,
      `CREATE TRIGGER approval_audit_no_update BEFORE UPDATE ON approval_audit
       BEGIN SELECT RAISE(ABORT, 'approval_audit is append-only'); END`,
      `CREATE TRIGGER approval_audit_no_delete BEFORE DELETE ON approval_audit
       BEGIN SELECT RAISE(ABORT, 'approval_audit is append-only'); END`,
    ],
  },
  {
    version: 3,
    name: "approvals carry the operator's signature (signed_by, signed_at_ms, signature)",
    statements: [
      `ALTER TABLE approvals ADD COLUMN signed_by TEXT`,
      `ALTER TABLE approvals ADD COLUMN signed_at_ms INTEGER`,
      `ALTER TABLE approvals ADD COLUMN signature TEXT`,
      // The signature and the reason it covers join the immutable binding.
      `DROP TRIGGER approvals_binding_immutable`,
      `CREATE TRIGGER approvals_binding_immutable BEFORE UPDATE ON approvals
       WHEN NEW.id IS NOT OLD.id OR NEW.run_id IS NOT OLD.run_id OR NEW.stop_ref IS NOT OLD.stop_ref
         OR NEW.tool IS NOT OLD.tool OR NEW.fingerprint IS NOT OLD.fingerprint OR NEW.args_hash IS NOT OLD.args_hash
         OR NEW.approver IS NOT OLD.approver OR NEW.created_at IS NOT OLD.created_at OR NEW.expires_at IS NOT OLD.expires_at
         OR NEW.reason IS NOT OLD.reason OR NEW.signed_by IS NOT OLD.signed_by
         OR NEW.signed_at_ms IS NOT OLD.signed_at_ms OR NEW.signature IS NOT OLD.signature
         OR (OLD.used_at IS NOT NULL AND NEW.used_at IS NOT OLD.used_at)
         OR (OLD.denied_at IS NOT NULL AND NEW.denied_at IS NOT OLD.denied_at)
       BEGIN SELECT RAISE(ABORT, 'approvals: the binding, a use and a denial are immutable'); END`,
    ],
  },
  {
    version: 4,
    name: 'conversation store, idempotent planner turns and the payload store',
    statements: [
      // The planner's conversation, out of workflow history: content-addressed, append-only.
      // `hash` is the chain hash of the conversation up to and including this message, so a
      // reference (conversation, length, hash) names one exact prefix and a retried append
      // writes the same row again (INSERT OR IGNORE), never a second copy.
      `CREATE TABLE agent_conversation (
        conversation_id TEXT NOT NULL,
        hash TEXT NOT NULL,
        parent_hash TEXT,
        position INTEGER NOT NULL,
        chars INTEGER NOT NULL,
        cum_chars INTEGER NOT NULL,
        message TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (conversation_id, hash)
      )`,
      // One row per scheduled plan activity (workflow run id + activity id): a retried attempt
      // returns the stored turn instead of asking the model again.
      `CREATE TABLE agent_planner_turns (
        turn_key TEXT PRIMARY KEY,
        conversation_id TEXT NOT NULL,
        output TEXT NOT NULL,
        created_at INTEGER NOT NULL
      )`,
      `CREATE INDEX agent_planner_turns_conversation ON agent_planner_turns (conversation_id)`,
      // Tool results and model replies too large for workflow history, stored by reference.
      `CREATE TABLE agent_payloads (
        run_id TEXT NOT NULL,
        id TEXT NOT NULL,
        bytes INTEGER NOT NULL,
        body TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (run_id, id)
      )`,
    ],
  },
  {
    version: 5,
    name: 'approval uses are rows of their own, append-only; approvals are never deleted',
    statements: [
      // One row per use: an approval is used at most once, and a stop's call at most once,
      // whatever happens to its approvals row (docs/security.md "Append-only in fact").
      `CREATE TABLE approval_uses (
        approval_id TEXT PRIMARY KEY,
        run_id TEXT NOT NULL,
        stop_ref TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        used_by_activity TEXT NOT NULL,
        used_at INTEGER NOT NULL,
        UNIQUE (run_id, stop_ref, fingerprint)
      )`,
      `INSERT OR IGNORE INTO approval_uses (approval_id, run_id, stop_ref, fingerprint, used_by_activity, used_at)
       SELECT id, run_id, stop_ref, fingerprint, COALESCE(used_by_activity, ''), used_at
       FROM approvals WHERE used_at IS NOT NULL ORDER BY used_at, id`,
      `CREATE TRIGGER approval_uses_no_update BEFORE UPDATE ON approval_uses
       BEGIN SELECT RAISE(ABORT, 'approval_uses is append-only: a use is never undone'); END`,
      `CREATE TRIGGER approval_uses_no_delete BEFORE DELETE ON approval_uses
       BEGIN SELECT RAISE(ABORT, 'approval_uses is append-only: a use is never undone'); END`,
      `CREATE TRIGGER approvals_no_delete BEFORE DELETE ON approvals
       BEGIN SELECT RAISE(ABORT, 'approvals are append-only: a row is never deleted'); END`,
    ],
  },
  {
    version: 6,
    name: 'progress facts and tool execution counters of any tool',
    statements: [
      // What a run has learned (a read result not seen before, a committed write): the default
      // progress source for workers without a world of their own (activities/progress).
      `CREATE TABLE agent_progress_facts (
        run_id TEXT NOT NULL,
        fact TEXT NOT NULL,
        at INTEGER NOT NULL,
        PRIMARY KEY (run_id, fact)
      )`,
      // Real executions per run and tool, counted by the runtime for every tool.
      `CREATE TABLE agent_tool_calls (
        run_id TEXT NOT NULL,
        tool TEXT NOT NULL,
        count INTEGER NOT NULL,
        PRIMARY KEY (run_id, tool)
      )`,
    ],
  },
  { version: 7, name: SPEND_MIGRATION_NAME, statements: SQLITE_SPEND_STATEMENTS },
  {
    version: 8,
    name: TRACE_MIGRATION_NAME,
    statements: [
      // The trace records that left a run's checkpoint at a continue-as-new (storage/trace-store.ts):
      // `seq` is the record's position in the run's whole trace (0-based), so a retried save is a no-op.
      `CREATE TABLE agent_trace (
        run_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        record TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (run_id, seq)
      )`,
      // A run whose paged-out trace the reaper deleted: `agentctl trace --stored` says so.
      `CREATE TABLE agent_trace_reaped (run_id TEXT PRIMARY KEY, records INTEGER NOT NULL, reaped_at INTEGER NOT NULL)`,
    ],
  },
  RUN_INDEX_MIGRATION,
  {
    version: 10,
    name: AUDIT_MIGRATION_NAME,
    // SQLite cannot alter a CHECK: the append-only audit is copied row for row (ids kept) into
    // a table with the new CHECK, and its index and triggers are made again.
    statements: [
      `CREATE TABLE approval_audit_10 (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        at INTEGER NOT NULL,
        action TEXT NOT NULL CHECK (action IN (${AUDIT_ACTIONS_10})),
        run_id TEXT NOT NULL,
        approval_id TEXT,
        actor TEXT NOT NULL,
        detail TEXT
      )`,
      `INSERT INTO approval_audit_10 (id, at, action, run_id, approval_id, actor, detail)
       SELECT id, at, action, run_id, approval_id, actor, detail FROM approval_audit ORDER BY id`,
      `DROP TABLE approval_audit`,
      `ALTER TABLE approval_audit_10 RENAME TO approval_audit`,
      `CREATE INDEX approval_audit_run ON approval_audit (run_id, id)`,
      `CREATE TRIGGER approval_audit_no_update BEFORE UPDATE ON approval_audit
       BEGIN SELECT RAISE(ABORT, 'approval_audit is append-only'); END`,
      `CREATE TRIGGER approval_audit_no_delete BEFORE DELETE ON approval_audit
       BEGIN SELECT RAISE(ABORT, 'approval_audit is append-only'); END`,
    ],
  },
  { version: 11, name: SERVED_MIGRATION_NAME, statements: SQLITE_SERVED_STATEMENTS },
  {
    version: 12,
    name: PROGRESS_VERSION_MIGRATION_NAME,
    statements: PROGRESS_VERSION_STATEMENTS('TEXT', 'INTEGER'),
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
  {
    version: 2,
    name: 'create approvals and the append-only approval audit (storage/approvals)',
    statements: [
      `CREATE TABLE approvals (
        id text PRIMARY KEY,
        run_id text NOT NULL,
        stop_ref text NOT NULL,
        tool text NOT NULL,
        fingerprint text NOT NULL,
        args_hash text,
        approver text NOT NULL,
        reason text NOT NULL,
        created_at timestamptz NOT NULL,
        expires_at timestamptz NOT NULL,
        used_at timestamptz,
        used_by_activity text,
        denied_at timestamptz
      )`,
      `CREATE INDEX approvals_run_call ON approvals (run_id, fingerprint)`,
      // What an approval is bound to never changes, and a use or a denial is never taken back.
      `CREATE FUNCTION approvals_binding_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         IF NEW.id IS DISTINCT FROM OLD.id OR NEW.run_id IS DISTINCT FROM OLD.run_id
            OR NEW.stop_ref IS DISTINCT FROM OLD.stop_ref OR NEW.tool IS DISTINCT FROM OLD.tool
            OR NEW.fingerprint IS DISTINCT FROM OLD.fingerprint OR NEW.args_hash IS DISTINCT FROM OLD.args_hash
            OR NEW.approver IS DISTINCT FROM OLD.approver OR NEW.created_at IS DISTINCT FROM OLD.created_at
            OR NEW.expires_at IS DISTINCT FROM OLD.expires_at
            OR (OLD.used_at IS NOT NULL AND NEW.used_at IS DISTINCT FROM OLD.used_at)
            OR (OLD.denied_at IS NOT NULL AND NEW.denied_at IS DISTINCT FROM OLD.denied_at) THEN
           RAISE EXCEPTION 'approvals: the binding, a use and a denial are immutable';
         END IF;
         RETURN NEW;
       END $$`,
      `CREATE TRIGGER approvals_binding_immutable BEFORE UPDATE ON approvals
       FOR EACH ROW EXECUTE FUNCTION approvals_binding_immutable()`,
      `CREATE TABLE approval_audit (
        id bigserial PRIMARY KEY,
        at timestamptz NOT NULL,
        action text NOT NULL CHECK (action IN (${AUDIT_ACTIONS})),
        run_id text NOT NULL,
        approval_id text,
        actor text NOT NULL,
        detail text
      )`,
      `CREATE INDEX approval_audit_run ON approval_audit (run_id, id)`,
      `CREATE FUNCTION approval_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN RAISE EXCEPTION 'approval_audit is append-only'; END $$`,
      `CREATE TRIGGER approval_audit_no_change BEFORE UPDATE OR DELETE ON approval_audit
       FOR EACH ROW EXECUTE FUNCTION approval_audit_append_only()`,
      `CREATE TRIGGER approval_audit_no_truncate BEFORE TRUNCATE ON approval_audit
       FOR EACH STATEMENT EXECUTE FUNCTION approval_audit_append_only()`,
    ],
  },
  {
    version: 3,
    name: "approvals carry the operator's signature (signed_by, signed_at_ms, signature)",
    statements: [
      `ALTER TABLE approvals ADD COLUMN signed_by text, ADD COLUMN signed_at_ms bigint, ADD COLUMN signature text`,
      // The signature and the reason it covers join the immutable binding.
      `CREATE OR REPLACE FUNCTION approvals_binding_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         IF NEW.id IS DISTINCT FROM OLD.id OR NEW.run_id IS DISTINCT FROM OLD.run_id
            OR NEW.stop_ref IS DISTINCT FROM OLD.stop_ref OR NEW.tool IS DISTINCT FROM OLD.tool
            OR NEW.fingerprint IS DISTINCT FROM OLD.fingerprint OR NEW.args_hash IS DISTINCT FROM OLD.args_hash
            OR NEW.approver IS DISTINCT FROM OLD.approver OR NEW.created_at IS DISTINCT FROM OLD.created_at
            OR NEW.expires_at IS DISTINCT FROM OLD.expires_at OR NEW.reason IS DISTINCT FROM OLD.reason
            OR NEW.signed_by IS DISTINCT FROM OLD.signed_by OR NEW.signed_at_ms IS DISTINCT FROM OLD.signed_at_ms
            OR NEW.signature IS DISTINCT FROM OLD.signature
            OR (OLD.used_at IS NOT NULL AND NEW.used_at IS DISTINCT FROM OLD.used_at)
            OR (OLD.denied_at IS NOT NULL AND NEW.denied_at IS DISTINCT FROM OLD.denied_at) THEN
           RAISE EXCEPTION 'approvals: the binding, a use and a denial are immutable';
         END IF;
         RETURN NEW;
       END $$`,
    ],
  },
  {
    version: 4,
    name: 'conversation store, idempotent planner turns and the payload store',
    statements: [
      `CREATE TABLE agent_conversation (
        conversation_id text NOT NULL,
        hash text NOT NULL,
        parent_hash text,
        position integer NOT NULL,
        chars integer NOT NULL,
        cum_chars bigint NOT NULL,
        message text NOT NULL,
        created_at timestamptz NOT NULL,
        PRIMARY KEY (conversation_id, hash)
      )`,
      `CREATE TABLE agent_planner_turns (
        turn_key text PRIMARY KEY,
        conversation_id text NOT NULL,
        output text NOT NULL,
        created_at timestamptz NOT NULL
      )`,
      `CREATE INDEX agent_planner_turns_conversation ON agent_planner_turns (conversation_id)`,
      `CREATE TABLE agent_payloads (
        run_id text NOT NULL,
        id text NOT NULL,
        bytes integer NOT NULL,
        body text NOT NULL,
        created_at timestamptz NOT NULL,
        PRIMARY KEY (run_id, id)
      )`,
    ],
  },
  {
    version: 5,
    name: 'approval uses are rows of their own, append-only; approvals are never deleted',
    statements: [
      `CREATE TABLE approval_uses (
        approval_id text PRIMARY KEY,
        run_id text NOT NULL,
        stop_ref text NOT NULL,
        fingerprint text NOT NULL,
        used_by_activity text NOT NULL,
        used_at timestamptz NOT NULL,
        UNIQUE (run_id, stop_ref, fingerprint)
      )`,
      `INSERT INTO approval_uses (approval_id, run_id, stop_ref, fingerprint, used_by_activity, used_at)
       SELECT id, run_id, stop_ref, fingerprint, COALESCE(used_by_activity, ''), used_at
       FROM approvals WHERE used_at IS NOT NULL ORDER BY used_at, id ON CONFLICT DO NOTHING`,
      `CREATE FUNCTION approval_uses_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN RAISE EXCEPTION 'approval_uses is append-only: a use is never undone'; END $$`,
      `CREATE TRIGGER approval_uses_no_change BEFORE UPDATE OR DELETE ON approval_uses
       FOR EACH ROW EXECUTE FUNCTION approval_uses_append_only()`,
      `CREATE TRIGGER approval_uses_no_truncate BEFORE TRUNCATE ON approval_uses
       FOR EACH STATEMENT EXECUTE FUNCTION approval_uses_append_only()`,
      `CREATE FUNCTION approvals_never_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN RAISE EXCEPTION 'approvals are append-only: a row is never deleted'; END $$`,
      `CREATE TRIGGER approvals_no_delete BEFORE DELETE ON approvals
       FOR EACH ROW EXECUTE FUNCTION approvals_never_deleted()`,
      `CREATE TRIGGER approvals_no_truncate BEFORE TRUNCATE ON approvals
       FOR EACH STATEMENT EXECUTE FUNCTION approvals_never_deleted()`,
    ],
  },
  {
    version: 6,
    name: 'progress facts and tool execution counters of any tool',
    statements: [
      `CREATE TABLE agent_progress_facts (
        run_id text NOT NULL,
        fact text NOT NULL,
        at timestamptz NOT NULL,
        PRIMARY KEY (run_id, fact)
      )`,
      `CREATE TABLE agent_tool_calls (
        run_id text NOT NULL,
        tool text NOT NULL,
        count bigint NOT NULL,
        PRIMARY KEY (run_id, tool)
      )`,
    ],
  },
  { version: 7, name: SPEND_MIGRATION_NAME, statements: POSTGRES_SPEND_STATEMENTS },
  {
    version: 8,
    name: TRACE_MIGRATION_NAME,
    statements: [
      `CREATE TABLE agent_trace (
        run_id text NOT NULL,
        seq bigint NOT NULL,
        record text NOT NULL,
        created_at timestamptz NOT NULL,
        PRIMARY KEY (run_id, seq)
      )`,
      `CREATE TABLE agent_trace_reaped (run_id text PRIMARY KEY, records bigint NOT NULL, reaped_at timestamptz NOT NULL)`,
    ],
  },
  RUN_INDEX_MIGRATION,
  {
    version: 10,
    name: AUDIT_MIGRATION_NAME,
    statements: [
      `ALTER TABLE approval_audit DROP CONSTRAINT IF EXISTS approval_audit_action_check`,
      `ALTER TABLE approval_audit ADD CONSTRAINT approval_audit_action_check CHECK (action IN (${AUDIT_ACTIONS_10}))`,
    ],
  },
  { version: 11, name: SERVED_MIGRATION_NAME, statements: POSTGRES_SERVED_STATEMENTS },
  {
    version: 12,
    name: PROGRESS_VERSION_MIGRATION_NAME,
    statements: PROGRESS_VERSION_STATEMENTS('text', 'bigint'),
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
