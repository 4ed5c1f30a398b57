/**
 * The paged-out trace (docs/spec.md §5): the trace records that leave a long run's
 * checkpoint at a continue-as-new are kept here, in the worker's database (the ledger's,
 * migration 8 `agent_trace`), one row per record under its position in the run's whole
 * trace (`seq`), so a retried save writes nothing twice. `agentctl trace ID --stored` pages
 * them. When the reaper deletes a run's rows it leaves a line in `agent_trace_reaped`, so a
 * reader is told "reaped" instead of being shown an empty page.
 */
import { SqlLedger, type Ledger, type LedgerDatabase } from './ledger';
import { PLAIN_ROWS, type RowCodec } from './row-codec';

/** A trace record with its position in the run's whole trace. */
export interface StoredTraceRecord {
  readonly seq: number;
  readonly record: unknown;
}

/** One page of a run's stored trace, or why there is none. */
export type StoredTracePage =
  | { readonly kind: 'page'; readonly total: number; readonly records: readonly StoredTraceRecord[] }
  | { readonly kind: 'reaped'; readonly records: number; readonly reapedAt: string | null }
  | { readonly kind: 'none' };

/** The trace store over the ledger's database (migration 8). */
export class TraceStore {
  /** @param rows seals the record column with the worker's payload codec (storage/row-codec.ts). */
  constructor(
    private readonly db: LedgerDatabase,
    private readonly rows: RowCodec = PLAIN_ROWS,
  ) {}

  /** The store beside `ledger`, on its connection; null when the ledger is not a SQL ledger. */
  static over(ledger: Ledger, rows: RowCodec = PLAIN_ROWS): TraceStore | null {
    return ledger instanceof SqlLedger ? new TraceStore(ledger.database(), rows) : null;
  }

  /** Saves records (idempotent by `seq`); answers how many rows are new. */
  async save(runId: string, records: readonly StoredTraceRecord[]): Promise<number> {
    if (records.length === 0) return 0;
    const rows: [string, number, string][] = [];
    for (const r of records) rows.push([runId, r.seq, await this.rows.seal(JSON.stringify(r.record))]);
    return this.db.unit('write', async (tx) => {
      let added = 0;
      for (const row of rows)
        added += (
          await tx.run(
            `INSERT INTO agent_trace (run_id, seq, record, created_at) VALUES (?, ?, ?, ${this.db.now})
           ON CONFLICT DO NOTHING`,
            row,
          )
        ).changes;
      return added;
    });
  }

  /** Records `offset …` (at most `limit`, oldest first) of a run, or why there are none. */
  async page(runId: string, offset: number, limit: number): Promise<StoredTracePage> {
    const { count, rows, reaped } = await this.db.unit('read', async (tx) => ({
      count: await tx.get<{ n: number | string }>('SELECT count(*) AS n FROM agent_trace WHERE run_id = ?', [
        runId,
      ]),
      rows: await tx.all<{ seq: number | string; record: string }>(
        'SELECT seq, record FROM agent_trace WHERE run_id = ? ORDER BY seq LIMIT ? OFFSET ?',
        [runId, Math.max(1, Math.floor(limit)), Math.max(0, Math.floor(offset))],
      ),
      reaped: await tx.get<{ records: number | string; reaped_at: unknown }>(
        'SELECT records, reaped_at FROM agent_trace_reaped WHERE run_id = ?',
        [runId],
      ),
    }));
    const total = Number(count?.n ?? 0);
    if (total === 0 && reaped)
      return { kind: 'reaped', records: Number(reaped.records), reapedAt: this.db.isoTime(reaped.reaped_at) };
    if (total === 0) return { kind: 'none' };
    const records: StoredTraceRecord[] = [];
    for (const r of rows)
      records.push({ seq: Number(r.seq), record: JSON.parse(await this.rows.open(r.record)) as unknown });
    return { kind: 'page', total, records };
  }
}
