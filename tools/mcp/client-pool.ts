/**
 * One MCP client per configured server per worker, built on the official SDK's `Client`
 * and its stdio / Streamable HTTP transports.
 *
 * A connection is opened at worker start (the tools must be listed before any planner
 * runs) and re-opened lazily: when a stdio child exits or a call fails on the transport,
 * the client is dropped and the next call connects again (a new child, a new HTTP
 * session). A failure that certainly happened before the request reached the server is
 * retried once on a fresh connection within the same call; anything else surfaces as
 * {@link McpUnavailableError}, classified RETRYABLE (classify.ts).
 *
 * The SDK is loaded at the first connect (sdk.ts): a pool without servers never needs it.
 */
import { resolve } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { messageOf } from '../classify';
import { isStdio, type LoadedConfig, type McpServerConfig } from './config';
import { McpUnavailableError } from './errors';
import { mcpSdk } from './sdk';

/** Defaults of the per-server settings. */
export const MCP_DEFAULTS = { timeoutMs: 60_000, connectTimeoutMs: 15_000, retryAfterMs: 1000 } as const;

const CLIENT_INFO = { name: 'agent-loop-guard', version: '0.1.0' };

/** Error codes a request never reached the server with (DNS, refused connection). */
const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

/**
 * True when the request certainly did not reach the tool: the connection was refused,
 * the transport was not connected, or the HTTP server refused the request before reading
 * it (401/403 auth, 404 unknown session after a restart, 429 rate limit).
 */
function certainlyNotSent(err: unknown): boolean {
  if (err instanceof mcpSdk().StreamableHTTPError) return [401, 403, 404, 429].includes(err.code ?? -1);
  const e = err as { code?: unknown; message?: unknown; cause?: { code?: unknown } };
  if (typeof e?.code === 'string' && NOT_SENT_CODES.has(e.code)) return true;
  if (typeof e?.cause?.code === 'string' && NOT_SENT_CODES.has(e.cause.code)) return true;
  return e?.message === 'Not connected';
}

/**
 * The environment of a stdio server: what the config gives plus PATH, nothing else. The
 * SDK would also pass HOME, USER, SHELL, TERM and LOGNAME; they are blanked (Node omits
 * undefined values) so the worker's environment, and its secrets, never leak to a server.
 */
export function stdioEnv(configured: Readonly<Record<string, string>> = {}): Record<string, string> {
  const blank: Record<string, string | undefined> = {};
  for (const k of mcpSdk().DEFAULT_INHERITED_ENV_VARS) blank[k] = undefined;
  return { ...blank, PATH: process.env.PATH ?? '', ...configured } as Record<string, string>;
}

/** Options of one call. */
export interface CallOptions {
  readonly signal?: AbortSignal;
  /** Called on every progress notification of the call (keeps the activity's heartbeat alive). */
  readonly onProgress?: () => void;
}

/** The connection to one configured server. */
export class McpConnection {
  private client: Client | null = null;
  private transport: Transport | null = null;
  private opening: Promise<Client> | null = null;
  private closed = false;
  /** The server's configured (or default) settings. */
  readonly timeoutMs: number;
  readonly connectTimeoutMs: number;
  readonly retryAfterMs: number;
  /** Connections opened so far (1 after start; +1 per reconnect). */
  connects = 0;

  constructor(
    readonly name: string,
    readonly server: McpServerConfig,
    private readonly baseDir: string,
  ) {
    this.timeoutMs = server.timeoutMs ?? MCP_DEFAULTS.timeoutMs;
    this.connectTimeoutMs = server.connectTimeoutMs ?? MCP_DEFAULTS.connectTimeoutMs;
    this.retryAfterMs = server.retryAfterMs ?? MCP_DEFAULTS.retryAfterMs;
  }

  /** The stdio server's process id while connected (null for HTTP or when down). */
  get pid(): number | null {
    return this.transport && this.transport instanceof mcpSdk().StdioClientTransport
      ? this.transport.pid
      : null;
  }

  private newTransport(): Transport {
    const { StdioClientTransport, StreamableHTTPClientTransport } = mcpSdk();
    const s = this.server;
    if (isStdio(s)) {
      return new StdioClientTransport({
        command: s.command,
        args: s.args ?? [],
        env: stdioEnv(s.env),
        ...(s.cwd ? { cwd: resolve(this.baseDir, s.cwd) } : {}),
        stderr: 'inherit',
      });
    }
    return new StreamableHTTPClientTransport(new URL(s.url), {
      requestInit: { headers: { ...(s.headers ?? {}) } },
      // A lost SSE stream is not retried behind our back: the next call reconnects.
      reconnectionOptions: {
        maxRetries: 0,
        initialReconnectionDelay: 1000,
        maxReconnectionDelay: 1000,
        reconnectionDelayGrowFactor: 1,
      },
    });
  }

  /** The live client, connecting when there is none (one connect at a time). */
  open(): Promise<Client> {
    if (this.closed) {
      return Promise.reject(new McpUnavailableError(`MCP server "${this.name}": closed`, this.name, false));
    }
    if (this.client) return Promise.resolve(this.client);
    this.opening ??= this.connect().finally(() => {
      this.opening = null;
    });
    return this.opening;
  }

