/**
 * The tool store port: the one SQL database a worker's tools share, when they share one, and
 * that `ctx.tx` runs on (README, "Your own agent"). A worker need not have one: tools that
 * keep their own stores (an app's own database client, an HTTP API, an MCP server) never touch
 * `ctx.tx`. The demo's World is one implementation (demo/world.ts).
 */
import type { Tx } from './tx';

/** Where a worker's tools keep their state, as the worker hands it to them through `ctx.tx`. */
export interface ToolStore {
  /** The store's own connection, for a tool with `usesWorldTransaction: false`. */
  readonly tx: Tx;
  /** Runs `fn` in one transaction (a tool's whole `execute`, by default). */
  transaction<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;
  /**
   * The SQLite file the store lives in, when it is one. A SQLite ledger in the same file lets a
   * tool with `atomicWithLedger: true` commit its write inside the ledger's own transaction.
   */
  readonly file?: string | null;
}

/** The `ctx.tx` of a worker without a tool store: any use is a TypeError that says so. */
export const NO_STORE_TX: Tx = {
  run: noStore,
  all: noStore,
  get: noStore,
};

function noStore(): never {
  throw new TypeError(
    'ctx.tx: this worker has no tool store (openWorkerDeps({ store })); a tool without one keeps its own database',
  );
}

/** A tool's side of a call on `store`: in a transaction, unless the tool asks to run outside one. */
export function inStore<T>(
  store: ToolStore | null,
  tool: { readonly usesWorldTransaction?: boolean },
  fn: (tx: Tx) => Promise<T>,
): Promise<T> {
  if (!store) return fn(NO_STORE_TX);
  return tool.usesWorldTransaction === false ? fn(store.tx) : store.transaction(fn);
}
