/**
 * A real ledger-database outage without stopping the cluster: a dedicated PostgreSQL
 * database (`outage_<random>`) that can be closed (`ALTER DATABASE … ALLOW_CONNECTIONS
 * false`, every open connection to it terminated — new connections are refused with
 * "database … is not currently accepting connections") and opened again. Other databases of
 * the cluster, and every other test using it, carry on. Used by test/workflows/db-outage.test.ts
 * and `npm run outage` (scripts/outage.ts).
 */
import crypto from 'node:crypto';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import { Context } from '@temporalio/activity';
import { Client } from 'pg';

/** A dedicated database that can be made unreachable and reachable again. */
export class DatabaseOutage {
  /** When the current (or last) outage began, ms since the epoch; null before the first. */
  startedAt: number | null = null;
  /** When the last outage ended; null while it lasts. */
  endedAt: number | null = null;

  private constructor(
    private readonly admin: Client,
    /** The database's name. */
    readonly name: string,
    /** Its `postgres://` URL (a LEDGER_URL). */
    readonly url: string,
  ) {}

  /**
   * Creates `outage_<random>` on the cluster of `adminUrl` (a superuser's URL to any other
   * database of it). Refuses a host that is not loopback: this closes databases.
   */
  static async create(adminUrl: string): Promise<DatabaseOutage> {
    const u = new URL(adminUrl);
    if (!['127.0.0.1', 'localhost', '[::1]'].includes(u.hostname)) {
      throw new Error(`database outages are made on a loopback PostgreSQL only, not ${u.hostname}`);
    }
    const admin = new Client({ connectionString: adminUrl });
    await admin.connect();
    const name = `outage_${crypto.randomBytes(5).toString('hex')}`;
    await admin.query(`CREATE DATABASE ${name}`);
    u.pathname = `/${name}`;
    u.search = '';
    return new DatabaseOutage(admin, name, u.toString());
  }

  /** True while the database refuses connections. */
  get down(): boolean {
    return this.startedAt !== null && this.endedAt === null;
  }

  /** Closes the database: refuses new connections and terminates every open one. */
  async begin(): Promise<void> {
    await this.admin.query(`ALTER DATABASE ${this.name} ALLOW_CONNECTIONS false`);
    await this.admin.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`,
      [this.name],
    );
    this.startedAt = Date.now();
    this.endedAt = null;
  }

  /** Opens the database again. */
  async end(): Promise<void> {
    await this.admin.query(`ALTER DATABASE ${this.name} ALLOW_CONNECTIONS true`);
    this.endedAt = Date.now();
  }

  /** Runs a query in the database (open it first). */
  async query<T extends Record<string, unknown>>(sql: string, params: unknown[] = []): Promise<T[]> {
    const c = new Client({ connectionString: this.url });
    await c.connect();
    try {
      return (await c.query<T>(sql, params)).rows;
    } finally {
      await c.end();
    }
  }

  /** Drops the database (whoever is still connected) and closes the admin connection. */
  async drop(): Promise<void> {
    try {
      await this.admin.query(`ALTER DATABASE ${this.name} ALLOW_CONNECTIONS true`).catch(() => undefined);
      await this.admin.query(`DROP DATABASE IF EXISTS ${this.name} WITH (FORCE)`);
    } finally {
      await this.admin.end();
    }
  }
}

/** One attempt of the `runTool` activity for a watched tool, as the worker saw it. */
export interface ToolAttempt {
  attempt: number;
  /** When it started, ms since the epoch. */
  at: number;
  /** Null when the activity returned; else why it failed. */
  error: string | null;
}

/**
 * An activity interceptor that reports every `runTool` attempt for `tool` (`attempts`) and
 * calls `before` ahead of each one — e.g. to begin an outage right when the write starts,
 * after its plan. It changes nothing the activity does.
 */
export function watchToolAttempts(
  tool: string,
  before?: (attempt: number) => Promise<void>,
): { attempts: ToolAttempt[]; factory: ActivityInterceptorsFactory } {
  const attempts: ToolAttempt[] = [];
  const factory: ActivityInterceptorsFactory = () => ({
    inbound: {
      async execute(input, next) {
        const info = Context.current().info;
        const call = input.args[0] as { tool?: unknown } | undefined;
        if (info.activityType !== 'runTool' || call?.tool !== tool) return next(input);
        await before?.(info.attempt);
        const seen: ToolAttempt = { attempt: info.attempt, at: Date.now(), error: null };
        attempts.push(seen);
        try {
          return await next(input);
        } catch (err) {
          seen.error = err instanceof Error ? err.message : String(err);
          throw err;
        }
      },
    },
  });
  return { attempts, factory };
}
