/**
 * A tiny MCP notes server (stdio) for the five-minute guide in README.md: two reads and a
 * write, with the annotations the guard maps to effects. Notes live in the JSON file
 * NOTES_FILE (default data/notes.json). Run by the worker through demo/mcp/agent.config.json.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

interface Store {
  version: number;
  notes: Record<string, string>;
}

const file = resolve(process.env.NOTES_FILE ?? 'data/notes.json');
const load = (): Store =>
  existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Store) : { version: 0, notes: {} };
const save = (s: Store): void => {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, JSON.stringify(s, null, 2));
};
const reply = (value: Record<string, unknown>) => ({
  content: [{ type: 'text' as const, text: JSON.stringify(value) }],
  structuredContent: value,
});

const server = new McpServer({ name: 'notes', version: '1.0.0' });
server.registerTool(
  'list_notes',
  { description: 'All notes, by id.', annotations: { readOnlyHint: true } },
  () => reply({ notes: load().notes }),
);
server.registerTool(
  'add_note',
  {
    description: 'Create or replace the note `id`.',
    inputSchema: { id: z.string().min(1), text: z.string().min(1) },
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false },
  },
  ({ id, text }) => {
    const s = load();
    s.notes[id] = text;
    s.version += 1;
    save(s);
    console.error(`notes-server: wrote note ${id} (version ${s.version})`);
    return reply({ id, version: s.version });
  },
);
server.registerTool(
  'stats',
  { description: 'The store version (the progress probe).', annotations: { readOnlyHint: true } },
  () => reply({ version: load().version }),
);

server.connect(new StdioServerTransport()).catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
