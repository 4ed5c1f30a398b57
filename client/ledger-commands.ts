/**
 * `agentctl ledger …`: operator commands for the completed-operation ledger — list and
 * inspect records, settle UNKNOWN ones (who, why and when are stored), and reap old ones.
 * Exit codes: 0 ok, 1 error (message on stderr), 2 bad usage.
 */
import { Command, CommanderError, Option } from 'commander';
import {
  DEFAULT_LEDGER_URL,
  DEFAULT_REAP_TTL_MS,
  LEDGER_STATES,
  LedgerError,
  ledgerUrlFromEnv,
  openLedger,
  type Ledger,
  type LedgerRecord,
  type LedgerState,
} from '../activities/ledger';

/** What the commands touch outside themselves; injectable for tests. */
export interface LedgerCommandDeps {
  /** Environment (reads `LEDGER_URL`). */
  env: NodeJS.ProcessEnv;
  /** Writes normal output. */
  stdout: (text: string) => void;
  /** Writes errors and usage messages. */
  stderr: (text: string) => void;
  /** Opens a ledger (default {@link openLedger}). */
  open: (url: string) => Promise<Ledger>;
  /** Ends the process with a usage (2) or help (0) exit code. */
  exit: (code: number) => void;
}

/** A usage error found by our own validation (bad `--result` JSON, bad number). */
class UsageError extends Error {
  override name = 'UsageError';
}

/** Builds the `ledger` command with its subcommands: list, show, resolve, reap. */
export function ledgerCommand(overrides: Partial<LedgerCommandDeps> = {}): Command {
  const deps: LedgerCommandDeps = {
    env: process.env,
    stdout: (t) => process.stdout.write(t),
    stderr: (t) => process.stderr.write(t),
    open: (url) => openLedger(url),
    exit: (code) => process.exit(code),
    ...overrides,
  };

  const withLedger =
    <A extends unknown[]>(fn: (ledger: Ledger, ...args: A) => Promise<void>) =>
    async (...args: A): Promise<void> => {
      let ledger: Ledger | undefined;
      try {
        ledger = await deps.open(ledgerUrlFromEnv(deps.env));
        await fn(ledger, ...args);
      } catch (err) {
        if (err instanceof UsageError) {
          deps.stderr(`error: ${err.message}\n`);
          deps.exit(2);
          return;
        }
        const known = err instanceof LedgerError || err instanceof TypeError;
        deps.stderr(`error: ${known ? (err as Error).message : String((err as Error)?.stack ?? err)}\n`);
        process.exitCode = 1;
      } finally {
        await ledger?.close().catch(() => undefined);
      }
    };

  const ledger = new Command('ledger')
    .description(
      `Inspect and settle the completed-operation ledger (LEDGER_URL, default ${DEFAULT_LEDGER_URL})`,
    )
    .configureOutput({ writeOut: deps.stdout, writeErr: deps.stderr })
    .exitOverride((err: CommanderError) => {
      deps.exit(err.exitCode === 0 ? 0 : 2);
      throw err;
    });

  ledger
    .command('list')
    .description('List records, newest first')
    .addOption(new Option('--state <state>', 'only records in this state').choices(LEDGER_STATES))
    .option('--limit <n>', 'at most this many', '100')
    .option('--json', 'one JSON array on stdout')
    .action(
      withLedger(async (l, opts: { state?: LedgerState; limit: string; json?: boolean }) => {
        const records = await l.list({ state: opts.state, limit: positiveInt(opts.limit, '--limit') });
        deps.stdout(opts.json ? `${JSON.stringify(records)}\n` : renderTable(records));
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
        deps.stdout(opts.json ? `${JSON.stringify(record)}\n` : renderRecord(record));
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
          deps.stdout(
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
        deps.stdout(
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
    text += `\n\nOutcome unknown: check the vendor, then\n  agentctl ledger resolve ${r.key} --as succeeded|failed --actor NAME --reason "evidence"`;
  }
  return `${text}\n`;
}

if (require.main === module) {
  new Command('agentctl')
    .addCommand(ledgerCommand())
    .parseAsync(process.argv)
    .catch((err: unknown) => {
      if (!(err instanceof CommanderError)) {
        process.stderr.write(`error: ${String(err)}\n`);
        process.exitCode = 1;
      }
    });
}
