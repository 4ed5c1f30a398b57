/**
 * The plumbing both local protocol servers share: a `node:http` server on 127.0.0.1
 * with a random port that records every request and answers from a script.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A request the server received. */
export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  /** The parsed JSON body (undefined when it was not JSON). */
  readonly body: unknown;
}

/** An HTTP answer. */
export interface HttpReply {
  readonly status: number;
  readonly body: unknown;
  readonly headers?: Record<string, string>;
}

/** A running server. */
export interface RunningServer {
  /** `http://127.0.0.1:PORT` */
  readonly origin: string;
  readonly requests: RecordedRequest[];
  close(): Promise<void>;
}

/** Starts a JSON server; `handle` answers each recorded request. */
export async function startJsonServer(handle: (req: RecordedRequest) => HttpReply): Promise<RunningServer> {
  const requests: RecordedRequest[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        body = undefined;
      }
      const recorded: RecordedRequest = {
        method: req.method ?? '',
        path: (req.url ?? '').split('?')[0] ?? '',
        headers: req.headers,
        body,
      };
      requests.push(recorded);
      let reply: HttpReply;
      try {
        reply = handle(recorded);
      } catch (err) {
        reply = {
          status: 500,
          body: { error: { type: 'api_error', message: `test server bug: ${(err as Error).message}` } },
        };
      }
      res.writeHead(reply.status, { 'content-type': 'application/json', ...(reply.headers ?? {}) });
      res.end(JSON.stringify(reply.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The API key a request carried, in `x-api-key` or `Authorization: Bearer`. */
export function presentedKey(headers: IncomingHttpHeaders): string | undefined {
  const xKey = headers['x-api-key'];
  if (typeof xKey === 'string' && xKey) return xKey;
  const auth = headers.authorization;
  if (typeof auth === 'string' && auth.startsWith('Bearer ')) return auth.slice('Bearer '.length);
  return undefined;
}
