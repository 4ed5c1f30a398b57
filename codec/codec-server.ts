/**
 * A Temporal codec server: the HTTP endpoint through which the Temporal Web UI and the
 * `temporal` CLI show decoded payloads to operators who may see them, while the server and
 * its history keep only ciphertext (https://docs.temporal.io/production-deployment/data-encryption).
 *
 * Protocol (Temporal's remote codec): `POST <base>/decode` and `POST <base>/encode`, body and
 * answer `{"payloads": [{"metadata": {k: base64}, "data": base64}]}` (the proto3 JSON form of
 * `Payloads`), header `X-Namespace` (one key ring serves every namespace here).
 *
 * Security:
 *  - CORS only for the configured UI origins (the browser calls the codec server directly
 *    from the UI page); preflights allow `authorization, content-type, x-namespace`;
 *  - with a token, every POST needs `Authorization: Bearer <token>` (compared in constant
 *    time) and is answered 401 otherwise; preflights carry no credentials, so they are not
 *    checked;
 *  - it binds to 127.0.0.1 unless told otherwise: whoever reaches it can decrypt.
 */
import { timingSafeEqual, createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';

/** The UI of `temporal server start-dev` (and `npm run dev:server`). */
export const DEFAULT_UI_ORIGIN = 'http://localhost:8233';
export const DEFAULT_CODEC_PORT = 8888;
/** Larger bodies are refused (413): a page of history is far below this. */
const MAX_BODY_BYTES = 32 * 1024 * 1024;
const ALLOWED_HEADERS = 'authorization, content-type, x-namespace';

/** Options of {@link startCodecServer}. */
export interface CodecServerOptions {
  readonly codec: PayloadCodec;
  /** Bind address (default 127.0.0.1). */
  readonly host?: string;
  /** Port (default 8888; 0 picks a free one). */
  readonly port?: number;
  /** Origins allowed by CORS (default the dev server's UI, http://localhost:8233). */
  readonly origins?: readonly string[];
  /** When set, POSTs need `Authorization: Bearer <token>`. */
  readonly token?: string;
  /** One line per request served or refused (default: none). */
  readonly log?: (line: string) => void;
}

/** A running codec server. */
export interface CodecServerHandle {
  /** `http://host:port`: what `--ui-codec-endpoint` and `--codec-endpoint` take. */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

const digest = (s: string): Buffer => createHash('sha256').update(s).digest();

function authorised(req: IncomingMessage, token: string | undefined): boolean {
  if (!token) return true;
  const header = req.headers.authorization ?? '';
  const m = /^Bearer\s+(.+)$/i.exec(header.trim());
  // Hash both sides: timingSafeEqual needs equal lengths, and the hash hides the length.
  return m !== null && timingSafeEqual(digest(m[1]!.trim()), digest(token));
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new HttpError(413, `body over ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function parsePayloads(body: string): temporal.api.common.v1.IPayload[] {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    throw new HttpError(400, 'body is not JSON');
  }
  const payloads = (json as { payloads?: unknown } | null)?.payloads;
  if (!Array.isArray(payloads)) throw new HttpError(400, 'body must be {"payloads": [...]}');
  try {
    return temporal.api.common.v1.Payloads.fromObject({ payloads }).payloads;
  } catch (err) {
    throw new HttpError(400, `payloads are malformed: ${(err as Error).message}`);
  }
}

function payloadsJson(payloads: temporal.api.common.v1.IPayload[]): string {
  const msg = temporal.api.common.v1.Payloads.fromObject({ payloads });
  return JSON.stringify(temporal.api.common.v1.Payloads.toObject(msg, { bytes: String }));
}

/** Starts the server; resolves once it listens. */
export async function startCodecServer(o: CodecServerOptions): Promise<CodecServerHandle> {
  const origins = new Set((o.origins ?? [DEFAULT_UI_ORIGIN]).map((s) => s.replace(/\/+$/, '')));
  const log = o.log ?? (() => undefined);

  const cors = (req: IncomingMessage, res: ServerResponse): boolean => {
    const origin = req.headers.origin;
    res.setHeader('Vary', 'Origin');
    if (origin === undefined) return true; // not a browser (CLI, SDK): CORS does not apply
    if (!origins.has(origin)) return false;
    res.setHeader('Access-Control-Allow-Origin', origin);
    res.setHeader('Access-Control-Allow-Credentials', 'true');
    return true;
  };

  const send = (res: ServerResponse, status: number, body?: string): void => {
    if (body !== undefined) res.setHeader('Content-Type', 'application/json');
    res.writeHead(status).end(body);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? '/').split('?')[0]!.replace(/\/+$/, '');
    const op = path.endsWith('/decode') ? 'decode' : path.endsWith('/encode') ? 'encode' : null;
    const allowedOrigin = cors(req, res);
    if (req.method === 'OPTIONS') {
      if (!allowedOrigin) {
        log(`refused preflight from origin ${req.headers.origin}`);
        return send(res, 403);
      }
      res.setHeader('Access-Control-Allow-Methods', 'POST, OPTIONS');
      res.setHeader('Access-Control-Allow-Headers', ALLOWED_HEADERS);
      res.setHeader('Access-Control-Max-Age', '600');
      return send(res, 204);
    }
    if (!allowedOrigin) {
      log(`refused ${req.method} ${path} from origin ${req.headers.origin}`);
      return send(res, 403, JSON.stringify({ error: 'origin not allowed' }));
    }
    if (!op) return send(res, 404, JSON.stringify({ error: 'POST /encode or /decode' }));
    if (req.method !== 'POST') return send(res, 405, JSON.stringify({ error: 'use POST' }));
    if (!authorised(req, o.token)) {
      log(`refused ${op}: missing or wrong bearer token`);
      res.setHeader('WWW-Authenticate', 'Bearer');
      return send(res, 401, JSON.stringify({ error: 'a valid Authorization: Bearer token is required' }));
    }
    try {
      const payloads = parsePayloads(await readBody(req));
      const out = op === 'decode' ? await o.codec.decode(payloads) : await o.codec.encode(payloads);
      log(`${op} ${payloads.length} payload(s), namespace ${req.headers['x-namespace'] ?? '-'}`);
      return send(res, 200, payloadsJson(out));
    } catch (err) {
      const status = err instanceof HttpError ? err.status : 400;
      log(`${op} failed: ${(err as Error).message}`);
      return send(res, status, JSON.stringify({ error: (err as Error).message }));
    }
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) send(res, 500, JSON.stringify({ error: String(err) }));
      else res.destroy();
    });
  });
  const host = o.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port ?? DEFAULT_CODEC_PORT, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      }),
  };
}
