/**
 * The plumbing the local protocol servers share (the OpenAI one here, the Anthropic one in
 * the repository's tests): a `node:http` server on 127.0.0.1 with a random port that records
 * every request, refuses what the real API would refuse, and answers the rest from a script.
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

/** Starts a JSON server; `handle` answers each recorded request (after `delayMs`, when set). */
export async function startJsonServer(
  handle: (req: RecordedRequest) => HttpReply,
  options: { readonly delayMs?: number } = {},
): Promise<RunningServer> {
  const requests: RecordedRequest[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', async () => {
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
      // A model's pace, when asked for: the request is recorded at once, the reply waits.
      if (options.delayMs) await new Promise((ok) => setTimeout(ok, options.delayMs));
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

/** A script: steps consumed in order, or a function of the request number (0-based). */
export type Script<S> = readonly S[] | ((index: number, request: RecordedRequest) => S);

/** One provider's protocol, as {@link startScriptedServer} serves it. */
export interface ScriptedProtocol<S> {
  /**
   * The provider's refusal of a request it would not serve (wrong route or key, no JSON
   * body, a broken tool protocol), or null to accept it. Refused requests use no step.
   */
  refuse(request: RecordedRequest): HttpReply | null;
  /** The answer of a scripted step (a reply or a scripted error) to the accepted `body`. */
  answer(step: S, index: number, body: Record<string, unknown>): HttpReply;
  /** The answer once the script has no step left. */
  exhausted(index: number): HttpReply;
}

/** A running scripted protocol server. */
export interface ScriptedServer extends RunningServer {
  /** Bodies of the accepted requests, in order. */
  readonly accepted: () => Array<Record<string, unknown>>;
}

/** Starts a server that answers each request `protocol` accepts with the script's next step. */
export async function startScriptedServer<S>(
  script: Script<S>,
  protocol: ScriptedProtocol<S>,
  options: { readonly delayMs?: number } = {},
): Promise<ScriptedServer> {
  const accepted: Array<Record<string, unknown>> = [];
  const server = await startJsonServer((req) => {
    const refusal = protocol.refuse(req);
    if (refusal) return refusal;
    const body = req.body as Record<string, unknown>;
    const index = accepted.push(body) - 1;
    const step = typeof script === 'function' ? script(index, req) : script[index];
    return step === undefined ? protocol.exhausted(index) : protocol.answer(step, index, body);
  }, options);
  return { ...server, accepted: () => accepted };
}

/** Whether a server that expects `apiKey` (when set) must refuse a request with `headers` as a 401. */
export function wrongKey(headers: IncomingHttpHeaders, apiKey: string | undefined): boolean {
  return apiKey !== undefined && presentedKey(headers) !== apiKey;
}

/** The API key a request carried, in `x-api-key` or `Authorization: Bearer`. */
export function presentedKey(headers: IncomingHttpHeaders): string | undefined {
  const xKey = headers['x-api-key'];
  if (typeof xKey === 'string' && xKey) return xKey;
  const auth = headers.authorization;
  if (typeof auth === 'string' && auth.startsWith('Bearer ')) return auth.slice('Bearer '.length);
  return undefined;
}
