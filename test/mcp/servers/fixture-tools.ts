/**
 * The tools of the MCP fixture servers (stdio and Streamable HTTP). Every call is counted
 * in a JSON state file the test reads, so a test can assert that a call did NOT reach the
 * server. The file outlives the process: a killed and restarted server keeps counting.
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { z } from 'zod';

/** What the state file holds. */
export interface FixtureState {
  /** Calls that reached each tool's handler. */
  counters: Record<string, number>;
  /** `tools/call` requests that reached the server, by tool (even those its own arg check refused). */
  requests: Record<string, number>;
  notes: Record<string, string>;
  /** Bumped by every write: the progress probe's value. */
  version: number;
  /** The server processes that wrote the file (one per start). */
  pids: number[];
}

/** Reads the state file (an empty state when it does not exist yet). */
export function readState(file: string): FixtureState {
  if (!existsSync(file)) return { counters: {}, requests: {}, notes: {}, version: 0, pids: [] };
  return JSON.parse(readFileSync(file, 'utf8')) as FixtureState;
}

function update(file: string, change: (s: FixtureState) => void): FixtureState {
  const s = readState(file);
  change(s);
  // Write then rename: a test reading mid-write never sees half a file.
  writeFileSync(`${file}.tmp`, JSON.stringify(s));
  renameSync(`${file}.tmp`, file);
  return s;
}

function counted(file: string, tool: string, change: (s: FixtureState) => void = () => undefined) {
  return update(file, (s) => {
    s.counters[tool] = (s.counters[tool] ?? 0) + 1;
    change(s);
  });
}

const json = (value: Record<string, unknown>) => ({
  content: [{ type: 'text' as const, text: JSON.stringify(value) }],
  structuredContent: value,
});

/** Records this process in the state file (once per server start). */
export function recordStart(stateFile: string): void {
  update(stateFile, (s) => s.pids.push(process.pid));
}

/** Counts every `tools/call` request arriving on a connected transport. */
export function countRequests(transport: Transport, stateFile: string): void {
  const deliver = transport.onmessage;
  transport.onmessage = (message, extra) => {
    const m = message as { method?: string; params?: { name?: unknown } };
    if (m.method === 'tools/call') {
      const tool = String(m.params?.name);
      update(stateFile, (s) => {
        s.requests[tool] = (s.requests[tool] ?? 0) + 1;
      });
    }
    deliver?.(message, extra);
  };
}

/** An McpServer with the fixture tools, counting into `stateFile`. */
export function createFixtureServer(stateFile: string): McpServer {
  const server = new McpServer({ name: 'fixture', version: '1.0.0' });
  server.registerTool(
    'lookup',
    {
      description: 'Look a term up (read-only).',
      inputSchema: { query: z.string().min(1), limit: z.number().int().positive().default(3) },
      annotations: { readOnlyHint: true },
    },
    ({ query, limit }) => {
      counted(stateFile, 'lookup');
      return json({ query, hits: Array.from({ length: limit }, (_, i) => `${query}-${i}`) });
    },
  );
  server.registerTool(
    'add_note',
    {
      description: 'Store a note (a write).',
      inputSchema: { id: z.string().min(1), text: z.string(), requestId: z.string().optional() },
      annotations: { readOnlyHint: false, idempotentHint: false },
    },
    ({ id, text }) => {
      const s = counted(stateFile, 'add_note', (st) => {
        st.notes[id] = text;
        st.version += 1;
      });
      return json({ id, version: s.version });
    },
  );
  server.registerTool(
    'delete_note',
    {
      description: 'Delete a note.',
      inputSchema: { id: z.string().min(1) },
      annotations: { destructiveHint: true, idempotentHint: true },
    },
    ({ id }) => {
      counted(stateFile, 'delete_note', (st) => {
        delete st.notes[id];
        st.version += 1;
      });
      return json({ deleted: id });
    },
  );
  server.registerTool(
    'stats',
    { description: 'The store version (the progress probe).', annotations: { readOnlyHint: true } },
    () => json({ store: { version: readState(stateFile).version } }),
  );
  server.registerTool(
    'env_keys',
    {
      description: "The names of this process's environment variables.",
      annotations: { readOnlyHint: true },
    },
    () => json({ keys: Object.keys(process.env).sort() }),
  );
  server.registerTool(
    'refuse',
    {
      description: 'Always answers isError.',
      inputSchema: { why: z.string() },
      annotations: { readOnlyHint: true },
    },
    ({ why }) => {
      counted(stateFile, 'refuse');
      return { content: [{ type: 'text' as const, text: `refused: ${why}` }], isError: true };
    },
  );
  return server;
}
