/**
 * The chaos run's side effects: one row per real execution of the `chaos_write` tool, in
 * PostgreSQL, written OUTSIDE the ledger's transaction (as a vendor call would be). The
 * table has no unique key on purpose: a duplicate execution shows up as a second row, which
 * the invariants count against the ledger's records.
 */
import type { Pool } from 'pg';

/** The table (created by the harness before any worker starts). */
export const EFFECTS_DDL = `CREATE TABLE IF NOT EXISTS chaos_effects (
  id bigserial PRIMARY KEY,
  op_key text NOT NULL,
  run_id text NOT NULL,
  pid integer NOT NULL,
  at timestamptz NOT NULL DEFAULT clock_timestamp()
)`;

/** Creates the effects table. */
export async function createEffectsTable(pool: Pool): Promise<void> {
  await pool.query(EFFECTS_DDL);
}
