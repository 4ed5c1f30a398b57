// The example's MCP server (stdio): one read-only tool, `lookup`, answering from a tiny
// built-in glossary. Every call that reaches it is counted in DOCS_CALLS_FILE, so the
// example can show that the call the guard refused never got here.
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const GLOSSARY = {
  temporal: 'Temporal runs workflows durably: their state survives crashes and restarts.',
  mcp: 'The Model Context Protocol connects tools to agents over stdio or HTTP.',
};

const callsFile = process.env.DOCS_CALLS_FILE;
if (!callsFile) {
  console.error('docs-server: set DOCS_CALLS_FILE');
  process.exit(2);
}

function countCall() {
  const calls = existsSync(callsFile) ? JSON.parse(readFileSync(callsFile, 'utf8')) : { lookup: 0 };
  calls.lookup += 1;
  writeFileSync(`${callsFile}.tmp`, JSON.stringify(calls));
  renameSync(`${callsFile}.tmp`, callsFile);
}

const server = new McpServer({ name: 'docs', version: '1.0.0' });
server.registerTool(
  'lookup',
  {
    description: 'Look a topic up in the glossary.',
    inputSchema: { topic: z.string().min(1) },
    annotations: { readOnlyHint: true },
  },
  async ({ topic }) => {
    countCall();
    const text = GLOSSARY[topic.trim().toLowerCase()] ?? `no entry for "${topic}"`;
    return { content: [{ type: 'text', text }], structuredContent: { topic, text } };
  },
);
await server.connect(new StdioServerTransport());
