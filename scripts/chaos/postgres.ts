/**
 * A private PostgreSQL instance for one chaos run: `initdb` in a temp dir, on a free
 * loopback port, so restarting it (the chaos) disturbs no other database user on this host
 * — the shared cluster on :5432 keeps serving the tests. Uses the PostgreSQL server
 * binaries of the local installation (Debian: /usr/lib/postgresql/<version>/bin); as root,
 * the server runs as the `postgres` user (it refuses to run as root).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../devserver/dev-server';
import { ChaosSetupError } from './errors';

/** A running private instance. */
export interface PrivatePostgres {
  /** `postgres://postgres@127.0.0.1:<port>/<db>` for the database the run uses. */
  readonly url: string;
  readonly port: number;
  /** Crash-restart: `pg_ctl restart -m immediate` (no shutdown checkpoint; WAL recovery on start). */
  restart(): Promise<void>;
  /** Stops the server and deletes its files. Idempotent. */
  destroy(): void;
}

/** The directory holding initdb/pg_ctl, or null. */
export function findPostgresBin(): string | null {
  if (process.env.CHAOS_PG_BIN) return process.env.CHAOS_PG_BIN;
  try {
    const dir = execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim();
    if (existsSync(join(dir, 'initdb'))) return dir;
  } catch {
    // no pg_config on PATH
  }
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] ? join(root, versions[0], 'bin') : null;
}

const isRoot = (): boolean => typeof process.getuid === 'function' && process.getuid() === 0;

/** Runs a PostgreSQL binary, as `postgres` when we are root. */
function pgRun(bin: string, args: string[]): void {
  const [cmd, argv] = isRoot() ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args];
  const r = spawnSync(cmd, argv, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  if (r.status !== 0) {
    throw new ChaosSetupError(`${bin} ${args.join(' ')} failed (${r.status}): ${r.stderr || r.stdout}`);
  }
}

/** Initialises and starts a private instance with one database `chaos`. */
export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const bin = findPostgresBin();
  if (!bin) {
    throw new ChaosSetupError(
      'no PostgreSQL server binaries (initdb, pg_ctl) found: install postgresql or set CHAOS_PG_BIN',
    );
  }
  const dir = mkdtempSync(join(tmpdir(), 'alg-chaos-pg-'));
  const data = join(dir, 'data');
  mkdirSync(data);
  chmodSync(dir, 0o755);
  if (isRoot()) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(dir, uid, gid);
    chownSync(data, uid, gid);
  }
  const port = await freePort();
  let started = false;
  const destroy = (): void => {
    if (started) {
      try {
        pgRun(join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', '-w', 'stop']);
      } catch {
        // already stopped
      }
      started = false;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    pgRun(join(bin, 'initdb'), ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
    const opts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=on`;
    const start = (): void =>
      pgRun(join(bin, 'pg_ctl'), ['-D', data, '-l', join(dir, 'log'), '-o', opts, '-w', 'start']);
    start();
    started = true;
    pgRun(join(bin, 'psql'), [
      '-h',
      '127.0.0.1',
      '-p',
      String(port),
      '-U',
      'postgres',
      '-qc',
      'CREATE DATABASE chaos',
    ]);
    return {
      url: `postgres://postgres@127.0.0.1:${port}/chaos`,
      port,
      async restart() {
        pgRun(join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', '-w', 'stop']);
        start();
      },
      destroy,
    };
  } catch (err) {
    destroy();
    throw err;
  }
}
