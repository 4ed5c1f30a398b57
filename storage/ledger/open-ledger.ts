/**
 * One setting picks the backend: `LEDGER_URL=sqlite:data/agent.db` (embedded default,
 * one host) or `postgres://…` (several workers on several hosts).
 */
import fs from 'node:fs';
import path from 'node:path';
import { LedgerConnectionError } from './errors';
import { parsePostgresUrl, PostgresLedger } from './postgres-ledger';
import { SqliteLedger } from './sqlite-ledger';
import type { Ledger } from './types';

/** The URL used when `LEDGER_URL` is unset. */
export const DEFAULT_LEDGER_URL = 'sqlite:data/agent.db';

/** `LEDGER_URL` from the environment, or {@link DEFAULT_LEDGER_URL}. */
export function ledgerUrlFromEnv(env: NodeJS.ProcessEnv = process.env): string {
  const url = env.LEDGER_URL?.trim();
  return url ? url : DEFAULT_LEDGER_URL;
}

/** Replaces the password of a URL with `***` so it can be logged and shown in errors. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return url.replace(/(\/\/[^:/@]+:)[^@]*@/, '$1***@');
  }
}

/** Options of {@link openLedger}. */
export interface OpenLedgerOptions {
  /** Apply pending migrations before returning (default true). */
  migrate?: boolean;
}

const HOW_TO_FIX =
  'Set LEDGER_URL to sqlite:PATH (embedded, one host; e.g. sqlite:data/agent.db) or ' +
  'postgres://USER:PASSWORD@HOST:PORT/DB[?schema=NAME&pool_max=N&connect_timeout_ms=MS&statement_timeout_ms=MS&idle_timeout_ms=MS] (several hosts).';

/**
 * Opens the ledger named by `url` and (by default) migrates it.
 *
 * - `sqlite:PATH` — a file (its folder is created) or `sqlite::memory:`
 * - `postgres://…` / `postgresql://…` — optional query parameters `schema`, `pool_max`,
 *   `connect_timeout_ms`, `idle_timeout_ms`, `statement_timeout_ms` (POSTGRES_URL_PARAMETERS;
 *   an unknown one is an error), libpq's TLS and session parameters pass through to `pg`
 *
 * Unknown schemes and unreachable databases throw {@link LedgerConnectionError} naming the
 * URL (password redacted) and how to fix it; so does a `postgres://` URL when the optional
 * `pg` package is not installed (the message says what to install; `cause` is the
 * `OptionalDependencyError`).
 */
export async function openLedger(
  url: string = ledgerUrlFromEnv(),
  options: OpenLedgerOptions = {},
): Promise<Ledger> {
  const shown = redactUrl(url);
  let ledger: Ledger;
  if (url.startsWith('sqlite:')) {
    const file = url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
    if (!file) throw new LedgerConnectionError(`Ledger URL "${shown}" names no file. ${HOW_TO_FIX}`, shown);
    try {
      if (file !== ':memory:') fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
      ledger = new SqliteLedger(file);
    } catch (err) {
      throw new LedgerConnectionError(
        `Cannot open the SQLite ledger at "${shown}": ${(err as Error).message}. Check that the folder is writable. ${HOW_TO_FIX}`,
        shown,
        { cause: err },
      );
    }
  } else if (/^postgres(ql)?:\/\//.test(url)) {
    let pg: PostgresLedger;
    try {
      // The ledger's own parameters (pool, timeouts, schema) never reach `pg`; a typo is an error.
      const { connectionString, options } = parsePostgresUrl(url);
      pg = new PostgresLedger(connectionString, options);
    } catch (err) {
      throw new LedgerConnectionError(`Ledger URL "${shown}": ${(err as Error).message}`, shown, {
        cause: err,
      });
    }
    try {
      await pg.ping();
    } catch (err) {
      await pg.close().catch(() => undefined);
      throw new LedgerConnectionError(
        `Cannot reach the PostgreSQL ledger at "${shown}": ${(err as Error).message || String(err)}. ` +
          `Check that the server runs and accepts this user/database. ${HOW_TO_FIX}`,
        shown,
        { cause: err },
      );
    }
    ledger = pg;
  } else {
    throw new LedgerConnectionError(`Unsupported ledger URL "${shown}". ${HOW_TO_FIX}`, shown);
  }
  if (options.migrate ?? true) {
    try {
      await ledger.migrate();
    } catch (err) {
      await ledger.close().catch(() => undefined);
      throw new LedgerConnectionError(
        `Cannot migrate the ledger at "${shown}": ${(err as Error).message}`,
        shown,
        {
          cause: err,
        },
      );
    }
  }
  return ledger;
}
