/**
 * An MCP tool declares `similarArgs` in agent.config.json (docs/mcp.md): its proposals get a
 * near-repeat key; an arg the server's schema lacks is refused when the tool is built.
 */
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { createMcpTool } from '../../tools/mcp/mcp-tool';
import type { McpConnection } from '../../tools/mcp/client-pool';
import { ToolRegistry } from '../../tools/registry';

const listed: Tool = {
  name: 'search_docs',
  description: 'Search the docs',
  inputSchema: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
  annotations: { readOnlyHint: true },
};
const connection = {
  name: 'docs',
  retryAfterMs: 1000,
  callTool: async () => ({ content: [] }),
} as unknown as McpConnection;

it('reworded queries of an MCP tool with similarArgs share a near-repeat key', () => {
  const tool = createMcpTool({ connection, listed, override: { similarArgs: ['query'] } });
  const reg = new ToolRegistry([tool]);
  const a = reg.normalize(tool.name, { query: 'Disk full on db-1' });
  const b = reg.normalize(tool.name, { query: 'db-1: full disk' });
  const c = reg.normalize(tool.name, { query: 'memory full on db-1' });
  expect(a.fingerprint).not.toBe(b.fingerprint);
  expect(a.similarKey).toBeDefined();
  expect(a.similarKey).toBe(b.similarKey);
  expect(c.similarKey).not.toBe(a.similarKey);
});

it('a similarArgs entry the server schema lacks is an error naming it', () => {
  expect(() => createMcpTool({ connection, listed, override: { similarArgs: ['qeury'] } })).toThrow(
    /similarArgs names "qeury"/,
  );
});
