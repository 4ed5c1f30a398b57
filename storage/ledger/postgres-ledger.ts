/**
 * PostgreSQL dialect of the ledger: several workers on several hosts. The first claim is
 * one `INSERT … ON CONFLICT DO NOTHING`; everything that must read before it writes runs in
 * a transaction holding the row lock (`SELECT … FOR UPDATE`). Lease times come from
 * `clock_timestamp()` of the database server, never from a worker's clock. The protocol
 * itself is {@link SqlLedger}'s.
 */
import type * as Pg from 'pg';
import type { Pool, PoolClient, PoolConfig, QueryResultRow } from 'pg';
import { loadOptional } from '../../common/optional-dep';
import { POSTGRES_MIGRATIONS, POSTGRES_MIGRATIONS_TABLE } from '../migrations';
import { SqlLedger, type MaybePromise, type SqlAccess, type SqlFragment } from './sql-ledger';

/** Serialises migrations of every worker against one database (arbitrary constant). */
const MIGRATION_LOCK_ID = 7_349_021_113;

/** What a unit runs on: the pool (each statement commits on its own) or one client in a transaction. */
type PgConnection = Pick<PoolClient, 'query'>;

/** Translates portable `?` placeholders to `$1…` (skipping quoted literals). */
export function toPgPlaceholders(sql: string): string {
  let n = 0;
  let out = '';
  let quote: string | null = null;
  for (const ch of sql) {
    if (quote) {
      if (ch === quote) quote = null;
      out += ch;
    } else if (ch === "'" || ch === '"') {
      quote = ch;
      out += ch;
    } else if (ch === '?') {
      out += `$${++n}`;
    } else {
      out += ch;
    }
  }
  return out;
}

/** Options of {@link PostgresLedger}. */
export interface PostgresLedgerOptions {
  /** Schema to use (sets `search_path`); created by {@link PostgresLedger.migrate} if missing. */
  schema?: string;
  /** Pool size (default 10). */
  maxConnections?: number;
  /** Extra `pg` pool settings. */
  pool?: PoolConfig;
}

/**
 * The ledger's own `LEDGER_URL` query parameters for PostgreSQL, taken out of the URL
 * before `pg` sees it (docs/ledger.md "Pool and timeouts").
 */
export const POSTGRES_URL_PARAMETERS = {
  schema: 'schema to use (search_path); created on migrate',
  pool_max: 'connections in the pool (integer >= 1; default 10)',
  connect_timeout_ms:
    'how long a query waits for a connection, new or from the pool, before it fails (ms; default 10000; 0 = forever)',
  idle_timeout_ms: 'an idle pooled connection is closed after this (ms; default 10000; 0 = never)',
  statement_timeout_ms:
    "the server cancels a statement running longer (ms; PostgreSQL's statement_timeout; default none)",
} as const;

/** libpq-style parameters passed to `pg` as they are (TLS, names, session options). */
const PG_PASSTHROUGH_PARAMETERS: ReadonlySet<string> = new Set([
  'sslmode',
  'ssl',
  'sslcert',
  'sslkey',
  'sslrootcert',
  'sslnegotiation',
  'uselibpqcompat',
  'application_name',
  'fallback_application_name',
  'options',
  'client_encoding',
  'host',
]);

/** Default time a query waits for a connection: a dead server fails the call instead of hanging it. */
const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;

/** A `postgres://` URL split into what `pg` gets and the ledger's own settings. */
export interface ParsedPostgresUrl {
  /** The URL without the ledger's own parameters. */
  readonly connectionString: string;
  readonly options: PostgresLedgerOptions;
}

/**
 * Splits the ledger's parameters ({@link POSTGRES_URL_PARAMETERS}) out of a `postgres://` URL.
 * Throws a TypeError naming the parameter for a bad value or a parameter that is neither
 * the ledger's nor a known libpq one (a typo must not be ignored silently).
 */
export function parsePostgresUrl(url: string): ParsedPostgresUrl {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    // Not a WHATWG URL (e.g. a socket path in the host): leave it to `pg` as it is.
    return {
      connectionString: url,
      options: { pool: { connectionTimeoutMillis: DEFAULT_CONNECT_TIMEOUT_MS } },
    };
  }
  const ms = (name: string, value: string): number => {
    const n = Number(value);
    if (value.trim() === '' || !Number.isInteger(n) || n < 0) {
      throw new TypeError(
        `LEDGER_URL parameter ${name} must be an integer number of ms >= 0, got "${value}"`,
      );
    }
    return n;
  };
  const pool: PoolConfig = { connectionTimeoutMillis: DEFAULT_CONNECT_TIMEOUT_MS };
  let schema: string | undefined;
  let maxConnections: number | undefined;
  for (const [name, value] of [...u.searchParams.entries()]) {
    switch (name) {
      case 'schema':
        schema = value;
        break;
      case 'pool_max': {
        const n = Number(value);
        if (!Number.isInteger(n) || n < 1) {
          throw new TypeError(`LEDGER_URL parameter pool_max must be an integer >= 1, got "${value}"`);
        }
        maxConnections = n;
        break;
      }
      case 'connect_timeout_ms':
        pool.connectionTimeoutMillis = ms(name, value);
        break;
      case 'idle_timeout_ms':
        pool.idleTimeoutMillis = ms(name, value);
        break;
      case 'statement_timeout_ms':
        pool.statement_timeout = ms(name, value);
        break;
      default:
        if (!PG_PASSTHROUGH_PARAMETERS.has(name)) {
          throw new TypeError(
            `unknown LEDGER_URL parameter "${name}" (the ledger's: ${Object.keys(POSTGRES_URL_PARAMETERS).join(', ')}; ` +
              `passed to pg: ${[...PG_PASSTHROUGH_PARAMETERS].join(', ')})`,
          );
        }
        continue;
    }
    u.searchParams.delete(name);
  }
  return {
    connectionString: u.toString(),
    options: {
      ...(schema !== undefined ? { schema } : {}),
      ...(maxConnections !== undefined ? { maxConnections } : {}),
      pool,
    },
  };
}

