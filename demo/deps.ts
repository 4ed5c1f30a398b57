/**
 * The demo's worker deps: the product's {@link openWorkerDeps} plus the demo's world (its
 * SQLite database, the tool store its tools share, and its progress version) and its tools.
 * `npm run worker`, the demo, the chaos run and the tests host the demo through this; a
 * user's worker calls `openWorkerDeps({ tools })` and never sees any of it.
 */
import { DEFAULT_LEDGER_URL } from '../storage/ledger';
import { openWorkerDeps, type WorkerDeps, type WorkerDepsOptions } from '../worker/create-worker';
import { createDemoTools } from './tools';
import { World, worldProgress } from './world';

/** Options of {@link openDemoWorkerDeps}: the worker's, plus where the world lives. */
export interface DemoWorkerDepsOptions extends WorkerDepsOptions {
  /** The world's SQLite URL; default: the ledger's file when it is SQLite, else `sqlite:data/world.db`. */
  readonly worldUrl?: string;
  /** False hosts the world (store and progress) without offering the demo's tools. */
  readonly demoTools?: boolean;
  /** The demo `poll_job` tool's suggested wait. */
  readonly pollAfterMs?: number;
}

/** A worker's deps when it hosts the demo: its world is open (and closed with the deps). */
export type DemoWorkerDeps = WorkerDeps & { readonly world: World };

/** Opens the demo's world, then the worker's deps with the world as tool store and progress source. */
export async function openDemoWorkerDeps(o: DemoWorkerDepsOptions = {}): Promise<DemoWorkerDeps> {
  const { worldUrl, demoTools, pollAfterMs, ...worker } = o;
  const ledgerUrl = worker.ledgerUrl ?? DEFAULT_LEDGER_URL;
  const world = World.open(
    worldUrl ?? (ledgerUrl.startsWith('sqlite:') ? ledgerUrl : 'sqlite:data/world.db'),
  );
  let deps: WorkerDeps;
  try {
    deps = await openWorkerDeps({
      ...worker,
      tools: [
        ...(demoTools === false ? [] : createDemoTools(world, { pollAfterMs })),
        ...(worker.tools ?? []),
      ],
      store: world,
      progress: worker.progress ?? worldProgress(world),
    });
  } catch (err) {
    world.close();
    throw err;
  }
  return {
    ...deps,
    world,
    async close() {
      await deps.close();
      world.close();
    },
  };
}