  private async connect(): Promise<Client> {
    const client = new (mcpSdk().Client)(CLIENT_INFO, { capabilities: {} });
    const transport = this.newTransport();
    try {
      await client.connect(transport, { timeout: this.connectTimeoutMs });
    } catch (err) {
      await client.close().catch(() => undefined);
      throw new McpUnavailableError(
        `MCP server "${this.name}": cannot connect (${messageOf(err)})`,
        this.name,
        false,
        { cause: err },
      );
    }
    // A stdio child that exits (or a transport that closes) drops the client; the next call reconnects.
    client.onclose = () => {
      if (this.client === client) {
        this.client = null;
        this.transport = null;
      }
    };
    if (this.closed) {
      await client.close().catch(() => undefined);
      throw new McpUnavailableError(`MCP server "${this.name}": closed`, this.name, false);
    }
    this.client = client;
    this.transport = transport;
    this.connects += 1;
    return client;
  }

  /** Forgets `client` (closing it in the background) so the next call connects again. */
  private drop(client: Client): void {
    if (this.client !== client) return;
    this.client = null;
    this.transport = null;
    client.close().catch(() => undefined);
  }

  /** Every tool the server lists (all pages). */
  async listTools(): Promise<Tool[]> {
    const client = await this.open();
    const tools: Tool[] = [];
    let cursor: string | undefined;
    try {
      do {
        const page = await client.request(
          { method: 'tools/list', params: cursor ? { cursor } : {} },
          mcpSdk().ListToolsResultSchema,
          { timeout: this.connectTimeoutMs },
        );
        tools.push(...page.tools);
        cursor = page.nextCursor;
      } while (cursor);
    } catch (err) {
      this.drop(client);
      throw new McpUnavailableError(
        `MCP server "${this.name}": tools/list failed (${messageOf(err)})`,
        this.name,
        false,
        { cause: err },
      );
    }
    return tools;
  }

  /**
   * Calls a tool. Resolves with the server's CallToolResult (`isError` included); rejects
   * with the server's JSON-RPC error (McpError) when it refused the request, or with
   * {@link McpUnavailableError} when the transport failed (`sent` false only when the
   * request certainly did not reach the server).
   */
  async callTool(tool: string, args: unknown, options: CallOptions = {}): Promise<CallToolResult> {
    // Without output-schema validation on purpose: Client.callTool would turn a result the
    // server already produced into an InvalidParams error, which reads as "not performed".
    const attempt = async (client: Client): Promise<CallToolResult> =>
      client.request(
        { method: 'tools/call', params: { name: tool, arguments: (args ?? {}) as Record<string, unknown> } },
        mcpSdk().CallToolResultSchema,
        {
          timeout: this.timeoutMs,
          ...(options.signal ? { signal: options.signal } : {}),
          ...(options.onProgress ? { onprogress: options.onProgress, resetTimeoutOnProgress: true } : {}),
        },
      ) as Promise<CallToolResult>;
    const wasOpen = this.client !== null;
    let client = await this.open();
    try {
      return await attempt(client);
    } catch (err) {
      if (options.signal?.aborted || !this.isTransportFailure(err)) throw err;
      this.drop(client);
      if (!certainlyNotSent(err) || !wasOpen) throw this.unavailable(err);
    }
    // The old connection was stale (a restarted server, a lost session) and nothing was
    // sent: one fresh connection, within this call.
    client = await this.open();
    try {
      return await attempt(client);
    } catch (err) {
      if (options.signal?.aborted || !this.isTransportFailure(err)) throw err;
      this.drop(client);
      throw this.unavailable(err);
    }
  }

  private isTransportFailure(err: unknown): boolean {
    // A JSON-RPC error the server sent is an answer, not a transport failure.
    const { ErrorCode, McpError } = mcpSdk();
    if (err instanceof McpError)
      return err.code === ErrorCode.ConnectionClosed || err.code === ErrorCode.RequestTimeout;
    return true;
  }

  private unavailable(err: unknown): McpUnavailableError {
    return new McpUnavailableError(
      `MCP server "${this.name}": ${messageOf(err)}`,
      this.name,
      !certainlyNotSent(err),
      { cause: err },
    );
  }

  /** Closes the connection for good (a stdio child is terminated). */
  async close(): Promise<void> {
    this.closed = true;
    const pending = this.opening;
    if (pending) await pending.catch(() => undefined);
    const client = this.client;
    this.client = null;
    this.transport = null;
    await client?.close().catch(() => undefined);
  }
}

/** The connections of one worker, by server name. */
export class McpClientPool {
  private readonly connections = new Map<string, McpConnection>();

  constructor(loaded: LoadedConfig) {
    for (const [name, server] of Object.entries(loaded.config.mcpServers)) {
      this.connections.set(name, new McpConnection(name, server, loaded.baseDir));
    }
  }

  /** The connection to `name`. */
  get(name: string): McpConnection | undefined {
    return this.connections.get(name);
  }

  /** Every connection. */
  all(): McpConnection[] {
    return [...this.connections.values()];
  }

  /** Closes every connection (worker shutdown). */
  async close(): Promise<void> {
    await Promise.all(this.all().map((c) => c.close()));
  }
}
