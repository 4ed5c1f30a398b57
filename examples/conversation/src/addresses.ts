/**
 * The app's own store and tools: a SQLite address book, a write (`update_address`, business key
 * `address:ID`) that counts its real executions here, and the finishing tool (`complete_task`).
 */
import { DatabaseSync } from 'node:sqlite';
import { z } from 'zod';
import { defineTool, type AnyTool } from 'agent-loop-guard';

export function openAddressBook(file: string): {
  db: DatabaseSync;
  tools: AnyTool[];
  calls: { update_address: number };
} {
  const db = new DatabaseSync(file);
  db.exec('CREATE TABLE IF NOT EXISTS addresses (id TEXT PRIMARY KEY, address TEXT NOT NULL)');
  const calls = { update_address: 0 };
  const tools: AnyTool[] = [
    defineTool({
      name: 'update_address',
      description: "Change a customer's postal address.",
      effect: 'write',
      schema: z.object({ customer_id: z.string().min(1), address: z.string().min(1) }).strict(),
      operationKey: (a) => `address:${a.customer_id}`,
      execute(a) {
        calls.update_address += 1;
        db.prepare(
          'INSERT INTO addresses (id, address) VALUES (?, ?) ON CONFLICT(id) DO UPDATE SET address = excluded.address',
        ).run(a.customer_id, a.address);
        return { data: { updated: a.customer_id } };
      },
    }),
    defineTool({
      name: 'complete_task',
      description: 'Finish the conversation with a summary.',
      effect: 'read',
      schema: z.object({ summary: z.string().min(1) }).strict(),
      execute: (a) => ({ data: { summary: a.summary }, terminal: true }),
    }),
  ];
  return { db, tools, calls };
}
