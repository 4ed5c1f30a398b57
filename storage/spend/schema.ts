/**
 * Ledger migration 7 (storage/migrations.ts): the tenant spend tables. Kept here, beside the
 * store that uses them; the migration list imports them so both dialects keep one number.
 *
 * - `agent_spend_tenants`: one row per tenant, the row a PostgreSQL reservation locks
 *   (`SELECT … FOR UPDATE`), so concurrent workers reserve for one tenant one at a time.
 * - `agent_spend_reservations`: one row per model call — `reserved` (its worst case, while
 *   the call is in flight, until `lease_until`), `settled` (its actual cost), or `refused`
 *   (it would have crossed the cap; nothing was sent; kept for the resume check and audit).
 * - `agent_spend_caps`: operators' raises of a tenant's cap (append-only; the newest trusted
 *   one replaces the worker's configured cap), with the operator's signature.
 */

const common = (t: { text: string; real: string; time: string; int: string }) => [
  `CREATE TABLE agent_spend_tenants (tenant ${t.text} PRIMARY KEY)`,
  `CREATE TABLE agent_spend_reservations (
    id ${t.text} PRIMARY KEY,
    tenant ${t.text} NOT NULL,
    run_id ${t.text} NOT NULL,
    model ${t.text} NOT NULL,
    state ${t.text} NOT NULL CHECK (state IN ('reserved','settled','refused')),
    reserved_usd ${t.real},
    actual_usd ${t.real},
    created_at ${t.time} NOT NULL,
    lease_until ${t.time} NOT NULL,
    settled_at ${t.time}
  )`,
  `CREATE INDEX agent_spend_reservations_window ON agent_spend_reservations (tenant, created_at)`,
  `CREATE INDEX agent_spend_reservations_run ON agent_spend_reservations (run_id, created_at)`,
  `CREATE TABLE agent_spend_caps (
    id ${t.text} PRIMARY KEY,
    tenant ${t.text} NOT NULL,
    max_usd ${t.real} NOT NULL CHECK (max_usd >= 0),
    window_ms ${t.int} NOT NULL CHECK (window_ms > 0),
    actor ${t.text} NOT NULL,
    reason ${t.text} NOT NULL,
    created_at ${t.time} NOT NULL,
    signed_by ${t.text},
    signed_at_ms ${t.int},
    signature ${t.text}
  )`,
  `CREATE INDEX agent_spend_caps_tenant ON agent_spend_caps (tenant, created_at)`,
];

/** Migration 7, SQLite (times in integer ms from the database). */
export const SQLITE_SPEND_STATEMENTS: readonly string[] = common({
  text: 'TEXT',
  real: 'REAL',
  time: 'INTEGER',
  int: 'INTEGER',
});

/** Migration 7, PostgreSQL. */
export const POSTGRES_SPEND_STATEMENTS: readonly string[] = common({
  text: 'text',
  real: 'double precision',
  time: 'timestamptz',
  int: 'bigint',
});

/** Migration 7's name in `ledger_migrations`. */
export const SPEND_MIGRATION_NAME = 'tenant spend reservations and raised caps';

/**
 * Ledger migration 11: `agent_served_usage`, one row per model request of a run,
 * written before it is sent (`sent`, at its worst case) and when it ends (`answered`: what it
 * is counted at; `failed`: 0 for an error answer, the worst case for a request without one).
 * `delivered_to` names the plan activity (its turn key) whose outcome carried the row to the
 * workflow; null: none yet (an attempt killed before it finished), so the next one carries it.
 */
const served = (t: { text: string; real: string; time: string; int: string }) => [
  `CREATE TABLE agent_served_usage (
    id ${t.text} PRIMARY KEY,
    run_id ${t.text} NOT NULL,
    turn_key ${t.text} NOT NULL,
    attempt ${t.int} NOT NULL,
    state ${t.text} NOT NULL CHECK (state IN ('sent','answered','failed')),
    max_tokens ${t.int} NOT NULL,
    worst_tokens ${t.real} NOT NULL,
    worst_usd ${t.real},
    tokens ${t.real},
    cost_usd ${t.real},
    basis ${t.text},
    finish ${t.text},
    elapsed_ms ${t.int},
    delivered_to ${t.text},
    created_at ${t.time} NOT NULL
  )`,
  `CREATE INDEX agent_served_usage_run ON agent_served_usage (run_id, turn_key)`,
];

/** Migration 11, SQLite. */
export const SQLITE_SERVED_STATEMENTS: readonly string[] = served({
  text: 'TEXT',
  real: 'REAL',
  time: 'INTEGER',
  int: 'INTEGER',
});

/** Migration 11, PostgreSQL. */
export const POSTGRES_SERVED_STATEMENTS: readonly string[] = served({
  text: 'text',
  real: 'double precision',
  time: 'timestamptz',
  int: 'bigint',
});

/** Migration 11's name in `ledger_migrations`. */
export const SERVED_MIGRATION_NAME = 'served model usage per request, across plan attempts';
