/**
 * Per-run tool execution counters as agentctl and the client API read them: the runtime's own
 * counters of every tool, kept in the worker's database beside the ledger (`agent_tool_calls`,
 * activities/progress), so a user's tools are counted exactly as the demo's are. A run of a
 * worker that predates those counters falls back to the demo world's (client/world.ts).
 */
import { existsSync } from 'node:fs';
import { ToolCounters } from '../activities/progress';
import { ledgerUrlFromEnv, openLedger, SqlLedger, type Ledger } from '../activities/ledger';
import { worldFile } from '../activities/tools/demo/world';
import { readCounters, type Counters } from './world';

/** Options of {@link runCounters}. */
export interface RunCountersOptions {
  /** The worker's ledger (default: LEDGER_URL, else the local SQLite default). */
  readonly ledgerUrl?: string;
  /** The demo world, read when the ledger has no counters for the run (default: none). */
  readonly worldUrl?: string;
}

/**
 * Real executions by tool of one run (or of every run when `runId` is omitted); null when
 * neither the ledger nor the demo world is reachable from here (the worker may run elsewhere:
 * a status view never invents an empty database, nor fails for want of one).
 */
export async function runCounters(
  runId: string | undefined,
  o: RunCountersOptions = {},
): Promise<Counters | null> {
  const url = o.ledgerUrl ?? ledgerUrlFromEnv(process.env);
  let counted: Counters | null = null;
  if (!url.startsWith('sqlite:') || isLocalFile(url)) {
    let ledger: Ledger | undefined;
    try {
      ledger = await openLedger(url);
      if (ledger instanceof SqlLedger) counted = await new ToolCounters(ledger.database()).of(runId);
    } catch {
      counted = null;
    } finally {
      await ledger?.close().catch(() => undefined);
    }
  }
  if (counted && Object.keys(counted).length > 0) return counted;
  const world = o.worldUrl ? await readCounters(o.worldUrl, runId).catch(() => null) : null;
  return world ?? counted;
}

function isLocalFile(url: string): boolean {
  try {
    const file = worldFile(url);
    return file !== ':memory:' && existsSync(file);
  } catch {
    return false;
  }
}
