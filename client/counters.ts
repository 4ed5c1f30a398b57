/**
 * Per-run tool execution counters as agentctl and the client API read them: the runtime's own
 * counters of every tool, kept in the worker's database beside the ledger (`agent_tool_calls`,
 * activities/progress), so a user's tools are counted exactly as the demo's are.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { ToolCounters } from '../activities/progress';
import { ledgerUrlFromEnv, openLedger, SqlLedger, type Ledger } from '../storage/ledger';

/** Real executions by tool name, e.g. `{ search: 2 }`. */
export type Counters = Record<string, number>;

/** Options of {@link runCounters}. */
export interface RunCountersOptions {
  /** The worker's ledger (default: LEDGER_URL, else the local SQLite default). */
  readonly ledgerUrl?: string;
}

/**
 * Real executions by tool of one run (or of every run when `runId` is omitted); null when the
 * ledger is not reachable from here (the worker may run elsewhere: a status view never invents
 * an empty database, nor fails for want of one).
 */
export async function runCounters(
  runId: string | undefined,
  o: RunCountersOptions = {},
): Promise<Counters | null> {
  const url = o.ledgerUrl ?? ledgerUrlFromEnv(process.env);
  if (url.startsWith('sqlite:') && !isLocalFile(url)) return null;
  let ledger: Ledger | undefined;
  try {
    ledger = await openLedger(url);
    return ledger instanceof SqlLedger ? await new ToolCounters(ledger.database()).of(runId) : null;
  } catch {
    return null;
  } finally {
    await ledger?.close().catch(() => undefined);
  }
}

function isLocalFile(url: string): boolean {
  const file = url.slice('sqlite:'.length);
  return file !== ':memory:' && existsSync(resolve(file));
}
