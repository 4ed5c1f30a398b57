/**
 * The demo world as agentctl and the demo see it from outside the worker: opening the
 * local `WORLD_URL` database, and the one place the per-run tool execution counters are
 * read from. `start --wait`, `resume --wait`, `status`, `world counters` and the demo all
 * call {@link readCounters}, so they can never disagree about what "executed" means.
 */
import { existsSync } from 'node:fs';
import { World, worldFile } from './world';
import { CliError, Exit } from '../client/format';

/** Real executions by tool name, e.g. `{ search: 2 }`. */
export type Counters = Record<string, number>;

/** Opens (creating if missing) the world at `url`; a URL that cannot be opened is exit 1. */
export function openWorld(url: string): World {
  try {
    return World.open(url);
  } catch (err) {
    throw new CliError(Exit.ERROR, `cannot open the demo world at ${url}: ${(err as Error).message}`);
  }
}

/** Runs `fn` on the world at `url` and closes it again. */
export async function withWorld<T>(url: string, fn: (w: World) => Promise<T>): Promise<T> {
  const world = openWorld(url);
  try {
    return await fn(world);
  } finally {
    world.close();
  }
}

/** Where counters come from: a world URL, or a world already open in this process (the demo's worker). */
export type CounterSource = string | Pick<World, 'counters'>;

/** Options of {@link readCounters}. */
export interface ReadCountersOptions {
  /**
   * `if-present` (default): null when the URL names no existing local file — the worker
   * may run on another machine, and a status view must not invent an empty world.
   * `always`: open it like the other `world` commands do (an operator asked for this world
   * explicitly; a URL that cannot be opened is exit 1).
   */
  readonly open?: 'if-present' | 'always';
}

/**
 * Per-tool execution counters of one run (or of all runs when `runId` is omitted), as the
 * demo tools recorded them in the world; null when the world is not on this machine.
 */
export async function readCounters(source: Pick<World, 'counters'>, runId?: string): Promise<Counters>;
export async function readCounters(
  source: CounterSource,
  runId?: string,
  o?: ReadCountersOptions,
): Promise<Counters | null>;
export async function readCounters(
  source: CounterSource,
  runId?: string,
  o: ReadCountersOptions = {},
): Promise<Counters | null> {
  if (typeof source !== 'string') return source.counters(runId);
  if (o.open !== 'always' && !isLocalFile(source)) return null;
  return withWorld(source, (w) => w.counters(runId));
}

function isLocalFile(url: string): boolean {
  let file: string;
  try {
    file = worldFile(url);
  } catch {
    return false;
  }
  return file !== ':memory:' && existsSync(file);
}
