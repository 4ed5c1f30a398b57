/**
 * Output helpers for agentctl: exit codes, the CLI error type, plain-text tables and
 * key/value blocks. No colours, no dependencies: the output must read well in a terminal,
 * a CI log and a pipe.
 */
import type { StopReport, TraceRecord } from '../guard';
import { AgentLoopGuardError } from '../common/errors';

/** agentctl's documented exit codes (docs/cli.md). */
export const Exit = {
  OK: 0,
  ERROR: 1,
  USAGE: 2,
  REFUSED: 3,
  UNREACHABLE: 4,
  /**
   * The client and the run's worker do not share a payload codec (a key one side lacks, the
   * codec off on one side): a configuration error, never a refusal (codec/mismatch.ts).
   */
  CODEC_MISMATCH: 5,
  /**
   * No worker polls the run's task queue (client/workers.ts): nothing was sent, or the run's
   * live state could not be read; start a worker on that queue.
   */
  NO_WORKER: 6,
} as const;
export type ExitCode = (typeof Exit)[keyof typeof Exit];

/** Options of {@link CliError}. */
export interface CliErrorOptions extends ErrorOptions {
  /**
   * The command already wrote its own message to stderr (`replay`, `ledger`: their output
   * format predates agentctl), so the runner only sets the exit code.
   */
  readonly reported?: boolean;
}

/** An error with an exit code and an operator-facing message (no stack trace is printed). */
export class CliError extends AgentLoopGuardError {
  override name = 'CliError';
  /** Stable machine-readable code; the exit code is {@link CliError.exitCode}. */
  readonly code = 'cli_error';
  /** True when the message is already on stderr (see {@link CliErrorOptions.reported}). */
  readonly reported: boolean;
  constructor(
    readonly exitCode: ExitCode,
    message: string,
    options: CliErrorOptions = {},
  ) {
    super(message, options);
    this.reported = options.reported === true;
  }
}

/** Where a command writes; injectable so tests and the demo can capture output. */
export interface Output {
  out(text: string): void;
  err(text: string): void;
}

/** process.stdout / process.stderr. */
export const stdio: Output = {
  out: (t) => void process.stdout.write(t),
  err: (t) => void process.stderr.write(t),
};

/** One column of {@link table}. */
export interface Column<T> {
  readonly header: string;
  readonly value: (row: T) => unknown;
  /** Cut cells longer than this (with an ellipsis). */
  readonly max?: number;
}

/** Renders a cell: null/undefined → "-", objects → compact JSON. */
export function cell(v: unknown, max = 80): string {
  let s: string;
  if (v === null || v === undefined || v === '') s = '-';
  else if (typeof v === 'string') s = v;
  else if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') s = String(v);
  else if (v instanceof Date) s = v.toISOString();
  else s = JSON.stringify(v);
  return clip(s.replace(/\s+/g, ' '), max);
}

/**
 * An `agentctl` command in a text (quoted, or up to the next `;`, `)` or the end): what a
 * person copies and runs, so {@link clip} never cuts one.
 */
const COMMAND = /"agentctl [^"]*"|'agentctl [^']*'|`agentctl [^`]*`|\bagentctl [^;)"'`]*/g;

/** The prose {@link clip} keeps at least, however long the commands beside it. */
const MIN_PROSE = 80;

/**
 * `s` cut to about `max` characters with an ellipsis, the prose cut and every `agentctl`
 * command in it kept whole (a cut command would run another key, or nothing). The room left
 * beside the commands (at least {@link MIN_PROSE}) is shared out among the runs of prose, the
 * short ones kept whole first; a run cut before a command keeps its head and the words that
 * lead into the command.
 */
export function clip(s: string, max: number): string {
  if (s.length <= max) return s;
  const parts: { text: string; command: boolean; keep: number }[] = [];
  let at = 0;
  for (const m of s.matchAll(COMMAND)) {
    if (m.index > at) parts.push({ text: s.slice(at, m.index), command: false, keep: 0 });
    parts.push({ text: m[0], command: true, keep: m[0].length });
    at = m.index + m[0].length;
  }
  if (at < s.length) parts.push({ text: s.slice(at), command: false, keep: 0 });
  if (!parts.some((p) => p.command)) return `${s.slice(0, max - 1)}…`;
  const prose = parts.filter((p) => !p.command).sort((a, b) => a.text.length - b.text.length);
  const commands = s.length - prose.reduce((n, p) => n + p.text.length, 0);
  let room = Math.max(MIN_PROSE, max - commands);
  prose.forEach((p, i) => {
    p.keep = Math.min(p.text.length, Math.floor(room / (prose.length - i)));
    room -= p.keep;
  });
  return parts
    .map((p, i) => {
      if (p.command || p.keep >= p.text.length) return p.text;
      if (p.keep <= 1) return '…';
      if (i === parts.length - 1) return `${p.text.slice(0, p.keep - 1)}…`;
      const tail = Math.min(Math.floor((p.keep - 1) / 2), 24);
      return `${p.text.slice(0, p.keep - 1 - tail)}…${p.text.slice(p.text.length - tail)}`;
    })
    .join('');
}

