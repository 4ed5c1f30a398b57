/**
 * @module progress
 *
 * Progress is a port (docs/spec.md §7.8): one {@link ProgressSource} per worker says how far a
 * run's external state has moved. The runtime consults it at every point that needs it — the
 * start version, after each call, and when it verifies a resume — so the source that moved is
 * the one that lets a resume through. A tool may refine it after its own calls (the
 * `progressVersion` hook of `defineTool`, given the source's version as `base`).
 *
 * Without a source of the user's, the worker uses {@link ObservedProgress}: a committed write
 * of this run is progress, and so is a read whose result content this run has not seen before
 * (new information); the same result again is not. It needs no world: the facts live in the
 * worker's database beside the ledger. The demo's World is one more implementation
 * (`worldProgress`, demo/world.ts).
 */
import { createHash } from 'node:crypto';
import { canonicalJson } from '../../guard';
import type { LedgerDatabase, LedgerTx } from '../../storage/ledger';
import type { ToolResult } from '../../guard';
import { AgentLoopGuardError } from '../../common/errors';

/** What the runtime tells a source about one call that reached a tool. */
export interface ProgressEvent {
  readonly runId: string;
  readonly tool: string;
  readonly effect: 'read' | 'write';
  /** The write's operation key (null for reads). */
  readonly operationKey: string | null;
  readonly result: ToolResult;
  /** `executed`: the tool ran now; `ledger`: the ledger answered a write already committed. */
  readonly via: 'executed' | 'ledger' | 'reconciled' | 'not_run' | 'fixture';
}

/** The worker's progress port. */
export interface ProgressSource {
  /** Named in errors and in the run's trace (`progress source NAME: …`). */
  readonly name: string;
  /**
   * The run's progress version now: an integer that never goes down. Called at the run's
   * start, after every call, and when a resume is verified.
   */
  version(runId: string): Promise<number>;
  /** Told of every call that reached a tool, before {@link version} is read (optional). */
  observe?(event: ProgressEvent): Promise<void>;
}

/** A progress source failed or answered something that is not a version. */
export class ProgressSourceError extends AgentLoopGuardError {
  readonly code = 'progress_source_failed';
  constructor(
    readonly source: string,
    message: string,
    options?: ErrorOptions,
  ) {
    super(`progress source ${source}: ${message}`, options);
  }
}

/** Reads `source`'s version for `runId`, checked: a throw or a non-integer is a ProgressSourceError. */
export async function readVersion(source: ProgressSource, runId: string, after?: string): Promise<number> {
  let v: unknown;
  try {
    v = await source.version(runId);
  } catch (err) {
    const where = after ? ` after ${after}` : '';
    throw new ProgressSourceError(source.name, `version()${where} threw: ${(err as Error)?.message ?? err}`, {
      cause: err,
    });
  }
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0)
    throw new ProgressSourceError(source.name, `version() must be an integer >= 0, got ${String(v)}`);
  return v;
}

/** The fact a call's outcome adds to what the run knows, or null when it adds none. */
export function factOf(e: ProgressEvent): string | null {
  if (e.result.kind !== 'SUCCESS') return null;
  // A write this run committed now is progress; one the ledger answered was committed before.
  if (e.effect === 'write') return e.via === 'executed' && e.operationKey ? `write:${e.operationKey}` : null;
  if (e.via !== 'executed') return null;
  const content = canonicalJson(e.result.data ?? null);
  return `read:${createHash('sha256').update(e.tool).update('\0').update(content).digest('hex')}`;
}

/**
 * The default progress source: facts a run learned, kept in the worker's database beside the
 * ledger (`agent_progress_facts`, ledger migration 6). The version is the number of distinct
 * facts, so it only goes up, kept as a number beside them (`agent_progress_versions`,
 * migration 12); the reaper deletes a closed run's facts and version with its other rows.
 * It also keeps the runtime's execution counters of every tool (`agent_tool_calls`).
 */
export class ObservedProgress implements ProgressSource {
  readonly name = 'observed (new read results and committed writes)';

  constructor(private readonly db: LedgerDatabase) {}

  async observe(e: ProgressEvent): Promise<void> {
    if (factOf(e) === null) return;
    // One transaction: the fact and the version it bumps go together (on PostgreSQL too).
    await this.db.unit('transaction', (tx) => this.observeIn(tx, e));
  }

  /**
   * {@link observe} inside a unit of the ledger's database (a ledger commit that carries it): a
   * new fact bumps the run's version in the same transaction (`agent_progress_versions`,
   * migration 12), so reading it costs one row however many facts the run has.
   * Answers the run's version as of this unit — what {@link version} reads once it commits, so
   * the caller need not read it again — or null when the event adds no fact (nothing read).
   */
  async observeIn(tx: LedgerTx, e: ProgressEvent): Promise<number | null> {
    const fact = factOf(e);
    if (fact === null) return null;
    const added = await tx.run(
      `INSERT INTO agent_progress_facts (run_id, fact, at) VALUES (?, ?, ${this.db.now}) ON CONFLICT DO NOTHING`,
      [e.runId, fact],
    );
    // A fact the run knew is no progress: the version stays (read here, in the same unit).
    const row =
      added.changes === 0
        ? await tx.get<{ version: number | string }>(VERSION_SQL, [e.runId])
        : await tx.get<{ version: number | string }>(
            `INSERT INTO agent_progress_versions (run_id, version) VALUES (?, 1)
             ON CONFLICT (run_id) DO UPDATE SET version = agent_progress_versions.version + 1 RETURNING version`,
            [e.runId],
          );
    return Number(row?.version ?? 0);
  }

  /** The number of distinct facts the run has learned, kept beside them (never counted here). */
  async version(runId: string): Promise<number> {
    const row = await this.db.unit('read', (tx) =>
      tx.get<{ version: number | string }>(VERSION_SQL, [runId]),
    );
    return Number(row?.version ?? 0);
  }
}

/** A run's progress version, one row (0 when the run has learned nothing yet). */
const VERSION_SQL = 'SELECT version FROM agent_progress_versions WHERE run_id = ?';

/** Real executions per run and tool, counted by the runtime for any tool (ledger migration 6). */
export class ToolCounters {
  constructor(private readonly db: LedgerDatabase) {}

  /** Counts one real execution of `tool` in `runId`. */
  async count(runId: string, tool: string): Promise<void> {
    await this.db.unit('write', (tx) => this.countIn(tx, runId, tool));
  }

  /** {@link count} inside a unit of the ledger's database (a ledger commit that carries it). */
  async countIn(tx: LedgerTx, runId: string, tool: string): Promise<void> {
    await tx.run(
      `INSERT INTO agent_tool_calls (run_id, tool, count) VALUES (?, ?, 1)
       ON CONFLICT (run_id, tool) DO UPDATE SET count = agent_tool_calls.count + 1`,
      [runId, tool],
    );
  }

  /** The ledger database these counters live in. */
  get database(): LedgerDatabase {
    return this.db;
  }

  /** Executions by tool of one run, or of every run when `runId` is omitted. */
  async of(runId?: string): Promise<Record<string, number>> {
    const rows = await this.db.unit('read', (tx) =>
      runId === undefined
        ? tx.all<{ tool: string; n: number | string }>(
            'SELECT tool, SUM(count) AS n FROM agent_tool_calls GROUP BY tool ORDER BY tool',
          )
        : tx.all<{ tool: string; n: number | string }>(
            'SELECT tool, count AS n FROM agent_tool_calls WHERE run_id = ? ORDER BY tool',
            [runId],
          ),
    );
    return Object.fromEntries(rows.map((r) => [r.tool, Number(r.n)]));
  }
}
