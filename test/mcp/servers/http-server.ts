/**
 * MCP fixture server over Streamable HTTP, stateful (one session per client, as most
 * hosted servers are), so a restart loses every session. Usage:
 * `node --import tsx http-server.ts STATE_FILE [PORT]`; prints `listening PORT` when ready.
 * Requires the header `authorization: Bearer fixture-token` (answers 401 otherwise).
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { countRequests, createFixtureServer, recordStart } from './fixture-tools';

/** The bearer token the fixture expects. */
export const FIXTURE_TOKEN = 'fixture-token';

async function body(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  return text ? JSON.parse(text) : undefined;
}

function run(): void {
  const stateFile = process.argv[2];
  if (!stateFile) throw new Error('http-server: pass the state file as the first argument');
  const port = Number(process.argv[3] ?? 0);
  recordStart(stateFile);
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const http = createServer((req, res) => {
    void (async () => {
      if (req.headers.authorization !== `Bearer ${FIXTURE_TOKEN}`) {
        res.writeHead(401).end('unauthorized');
        return;
      }
      const sid = req.headers['mcp-session-id'];
      const parsed = req.method === 'POST' ? await body(req) : undefined;
      let transport = typeof sid === 'string' ? sessions.get(sid) : undefined;
      if (!transport) {
        if (sid !== undefined || !isInitializeRequest(parsed)) {
          res.writeHead(404, { 'content-type': 'application/json' }).end(
            JSON.stringify({
              jsonrpc: '2.0',
              error: { code: -32001, message: 'Session not found' },
              id: null,
            }),
          );
          return;
        }
        const t = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id) => void sessions.set(id, t),
        });
        t.onclose = () => {
          if (t.sessionId) sessions.delete(t.sessionId);
        };
        await createFixtureServer(stateFile).connect(t);
        countRequests(t, stateFile);
        transport = t;
      }
      await transport.handleRequest(req, res, parsed);
    })().catch((err: unknown) => {
      console.error(err);
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  http.listen(port, '127.0.0.1', () => {
    const addr = http.address();
    console.log(`listening ${typeof addr === 'object' && addr ? addr.port : port}`);
  });
}

run();
