/**
 * The console's HTTP server (`agentctl console`, docs/cli.md; its rules: docs/security.md
 * "The console"): one page and a small JSON API over the client API.
 *
 *   GET  /?token=T          exchanged for an HttpOnly, SameSite=Strict session cookie, then 303 to
 *                           `/`; the exchange also replaces T (onRotate gets the new URL): a
 *                           browser's history keeps the redirect's source URL (Chromium does),
 *                           so the token it holds must be dead by then
 *   GET  /                  the page (with the cookie)
 *   GET  /api/inbox         a page of the runs waiting for a person and of the running ones, with
 *                           their true totals (`?page=N&rpage=N&q=ID-PREFIX&reason=R`)
 *   POST /api/approve|deny|resume|stop   an action, JSON body (client/console/actions.ts)
 *   POST /api/token         rotation: a new token and session, the old ones (URL, cookie, Bearer) dead at once
 *
 * Security, the codec server's rules (codec/codec-server.ts) and more:
 *  - a random token is required on every request (`Authorization: Bearer T`, or the session
 *    cookie the page's `?token=T` was exchanged for), compared in constant time; a missing, stale
 *    or forged one is 403. A POST authenticated by the cookie must also carry `X-Console-Request: 1`,
 *    a header no cross-site form can send (and a cross-site fetch only after a preflight, which is
 *    refused);
 *  - a request with an `Origin` header must come from an allowed origin (the console's own,
 *    plus `--origin`), else 403: another site's page cannot drive it, even through the
 *    operator's browser;
 *  - POSTs must be `application/json` (415), so a cross-site form cannot send one without a
 *    preflight, which is refused;
 *  - it binds to loopback unless told otherwise, and refuses to start on any other address
 *    without TLS (the token and the operator's decisions would cross the network in clear);
 *  - the page is served with a nonce CSP, no referrer (the Web UI link does not leak the
 *    token), no framing, no caching.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { isIP, type AddressInfo } from 'node:net';
import { networkInterfaces, hostname } from 'node:os';
import type { Client } from '@temporalio/client';
import { CliError, Exit } from '../format';
import { isActionName, runAction, type ConsoleOperator } from './actions';
import type { ArgDisplayHints } from '../../tools/arg-display';
import { checkSearch, InboxCache, readInbox } from './inbox';
import { renderPage } from './page';

/** The console's default port. */
export const DEFAULT_CONSOLE_PORT = 8844;
/** Larger bodies are refused (413): an action is a few hundred bytes. */
const MAX_BODY_BYTES = 64 * 1024;

/** Options of {@link startConsoleServer}. */
export interface ConsoleServerOptions {
  readonly client: Client;
  readonly operator: ConsoleOperator;
  /** The Web UI link of a run. */
  readonly linkOf: (runId: string) => string;
  /** Only runs on this task queue (default: all of the namespace). */
  readonly taskQueue?: string;
  /** Bind address (default 127.0.0.1). Any non-loopback address needs `tls`. */
  readonly host?: string;
  /** Port (default {@link DEFAULT_CONSOLE_PORT}; 0 picks a free one). */
  readonly port?: number;
  /** PEM files of the certificate and its key: HTTPS. */
  readonly tls?: { readonly certFile: string; readonly keyFile: string };
  /** More origins allowed besides the console's own (a proxy's, say). */
  readonly origins?: readonly string[];
  /** The token (default 32 random bytes, base64url). */
  readonly token?: string;
  /** How often the page refreshes, ms (default 2000). */
  readonly refreshMs?: number;
  /** Runs per page of the inbox (default 25). */
  readonly pageSize?: number;
  /** How to show each tool's args (tools/arg-display.ts `displayHintsOf(tools)`), by tool name. */
  readonly display?: Readonly<Record<string, ArgDisplayHints>>;
  /** How long an action waits for the worker's answer, ms (default 30 s); then it is `unconfirmed` (504). */
  readonly confirmMs?: number;
  /** One line per action and per refused request (default: none). */
  readonly log?: (line: string) => void;
  /**
   * Called with the new URL whenever the token changes: a rotation, and each time a page trades
   * its URL's token for a cookie (a token works once in a URL). `agentctl console` prints it.
   */
  readonly onRotate?: (url: string) => void;
}

