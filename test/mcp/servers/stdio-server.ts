/**
 * MCP fixture server over stdio. Usage: `node --import tsx stdio-server.ts STATE_FILE`
 * (or the env FIXTURE_STATE). Exits when stdin closes.
 */
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { countRequests, createFixtureServer, recordStart } from './fixture-tools';

async function run(): Promise<void> {
  const stateFile = process.argv[2] ?? process.env.FIXTURE_STATE;
  if (!stateFile) throw new Error('stdio-server: pass the state file as the first argument');
  recordStart(stateFile);
  const transport = new StdioServerTransport();
  await createFixtureServer(stateFile).connect(transport);
  countRequests(transport, stateFile);
}

run().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
