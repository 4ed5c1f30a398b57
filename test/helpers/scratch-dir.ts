/**
 * The scratch directory of a jest run: every temporary file a test makes (SQLite ledgers and
 * worlds, the chaos test's PostgreSQL, the shared workflow bundle) goes under one fresh
 * directory, which jest's globalTeardown removes. jest's globalSetup sets TMPDIR to it before
 * the workers start, so `os.tmpdir()` in the workers and in every process a test spawns
 * points there.
 *
 * Its parent is AGENT_TEST_TMPDIR when set; else /dev/shm when it has room (a RAM disk: SQLite's
 * fsyncs cost nothing); else the system's temporary directory.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, statfsSync, symlinkSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';

/** The variable that chooses the parent of the scratch directory. */
export const TEST_TMPDIR_ENV = 'AGENT_TEST_TMPDIR';
/** The variable that carries the scratch directory's path to globalTeardown. */
export const SCRATCH_DIR_ENV = 'AGENT_TEST_SCRATCH_DIR';

const RAM_DISK = '/dev/shm';
/** /dev/shm is used only with this much free (a container's default 64 MB is not enough). */
const RAM_DISK_MIN_FREE_BYTES = 2 * 1024 ** 3;

function freeBytes(dir: string): number {
  try {
    const s = statfsSync(dir);
    return s.bavail * s.bsize;
  } catch {
    return 0;
  }
}

/** The parent of the scratch directory (see the module comment). */
export function scratchParent(env: NodeJS.ProcessEnv = process.env): string {
  const chosen = env[TEST_TMPDIR_ENV];
  if (chosen) return chosen;
  if (existsSync(RAM_DISK) && freeBytes(RAM_DISK) >= RAM_DISK_MIN_FREE_BYTES) return RAM_DISK;
  return tmpdir();
}

/**
 * tsx's compile cache (content-addressed: safe to share) lives in `$TMPDIR/tsx-<uid>`: the
 * scratch directory's is a link to the usual one, so the CLI processes the tests start do not
 * compile the project afresh on every run. Best effort.
 */
function keepTsxCache(dir: string): void {
  const name = `tsx-${process.geteuid?.() ?? userInfo().username}`;
  try {
    const cache = join(tmpdir(), name);
    mkdirSync(cache, { recursive: true });
    symlinkSync(cache, join(dir, name));
  } catch {
    // A cold cache costs time, nothing else.
  }
}

/** globalSetup: makes the scratch directory and points TMPDIR at it; returns its path. */
export function enterScratchDir(): string {
  const dir = mkdtempSync(join(scratchParent(), 'alg-jest-'));
  // Others may need to reach into it: the chaos test's PostgreSQL runs as the postgres user.
  chmodSync(dir, 0o755);
  keepTsxCache(dir);
  process.env[SCRATCH_DIR_ENV] = dir;
  process.env.TMPDIR = dir;
  return dir;
}

/** globalTeardown: removes the scratch directory made by {@link enterScratchDir}, if any. */
export function removeScratchDir(): void {
  const dir = process.env[SCRATCH_DIR_ENV];
  if (!dir) return;
  rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  delete process.env[SCRATCH_DIR_ENV];
}