/** A running console. */
export interface ConsoleServerHandle {
  /** The URL to open, with the token. */
  readonly url: string;
  /** The URL without the token. */
  readonly base: string;
  readonly port: number;
  /** The current token (a rotation changes it, and {@link url}). */
  readonly token: string;
  /** The name of the page's cookie (one per port: cookies ignore ports). */
  readonly cookieName: string;
  /** Origins a browser request may come from. */
  readonly origins: readonly string[];
  /** Issues a new token and session; the old ones (URL, Bearer, cookies) stop working at once. Returns the new URL. */
  rotateToken(): string;
  close(): Promise<void>;
}

/** True for an address only this machine reaches. */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  if (h === 'localhost' || h === '::1') return true;
  const v4 = h.startsWith('::ffff:') ? h.slice(7) : h;
  return isIP(v4) === 4 && v4.startsWith('127.');
}

const digest = (s: string): Buffer => createHash('sha256').update(s).digest();
/** Constant time; both hashed, so lengths need not match and are not revealed. */
const sameToken = (given: string, token: string): boolean => timingSafeEqual(digest(given), digest(token));

/** The token a request carries, and how: a Bearer header, the page's cookie, or `?token=` on the page. */
function tokenOf(
  req: IncomingMessage,
  url: URL,
  cookieName: string,
  page: boolean,
): { token: string; via: 'bearer' | 'cookie' | 'query' } | null {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
  if (m) return { token: m[1]!, via: 'bearer' };
  const q = page ? url.searchParams.get('token') : null;
  if (q !== null) return { token: q, via: 'query' };
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === cookieName)
      return { token: part.slice(eq + 1).trim(), via: 'cookie' };
  }
  return null;
}

/** Names a browser may use for this server: for loopback the loopback names, else the host's. */
function originsOf(host: string, port: number, scheme: string, extra: readonly string[]): string[] {
  const names = new Set<string>();
  if (isLoopback(host)) ['127.0.0.1', 'localhost', '[::1]'].forEach((n) => names.add(n));
  else if (host === '0.0.0.0' || host === '::') {
    names.add(hostname());
    for (const list of Object.values(networkInterfaces()))
      for (const a of list ?? []) names.add(a.family === 'IPv6' ? `[${a.address}]` : a.address);
  } else names.add(host.includes(':') && !host.startsWith('[') ? `[${host}]` : host);
  const own = [...names].map((n) => `${scheme}://${n}:${port}`);
  return [...own, ...extra.map((o) => o.replace(/\/+$/, ''))];
}

async function readJson(
  req: IncomingMessage,
): Promise<{ ok: true; value: unknown } | { ok: false; status: number; message: string }> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES)
      return { ok: false, status: 413, message: `body over ${MAX_BODY_BYTES} bytes` };
    chunks.push(chunk as Buffer);
  }
  try {
    return { ok: true, value: JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown };
  } catch {
    return { ok: false, status: 400, message: 'body is not JSON' };
  }
}

/** Reads the TLS files; a missing or unreadable one is exit 2 naming it. */
function tlsOf(tls: { certFile: string; keyFile: string }): { cert: Buffer; key: Buffer } {
  const read = (flag: string, file: string): Buffer => {
    try {
      return readFileSync(file);
    } catch (err) {
      throw new CliError(
        Exit.USAGE,
        `console: ${flag} ${file}: cannot read (${(err as NodeJS.ErrnoException).code})`,
      );
    }
  };
  return { cert: read('--tls-cert', tls.certFile), key: read('--tls-key', tls.keyFile) };
}

/** Refuses (exit 2) a non-loopback address without TLS: the token and every decision would cross the network in clear. */
export function checkBind(host: string, tls: boolean): void {
  if (!tls && !isLoopback(host))
    throw new CliError(
      Exit.USAGE,
      `console: refusing to serve on ${host} without TLS: it is not a loopback address, and the token and ` +
        'every decision would cross the network in clear. Give --tls-cert FILE --tls-key FILE, or bind to 127.0.0.1',
    );
}

/**
 * Starts the console; resolves once it listens. A non-loopback `host` without `tls` is refused
 * before anything listens (CliError, exit 2).
 */
