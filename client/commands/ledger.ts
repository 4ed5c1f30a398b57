/**
 * `agentctl ledger …`: operator commands for the completed-operation ledger — list and
 * inspect records, settle UNKNOWN ones (who, why and when are stored), and reap old ones.
 * Exit codes: 0 ok, 1 error, 2 bad usage; errors are written as `error: …` on stderr.
 */
import { Command, Option } from 'commander';
import { AgentLoopGuardError } from '../../common/errors';
import {
  DEFAULT_LEDGER_URL,
  DEFAULT_REAP_TTL_MS,
  LEDGER_STATES,
  LedgerError,
  ledgerUrlFromEnv,
  openLedger,
  settleAdvice,
  type Ledger,
  type LedgerRecord,
  type LedgerState,
} from '../../storage/ledger';
import { CliError, Exit } from '../format';
import type { Ctx } from './common';

/** A usage error found by our own validation (bad `--result` JSON, bad number). */
class UsageError extends AgentLoopGuardError {
  override name = 'UsageError';
  readonly code = 'cli_usage';
}

/** Builds the `ledger` command with its subcommands: list, show, resolve, reap (on `LEDGER_URL`). */
export function ledgerCommand(ctx: Ctx): Command {
  const out = ctx.io.out;

  // Every subcommand opens the ledger, runs, and closes it. Its errors keep the `error: `
  // format the ledger commands had before agentctl, so they are written here and the
  // runner only gets the exit code.
  const withLedger =
    <A extends unknown[]>(fn: (ledger: Ledger, ...args: A) => Promise<void>) =>
    async (...args: A): Promise<void> => {
      let ledger: Ledger | undefined;
      try {
        ledger = await openLedger(ledgerUrlFromEnv(ctx.env));
        await fn(ledger, ...args);
      } catch (err) {
        const usage = err instanceof UsageError;
        const known = usage || err instanceof LedgerError || err instanceof TypeError;
        const message = known ? (err as Error).message : String((err as Error)?.stack ?? err);
        ctx.io.err(`error: ${message}\n`);
        throw new CliError(usage ? Exit.USAGE : Exit.ERROR, message, { cause: err, reported: true });
      } finally {
        await ledger?.close().catch(() => undefined);
      }
    };

  const ledger = new Command('ledger').description(
    `Inspect and settle the completed-operation ledger (LEDGER_URL, default ${DEFAULT_LEDGER_URL})`,
  );

  ledger
    .command('list')
    .description('List records, newest first')
    .addOption(new Option('--state <state>', 'only records in this state').choices(LEDGER_STATES))
    .option('--run <id>', "only this run's records (its workflow id): what a long run completed")
    .option('--limit <n>', 'at most this many', '100')
    .option('--json', 'one JSON array on stdout')
    .action(
      withLedger(async (l, opts: { state?: LedgerState; run?: string; limit: string; json?: boolean }) => {
        const records = await l.list({
          state: opts.state,
          ...(opts.run ? { runId: opts.run } : {}),
          limit: positiveInt(opts.limit, '--limit'),
        });
        out(opts.json ? `${JSON.stringify(records)}\n` : renderTable(records));
      }),
    );

  ledger
    .command('show')
    .description('Show one record in full')
    .argument('<key>', 'operation key')
    .option('--json', 'the record as JSON')
    .action(
      withLedger(async (l, key: string, opts: { json?: boolean }) => {
        const record = await l.get(key);
        if (!record) throw new LedgerError(`no ledger record for key "${key}"`, key);
        out(opts.json ? `${JSON.stringify(record)}\n` : renderRecord(record));
      }),
    );

  ledger
    .command('resolve')
    .description('Settle an UNKNOWN record after checking what really happened')
    .argument('<key>', 'operation key')
    .addOption(
      new Option('--as <outcome>', 'what happened').choices(['succeeded', 'failed']).makeOptionMandatory(),
    )
    .requiredOption('--actor <name>', 'who decides (stored)')
    .requiredOption('--reason <text>', 'why: the evidence checked (stored)')
    .option('--result <json>', 'result to replay to duplicates (with --as succeeded)')
    .option('--json', 'the updated record as JSON')
    .action(
      withLedger(
        async (
          l,
          key: string,
          opts: {
            as: 'succeeded' | 'failed';
            actor: string;
            reason: string;
            result?: string;
            json?: boolean;
          },
        ) => {
          if (opts.result !== undefined && opts.as !== 'succeeded') {
            throw new UsageError('--result only goes with --as succeeded');
          }
          const record = await l.resolve(key, {
            as: opts.as,
            actor: opts.actor,
            reason: opts.reason,
            result: opts.result === undefined ? null : parseJson(opts.result),
          });
          out(
            opts.json
              ? `${JSON.stringify(record)}\n`
              : `resolved ${key}: ${record.resolution?.priorState} -> ${record.state} by ${opts.actor} at ${record.resolution?.at}\n`,
          );
        },
      ),
    );

  ledger
    .command('reap')
    .description('Delete SUCCEEDED/FAILED_FINAL records older than the TTL (never live or UNKNOWN ones)')
    .option('--ttl-hours <n>', 'retention in hours', String(DEFAULT_REAP_TTL_MS / 3_600_000))
    .option('--json', 'result as JSON')
    .action(
      withLedger(async (l, opts: { ttlHours: string; json?: boolean }) => {
        const hours = Number(opts.ttlHours);
        if (!Number.isFinite(hours) || hours < 0)
          throw new UsageError(`--ttl-hours must be a number >= 0, got "${opts.ttlHours}"`);
        const removed = await l.reap(hours * 3_600_000);
        out(
          opts.json
            ? `${JSON.stringify({ removed, ttlHours: hours })}\n`
            : `removed ${removed} record(s) older than ${hours} h\n`,
        );
      }),
    );

  return ledger;
}

