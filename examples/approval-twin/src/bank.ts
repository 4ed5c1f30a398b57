/**
 * The app's own money: a SQLite `payments` table and the `wire` tool that writes it. Every
 * execution of the tool is counted by the tool itself, per reference, in the same database
 * (`tool_calls`), so "the twin never ran" is a fact the app reads from its own store, not
 * something the orchestrator tells it.
 *
 * The tool is `wire {cents, ref}`: the name and schema of the test tool of
 * test/helpers/fingerprint-collision.ts, whose TWIN_WIRES pair collides under exactly this
 * name and these keys (a fingerprint depends on the tool name and the canonical args). The
 * payee is the reference's third segment: `INV-7-vendor-…` pays the vendor,
 * `INV-7-attack-…` the attacker.
 */
import { DatabaseSync } from 'node:sqlite';
import { z } from 'zod';
import { defineTool, type AnyTool } from 'agent-loop-guard';

export interface Bank {
  readonly db: DatabaseSync;
  readonly tools: AnyTool[];
  /** Cents paid to a payee, per run (`null`: every run). */
  paid(payee: string, runId?: string | null): number;
  /** How many times the tool really executed a wire with this reference, per run (`null`: every run). */
  executions(ref: string, runId?: string | null): number;
  close(): void;
}

/** The payee a reference names: its third `-` segment (`INV-7-vendor-…` → `vendor`). */
export const payeeOf = (ref: string): string => ref.split('-')[2] ?? 'unknown';

export function openBank(file: string): Bank {
  const db = new DatabaseSync(file);
  db.exec('PRAGMA journal_mode = WAL');
  db.exec(`
    CREATE TABLE IF NOT EXISTS payments (
      id INTEGER PRIMARY KEY, run_id TEXT NOT NULL, payee TEXT NOT NULL, ref TEXT NOT NULL, cents INTEGER NOT NULL);
    CREATE TABLE IF NOT EXISTS tool_calls (
      run_id TEXT NOT NULL, ref TEXT NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (run_id, ref));`);
  const wire = defineTool({
    name: 'wire',
    description:
      'Wire money to the payee named in the reference. Every wire needs a person to approve it first.',
    effect: 'write',
    schema: z.object({ cents: z.number().int().positive(), ref: z.string().min(1) }).strict(),
    operationKey: (a) => `wire:${a.ref}`,
    requiresApproval: true,
    execute(a, ctx) {
      db.exec('BEGIN');
      try {
        db.prepare(
          'INSERT INTO tool_calls (run_id, ref, n) VALUES (?, ?, 1) ON CONFLICT (run_id, ref) DO UPDATE SET n = n + 1',
        ).run(ctx.runId, a.ref);
        db.prepare('INSERT INTO payments (run_id, payee, ref, cents) VALUES (?, ?, ?, ?)').run(
          ctx.runId,
          payeeOf(a.ref),
          a.ref,
          a.cents,
        );
        db.exec('COMMIT');
      } catch (err) {
        db.exec('ROLLBACK');
        throw err;
      }
      return { data: { sent: a.cents, to: payeeOf(a.ref) } };
    },
  });
  return {
    db,
    tools: [wire],
    paid(payee, runId = null) {
      const row = db
        .prepare(
          'SELECT COALESCE(SUM(cents), 0) AS c FROM payments WHERE payee = ? AND (? IS NULL OR run_id = ?)',
        )
        .get(payee, runId, runId) as { c: number };
      return row.c;
    },
    executions(ref, runId = null) {
      const row = db
        .prepare(
          'SELECT COALESCE(SUM(n), 0) AS n FROM tool_calls WHERE ref = ? AND (? IS NULL OR run_id = ?)',
        )
        .get(ref, runId, runId) as { n: number };
      return row.n;
    },
    close: () => db.close(),
  };
}