export async function startConsoleServer(o: ConsoleServerOptions): Promise<ConsoleServerHandle> {
  const host = o.host ?? '127.0.0.1';
  checkBind(host, o.tls !== undefined);
  let token = o.token ?? randomBytes(32).toString('base64url');
  // Set once the port is known (cookies ignore ports: two consoles on one host must not share one).
  let cookieName = 'alg_console';
  const log = o.log ?? (() => undefined);
  const refreshMs = o.refreshMs ?? 2000;
  const cache = new InboxCache();
  const scheme = o.tls ? 'https' : 'http';
  let origins = new Set<string>();
  const operatorLine = o.operator.key
    ? `${o.operator.actor} (signed with the operator key)`
    : `${o.operator.actor} (unsigned: only workers in open mode accept)`;

  /** The page's cookie: HttpOnly (no script reads it), SameSite=Strict, this server only; '' clears it. */
  const cookieOf = (value: string): string =>
    `${cookieName}=${value}; Path=/; HttpOnly; SameSite=Strict${scheme === 'https' ? '; Secure' : ''}` +
    (value === '' ? '; Max-Age=0' : '');
  /** The cookie's secret: one per console, until a rotation. */
  let session = randomBytes(32).toString('base64url');
  let rotate: (all: boolean) => string = () => {
    throw new Error('the console is not listening yet');
  };

  const send = (res: ServerResponse, status: number, body: unknown): void => {
    res.setHeader('Content-Type', 'application/json; charset=utf-8');
    res.writeHead(status).end(JSON.stringify(body));
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Referrer-Policy', 'no-referrer');
    res.setHeader('X-Frame-Options', 'DENY');
    res.setHeader('Vary', 'Origin');
    const url = new URL(req.url ?? '/', 'http://console.invalid');
    const origin = req.headers.origin;
    // Not a browser (curl, a script) sends no Origin: the token alone decides. A preflight is
    // always refused: the page is same-origin and needs none.
    if ((origin !== undefined && !origins.has(origin)) || req.method === 'OPTIONS') {
      log(`refused ${req.method} ${url.pathname} from origin ${origin ?? '-'}`);
      return send(res, 403, { ok: false, message: 'origin not allowed' });
    }
    const isPage = url.pathname === '/';
    const given = tokenOf(req, url, cookieName, isPage && req.method === 'GET');
    if (given === null || !sameToken(given.token, given.via === 'cookie' ? session : token)) {
      log(`refused ${req.method} ${url.pathname}: ${given === null ? 'no' : 'a wrong or stale'} token`);
      if (given?.via === 'cookie') res.setHeader('Set-Cookie', cookieOf(''));
      return send(res, 403, {
        ok: false,
        message:
          'a valid console token is required (open the URL agentctl console printed; a restarted console or a rotated token has a new one)',
      });
    }
    if (given.via === 'query') {
      // The token leaves the URL before the page exists: a cookie the page's script cannot read,
      // sent to this origin only, and a redirect, so history keeps `/`, not `/?token=…`.
      res.setHeader('Set-Cookie', cookieOf(session));
      // The browser keeps `/?token=T` in its history all the same (as a redirect's source): T is
      // spent here, and the new URL goes to whoever started the console (scripts: the new token).
      rotate(false);
      log('the page took the token (it works once in a URL); a new one was issued');
      res.setHeader('Location', '/');
      res.writeHead(303).end();
      return;
    }
    // A cookie rides on any same-site request: a POST it authenticates must say it is the page's.
    if (given.via === 'cookie' && req.method === 'POST' && req.headers['x-console-request'] !== '1') {
      log(`refused ${req.method} ${url.pathname}: cookie without X-Console-Request`);
      return send(res, 403, {
        ok: false,
        message: 'a POST with the cookie needs the header X-Console-Request: 1',
      });
    }
    if (isPage) {
      if (req.method !== 'GET') return send(res, 405, { ok: false, message: 'use GET' });
      const nonce = randomBytes(16).toString('base64');
      res.setHeader(
        'Content-Security-Policy',
        `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; connect-src 'self'; ` +
          "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
      );
      res.setHeader('Content-Type', 'text/html; charset=utf-8');
      res.writeHead(200).end(renderPage({ nonce, operator: operatorLine, refreshMs }));
      return;
    }
    if (url.pathname === '/api/token') {
      if (req.method !== 'POST') return send(res, 405, { ok: false, message: 'use POST' });
      const fresh = rotate(true);
      log(`token rotated (${given.via}): the old URL, cookie and Bearer token no longer work`);
      if (given.via === 'cookie') {
        // The page keeps working on the new cookie; the new token is not handed to its script.
        res.setHeader('Set-Cookie', cookieOf(session));
        return send(res, 200, {
          ok: true,
          message: 'token rotated: the old URL, token and other pages’ cookies no longer work',
        });
      }
      return send(res, 200, { ok: true, message: 'token rotated', token, url: fresh });
    }
    if (url.pathname === '/api/inbox') {
      if (req.method !== 'GET') return send(res, 405, { ok: false, message: 'use GET' });
      const int = (name: string): number | undefined => {
        const v = url.searchParams.get(name);
        return v !== null && /^\d{1,6}$/.test(v) ? Number(v) : undefined;
      };
      const search = url.searchParams.get('q') || undefined;
      const reason = url.searchParams.get('reason') || undefined;
      try {
        if (search) checkSearch(search);
        if (reason) checkSearch(reason);
      } catch (err) {
        return send(res, 400, { ok: false, message: (err as Error).message });
      }
      const page = int('page');
      const runningPage = int('rpage');
      return send(
        res,
        200,
        await readInbox(o.client, {
          linkOf: o.linkOf,
          cache,
          ...(o.display ? { display: o.display } : {}),
          ...(o.taskQueue ? { taskQueue: o.taskQueue } : {}),
          ...(o.pageSize ? { pageSize: o.pageSize } : {}),
          ...(page === undefined ? {} : { page }),
          ...(runningPage === undefined ? {} : { runningPage }),
          ...(search ? { search } : {}),
          ...(reason ? { reason } : {}),
        }),
      );
    }
    const action = /^\/api\/([a-z]+)$/.exec(url.pathname)?.[1];
    if (!action || !isActionName(action)) return send(res, 404, { ok: false, message: 'no such page' });
    if (req.method !== 'POST') return send(res, 405, { ok: false, message: 'use POST' });
    if (!/^application\/json\s*(;|$)/i.test(req.headers['content-type'] ?? ''))
      return send(res, 415, { ok: false, message: 'the body must be application/json' });
    const body = await readJson(req);
    if (!body.ok) return send(res, body.status, { ok: false, message: `${action}: ${body.message}` });
    const answer = await runAction(
      o.client,
      o.operator,
      action,
      body.value,
      o.confirmMs === undefined ? {} : { confirmMs: o.confirmMs },
    );
    const runId = (body.value as { runId?: unknown } | null)?.runId;
    log(
      `${action} ${typeof runId === 'string' ? runId : '-'} by ${o.operator.actor}: ${answer.status} ${answer.body.message}`,
    );
    return send(res, answer.status, answer.body);
  };

  // Requests being answered: close() waits for them, so none outlives the caller's client.
  const inflight = new Set<Promise<void>>();
  const listener = (req: IncomingMessage, res: ServerResponse): void => {
    const p = handle(req, res)
      .catch((err: unknown) => {
        log(`error: ${(err as Error).message}`);
        if (!res.headersSent) send(res, 502, { ok: false, message: (err as Error).message });
        else res.destroy();
      })
      .finally(() => inflight.delete(p));
    inflight.add(p);
  };
  const server: Server = o.tls ? createHttpsServer(tlsOf(o.tls), listener) : createHttpServer(listener);
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        new CliError(
          Exit.USAGE,
          `console: cannot listen on ${host}:${o.port ?? DEFAULT_CONSOLE_PORT}: ${err.code ?? err.message}`,
        ),
      ),
    );
    server.listen(o.port ?? DEFAULT_CONSOLE_PORT, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  cookieName = `alg_console_${port}`;
  origins = new Set(originsOf(host, port, scheme, o.origins ?? []));
  const shown = host === '0.0.0.0' || host === '::' ? hostname() : host.includes(':') ? `[${host}]` : host;
  const base = `${scheme}://${shown}:${port}`;
  rotate = (all: boolean) => {
    token = randomBytes(32).toString('base64url');
    if (all) session = randomBytes(32).toString('base64url');
    const url = `${base}/?token=${token}`;
    o.onRotate?.(url);
    return url;
  };
  return {
    get url() {
      return `${base}/?token=${token}`;
    },
    base,
    port,
    get token() {
      return token;
    },
    cookieName,
    origins: [...origins],
    rotateToken: () => rotate(true),
    close: async () => {
      const closed = new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      });
      await Promise.allSettled([...inflight]);
      await closed;
    },
  };
}