/** The PostgreSQL {@link Ledger}. Open with `openLedger('postgres://…')` or construct directly. */
export class PostgresLedger extends SqlLedger<PgConnection> {
  /** @inheritDoc */
  readonly backend = 'postgres' as const;
  protected readonly now = 'clock_timestamp()';
  protected readonly forUpdate = ' FOR UPDATE';
  // Row locks only: an absent key cannot be locked, so a claim inserts first.
  protected readonly locksAbsentKeys = false;
  protected readonly migrations = POSTGRES_MIGRATIONS;
  protected readonly migrationsTable = POSTGRES_MIGRATIONS_TABLE;
  protected readonly location: string;
  private readonly pool: Pool;
  private readonly schema: string | undefined;

  /**
   * Creates the pool; connects lazily. Does not migrate; call {@link migrate}.
   * @param connectionString a `postgres://` URL
   */
  constructor(connectionString: string, options: PostgresLedgerOptions = {}) {
    super();
    if (options.schema !== undefined && !/^[A-Za-z_][A-Za-z0-9_]*$/.test(options.schema)) {
      throw new TypeError(`invalid ledger schema name "${options.schema}" (letters, digits, underscore)`);
    }
    this.schema = options.schema;
    this.location = options.schema ?? 'the database';
    // `pg` is an optional package (common/optional-dep.ts): loaded here, by the first PostgreSQL ledger.
    const { Pool } = loadOptional<typeof Pg>('pg', 'the PostgreSQL ledger');
    this.pool = new Pool({
      connectionString,
      max: options.maxConnections ?? 10,
      ...(options.schema ? { options: `-c search_path=${options.schema}` } : {}),
      ...options.pool,
    });
    // An idle client losing its connection must not crash the worker; the next query reconnects.
    this.pool.on('error', () => undefined);
  }

  /** Checks that the database answers; used by `openLedger` to fail fast with a clear message. */
  async ping(): Promise<void> {
    await this.pool.query('SELECT 1');
  }

  /** @inheritDoc */
  async close(): Promise<void> {
    await this.pool.end();
  }

  protected ms(param: string): string {
    return `(${param}::double precision * interval '1 millisecond')`;
  }

  protected msUntil(column: string): string {
    return `(EXTRACT(EPOCH FROM (${column} - ${this.now})) * 1000)::double precision`;
  }

  protected override migrationPrelude(): SqlFragment[] {
    return [
      { sql: 'SELECT pg_advisory_xact_lock(?)', params: [MIGRATION_LOCK_ID] },
      ...(this.schema ? [{ sql: `CREATE SCHEMA IF NOT EXISTS ${this.schema}`, params: [] }] : []),
    ];
  }

  protected async connect<T>(access: SqlAccess, fn: (c: PgConnection) => MaybePromise<T>): Promise<T> {
    // A single guarded statement is atomic on its own; only read-decide-write needs a client.
    if (access !== 'transaction') return fn(this.pool);
    const c = await this.pool.connect();
    try {
      await c.query('BEGIN');
      const value = await fn(c);
      await c.query('COMMIT');
      return value;
    } catch (err) {
      await c.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      c.release();
    }
  }

  protected async exec(c: PgConnection, sql: string, params: readonly unknown[]): Promise<number> {
    return (await c.query(toPgPlaceholders(sql), [...params])).rowCount ?? 0;
  }

  protected async query<T>(c: PgConnection, sql: string, params: readonly unknown[]): Promise<T[]> {
    return (await c.query<QueryResultRow>(toPgPlaceholders(sql), [...params])).rows as T[];
  }

  protected nextToken(): SqlFragment {
    // One sequence for all keys; evaluated in the statement that stores the token.
    return { sql: "nextval('ledger_fencing_seq')", params: [] };
  }

  protected isoTime(value: unknown): string | null {
    return value === null ? null : (value as Date).toISOString();
  }

  protected parseJson(value: unknown): unknown {
    // `pg` parses json columns already.
    return value ?? null;
  }
}
