/**
 * The user's own store and tools: a SQLite ticket table, a read (`search_tickets`), a write
 * with a business key (`file_ticket`, `ticket:ID`), a write a person must approve
 * (`page_oncall`). No finishing tool: the worker's built-in `complete_task` ends a run. No
 * progress hook: the worker's default progress source counts new read results and committed writes.
 */
import { DatabaseSync } from 'node:sqlite';
import { z } from 'zod';
import { defineTool, type AnyTool } from 'agent-loop-guard';

/** Real executions of each tool, counted by the tools themselves. */
export type Calls = Record<'search_tickets' | 'file_ticket' | 'page_oncall', number>;

export function openTicketDesk(file: string): { db: DatabaseSync; tools: AnyTool[]; calls: Calls } {
  const db = new DatabaseSync(file);
  db.exec('CREATE TABLE IF NOT EXISTS tickets (id TEXT PRIMARY KEY, title TEXT NOT NULL)');
  const calls: Calls = { search_tickets: 0, file_ticket: 0, page_oncall: 0 };
  const tools: AnyTool[] = [
    defineTool({
      name: 'search_tickets',
      description: 'Search tickets by title.',
      effect: 'read',
      schema: z.object({ query: z.string().min(1) }).strict(),
      execute(a) {
        calls.search_tickets += 1;
        const rows = db
          .prepare('SELECT id, title FROM tickets WHERE title LIKE ? ORDER BY id')
          .all(`%${a.query}%`);
        return { data: rows };
      },
    }),
    defineTool({
      name: 'file_ticket',
      description: 'File a ticket.',
      effect: 'write',
      schema: z.object({ id: z.string().min(1), title: z.string().min(1) }).strict(),
      operationKey: (a) => `ticket:${a.id}`,
      execute(a) {
        calls.file_ticket += 1;
        db.prepare('INSERT INTO tickets (id, title) VALUES (?, ?)').run(a.id, a.title);
        return { data: { filed: a.id } };
      },
    }),
    defineTool({
      name: 'page_oncall',
      description: 'Page the on-call engineer about an incident.',
      effect: 'write',
      requiresApproval: true,
      schema: z.object({ incident: z.string().min(1) }).strict(),
      operationKey: (a) => `page:${a.incident}`,
      execute(a) {
        calls.page_oncall += 1;
        return { data: { paged: a.incident } };
      },
    }),
  ];
  return { db, tools, calls };
}