/** A left-aligned text table with a header row; "(none)" when empty. */
export function table<T>(rows: readonly T[], columns: readonly Column<T>[]): string {
  if (rows.length === 0) return '(none)\n';
  const cells = rows.map((r) => columns.map((c) => cell(c.value(r), c.max)));
  const widths = columns.map((c, i) =>
    Math.max(c.header.length, ...cells.map((row) => (row[i] ?? '').length)),
  );
  const line = (vals: readonly string[]) =>
    vals
      .map((v, i) => (i === vals.length - 1 ? v : v.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(columns.map((c) => c.header)), ...cells.map(line)].join('\n') + '\n';
}

/** `key  value` lines, keys padded to one width. */
export function keyValues(pairs: ReadonlyArray<readonly [string, unknown]>, max = 120): string {
  const w = Math.max(0, ...pairs.map(([k]) => k.length));
  return pairs.map(([k, v]) => `${k.padEnd(w)}  ${cell(v, max)}`).join('\n') + '\n';
}

/** `{search: 2, deploy: 1}` → `search=2 deploy=1` (sorted by tool), `(none)` when empty. */
export function formatCounters(counters: Record<string, number> | null | undefined): string {
  if (!counters) return '(unknown)';
  const entries = Object.entries(counters).sort(([a], [b]) => a.localeCompare(b));
  return entries.length === 0 ? '(none)' : entries.map(([k, v]) => `${k}=${v}`).join(' ');
}

/** A StopReport's blocked call as `tool fingerprint`, null when there is none. */
export function blockedCallText(r: Pick<StopReport, 'blocked_call'> | null | undefined): string | null {
  return r?.blocked_call ? `${r.blocked_call.tool} ${r.blocked_call.fingerprint}` : null;
}

/**
 * A trace record's result as `KIND` or `KIND:code`, with ` (reconciled)` when the ledger's
 * reconcile probe settled it instead of the tool running; null when nothing ran.
 */
export function resultText(r: Pick<TraceRecord, 'result_kind' | 'error_code' | 'via'>): string | null {
  if (!r.result_kind) return null;
  return `${r.result_kind}${r.error_code ? `:${r.error_code}` : ''}${r.via ? ` (${r.via})` : ''}`;
}

/** Plain words for the guard's decisions a person may not know, shown beside the code. */
const DECISION_WORDS: Readonly<Record<string, string>> = {
  wait_bounded: 'not done yet: the run sleeps, then asks again (a bounded number of times)',
  return_cached_success: 'already done: answered from the ledger, not run again',
  retry_after_backoff: 'failed for now: tried again after a pause',
  needs_changed_precondition: 'cannot run until something it needs changes',
};

/**
 * One trace record as a single line (`watch`, the demo). Step numbers count the calls that
 * ran: a call refused before it ran is shown as `refused`, not under the step before it.
 */
export function traceLine(r: TraceRecord): string {
  const kind = resultText(r);
  const result = kind ? ` → ${kind}` : '';
  const reason = r.reason ? ` (${r.reason})` : '';
  const tool = r.tool ? `${r.tool} ` : '';
  const refused = r.phase === 'before' && (r.decision === 'stop' || r.decision === 'steer');
  const words = refused
    ? `it did not run${r.decision === 'steer' ? '; the model was told why' : ''}`
    : DECISION_WORDS[r.decision];
  const label = refused ? 'refused' : `step ${r.step}`;
  return `${label} ${r.phase.padEnd(6)} ${tool}${r.decision}${reason}${result}${words ? ` — ${words}` : ''}`;
}

/** Pretty or compact JSON plus a newline. */
export function json(value: unknown, pretty = false): string {
  return `${JSON.stringify(value, null, pretty ? 2 : undefined)}\n`;
}

/** The Temporal Web UI link of a workflow. */
export function uiLink(uiBase: string, namespace: string, workflowId: string): string {
  return `${uiBase.replace(/\/$/, '')}/namespaces/${encodeURIComponent(namespace)}/workflows/${encodeURIComponent(workflowId)}`;
}

/** The Temporal Web UI's workflow list of a namespace, filtered by a visibility query. */
export function uiListLink(uiBase: string, namespace: string, query: string): string {
  return `${uiBase.replace(/\/$/, '')}/namespaces/${encodeURIComponent(namespace)}/workflows?query=${encodeURIComponent(query)}`;
}

/** The UI base for a frontend address: TEMPORAL_UI_URL, else host with port + 1000 (the dev server's default). */
export function uiBaseFor(address: string, env: NodeJS.ProcessEnv = process.env): string {
  if (env.TEMPORAL_UI_URL) return env.TEMPORAL_UI_URL;
  const m = /^(.*):(\d+)$/.exec(address);
  const host = m?.[1] ? m[1].replace(/^\[(.*)\]$/, '$1') : 'localhost';
  const port = env.TEMPORAL_UI_PORT ? Number(env.TEMPORAL_UI_PORT) : m?.[2] ? Number(m[2]) + 1000 : 8233;
  const h = host === '127.0.0.1' || host === '0.0.0.0' ? 'localhost' : host;
  return `http://${h}:${port}`;
}
