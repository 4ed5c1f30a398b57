/**
 * `agentctl trace ID --stored`: the trace records a long run paged out of its checkpoint at
 * each continue-as-new, read from the worker's database (`LEDGER_URL`, the way
 * `agentctl conversation` reads the conversation store). A run whose rows the reaper deleted
 * answers "reaped" (exit 3), never an empty page.
 */
import type { TraceRecord } from '../../guard';
import { loadPayloadCodec } from '../../codec';
import { ledgerUrlFromEnv, openLedger, type Ledger } from '../../storage/ledger';
import { RowCodec } from '../../storage/row-codec';
import { TraceStore, type StoredTracePage } from '../../storage/trace-store';
import { CliError, Exit } from '../format';
import type { Ctx } from './common';

/** One page of a run's stored trace (throws a CliError when it has none or they were reaped). */
export async function storedTracePage(
  ctx: Ctx,
  runId: string,
  offset: number,
  limit: number,
): Promise<{ total: number; records: Array<TraceRecord & { seq: number }> }> {
  let ledger: Ledger | undefined;
  let page: StoredTracePage;
  try {
    ledger = await openLedger(ledgerUrlFromEnv(ctx.env));
    // The workers seal rows with their payload codec: the same keys open them here.
    const { codec } = loadPayloadCodec(ctx.env);
    const store = TraceStore.over(ledger, new RowCodec(codec ? [codec] : []));
    if (!store) throw new CliError(Exit.ERROR, 'the ledger is not a SQL ledger: no trace store');
    page = await store.page(runId, offset, limit);
  } catch (err) {
    if (err instanceof CliError) throw err;
    throw new CliError(Exit.ERROR, `trace --stored: ${(err as Error)?.message ?? String(err)}`, {
      cause: err,
    });
  } finally {
    await ledger?.close().catch(() => undefined);
  }
  if (page.kind === 'reaped')
    throw new CliError(
      Exit.REFUSED,
      `the paged-out trace of ${runId} was reaped${page.reapedAt ? ` at ${page.reapedAt}` : ''} (${page.records} records deleted by the ledger reaper's retention); the run's newest records are still in \`agentctl trace ${runId}\` while its history is kept`,
    );
  if (page.kind === 'none')
    throw new CliError(
      Exit.REFUSED,
      `no paged-out trace stored for ${runId} (a run pages its trace out only when it continues as new)`,
    );
  return {
    total: page.total,
    records: page.records.map((r) => ({ ...(r.record as TraceRecord), seq: r.seq })),
  };
}