function positiveInt(text: string, flag: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1)
    throw new UsageError(`${flag} must be a positive integer, got "${text}"`);
  return n;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new UsageError(`--result is not valid JSON: ${(err as Error).message}`);
  }
}

function lease(r: LedgerRecord): string {
  if (r.leaseRemainingMs === null) return '-';
  const s = Math.round(Math.abs(r.leaseRemainingMs) / 100) / 10;
  return r.leaseRemainingMs > 0 ? `${s}s left` : `expired ${s}s ago`;
}

function renderTable(records: LedgerRecord[]): string {
  if (records.length === 0) return 'no ledger records\n';
  const header = ['KEY', 'STATE', 'TOOL', 'RUN', 'OWNER', 'TOKEN', 'ATTEMPTS', 'LEASE', 'UPDATED'];
  const rows = records.map((r) => [
    r.key,
    r.state,
    r.tool,
    r.runId,
    r.owner,
    String(r.token),
    String(r.attempts),
    lease(r),
    r.updatedAt,
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  return `${[line(header), ...rows.map(line)].join('\n')}\n`;
}

function renderRecord(r: LedgerRecord): string {
  const lines: [string, string][] = [
    ['key', r.key],
    ['state', r.state],
    ['tool', r.tool],
    ['args hash', r.argsHash],
    ['run', r.runId],
    ['owner', r.owner],
    ['token', String(r.token)],
    ['attempts', String(r.attempts)],
    ['lease', r.leaseExpiresAt ? `${r.leaseExpiresAt} (${lease(r)})` : '-'],
    ['created', r.createdAt],
    ['updated', r.updatedAt],
    ['dispatched', r.dispatchedAt ?? '-'],
    ['finished', r.finishedAt ?? '-'],
    ['result', r.result === null ? '-' : JSON.stringify(r.result)],
    [
      'error',
      r.error ? `${r.error.name}: ${r.error.message}${r.error.code ? ` (${r.error.code})` : ''}` : '-',
    ],
  ];
  if (r.resolution) {
    lines.push(
      ['resolved as', r.resolution.as],
      ['resolved by', r.resolution.actor],
      ['reason', r.resolution.reason],
      ['resolved at', r.resolution.at],
      ['prior state', r.resolution.priorState],
    );
  }
  const w = Math.max(...lines.map(([k]) => k.length));
  let text = lines.map(([k, v]) => `${k.padEnd(w)}  ${v}`).join('\n');
  if (r.state === 'UNKNOWN') {
    text += `\n\nOutcome unknown: check the vendor, then ${settleAdvice(r.key)}`;
  }
  return `${text}\n`;
}
