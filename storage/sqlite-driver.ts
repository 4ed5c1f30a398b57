/**
 * Node's built-in SQLite (`node:sqlite`), loaded in this one place for everything of the
 * package that opens a SQLite file. Built into Node, so an install compiles and downloads
 * nothing (a native SQLite module needs a prebuilt binary from the internet or a build
 * against Node's headers, and a machine that reaches only the package registry has neither).
 *
 * On Node 22 loading the module prints "ExperimentalWarning: SQLite is an experimental
 * feature and might change at any time" once per process. A user of the ledger did not ask
 * about SQLite and must not see it, so while the module loads exactly that warning is
 * dropped; every other warning passes. Node 24 prints none. Loaded on first use, so a
 * process on PostgreSQL never loads it.
 */
import type * as sqlite from 'node:sqlite';
import { runInThisContext } from 'node:vm';
import { assertNodeFloor } from '../common/node-floor';

export type { DatabaseSync, DatabaseSyncOptions, SQLInputValue, StatementSync } from 'node:sqlite';

let loaded: typeof sqlite | undefined;

/**
 * The `node:sqlite` module, loaded on the first call without its experimental warning.
 * @throws {Error} naming the Node floor and its remedy on a Node without an unflagged `node:sqlite`
 */
export function nodeSqlite(): typeof sqlite {
  if (loaded) return loaded;
  assertNodeFloor();
  const proc = mainProcess();
  const emitWarning = proc.emitWarning;
  proc.emitWarning = function (this: unknown, warning: string | Error, ...rest: unknown[]): void {
    if (isSqliteExperimentalWarning(warning, rest[0])) return;
    return (emitWarning as (...a: unknown[]) => void).call(this, warning, ...rest);
  } as typeof proc.emitWarning;
  try {
    loaded = proc.getBuiltinModule('node:sqlite');
  } finally {
    proc.emitWarning = emitWarning;
  }
  if (!loaded) {
    // Node 23.0-23.3: the module exists only behind --experimental-sqlite.
    throw new Error(
      `agent-loop-guard needs Node's built-in node:sqlite, which this Node (v${process.versions.node}) ` +
        'does not load without a flag: use Node 22.13 or newer, or 24',
    );
  }
  return loaded;
}

/**
 * The process object of Node's main context, whose `emitWarning` Node's own warnings go
 * through. Under jest, code runs in a context of its own where `process` (its
 * `getBuiltinModule`, `require('process')`, `createRequire`) is a copy, so a patch there
 * would not reach Node's warning; outside jest this is `process` itself.
 */
function mainProcess(): NodeJS.Process {
  try {
    return runInThisContext('process') as NodeJS.Process;
  } catch {
    return process;
  }
}

/** Node's SQLite warning: `emitWarning(message, 'ExperimentalWarning')` or with `{ type }`. */
function isSqliteExperimentalWarning(warning: string | Error, typeOrOptions: unknown): boolean {
  const type =
    typeof typeOrOptions === 'string'
      ? typeOrOptions
      : ((typeOrOptions as { type?: unknown } | undefined)?.type ?? (warning as Error)?.name);
  const message = typeof warning === 'string' ? warning : warning?.message;
  return type === 'ExperimentalWarning' && /^SQLite is an experimental feature/.test(String(message));
}

/**
 * Opens the SQLite database at `path` (`:memory:` for one in memory), creating the file
 * unless `options.readOnly`.
 */
export function openSqlite(path: string, options?: sqlite.DatabaseSyncOptions): sqlite.DatabaseSync {
  return new (nodeSqlite().DatabaseSync)(path, options ?? {});
}

/** SQLite's primary result codes that mean "locked by another connection, try again". */
const SQLITE_BUSY = 5;
const SQLITE_LOCKED = 6;

/**
 * True when `err` is SQLite's answer that another connection holds the lock past the busy
 * timeout (SQLITE_BUSY, SQLITE_LOCKED and their extended codes), from `node:sqlite`
 * (`errcode`) or a native driver that names the code (`code: 'SQLITE_BUSY'`, better-sqlite3,
 * which a tool may still use for its own database).
 */
export function isSqliteBusy(err: unknown): boolean {
  const e = err as { code?: unknown; errcode?: unknown } | null | undefined;
  if (typeof e?.code !== 'string') return false;
  if (e.code === 'ERR_SQLITE_ERROR' && typeof e.errcode === 'number') {
    const primary = e.errcode & 0xff;
    return primary === SQLITE_BUSY || primary === SQLITE_LOCKED;
  }
  return /^SQLITE_(BUSY|LOCKED)/.test(e.code);
}
