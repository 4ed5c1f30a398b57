/**
 * `npm run bench:long`: one long LLM run, end to end.
 *
 * Everything is in-process and throwaway, as in bench/run.ts: an in-memory Temporal dev
 * server on a free port with fast workflow-task dispatch (`FAST_DISPATCH_DYNAMIC_CONFIG`),
 * one worker with the real workflow + activities on a fresh temp SQLite file (ledger +
 * demo world), and the long-run model server (scripts/long-model/server.ts: `--turns`
 * notes of `--note-chars` characters, a `--window-chars` context window). The worker's
 * built-in `openai` endpoint points at it (`OPENAI_BASE_URL`, `OPENAI_API_KEY=dummy`, set
 * in this process's env before the worker exists; the planner reads them per turn).
 *
 * ONE run: planner `{ kind: 'openai', model: 'long-model', contextTokens: --context-tokens }`
 * (contextTokens only when the planner spec schema accepts it, else left out and said so),
 * the goal "write note-<n> for n = 1 … turns with write_record, one per turn, then finish",
 * guard `maxSteps: turns + 50`, `maxMs` 1e12 (only the model ends it), `resumeWindowMs` 1 s
 * so a stopped run closes instead of waiting a week. Measured, after the result:
 *  - terminal state (reason), completed turns = write_record executions (the world DB's
 *    counter), model requests and refusals (the server's stats);
 *  - history bytes over every run of the continue-as-new chain, total and per completed
 *    turn (target ≤ 25 KB/turn);
 *  - flatness: bytes attributable to turns 10–20 % vs 90–100 % of the run (100–200 vs
 *    900–1,000 for 1,000 turns; attribution in bench/long-history.ts) and their ratio;
 *  - the largest request sent to the model (chars of conversation JSON, as the server counts);
 *  - seconds per turn around turn 10 % and around the last turn (±10 turns, from the
 *    runTool ActivityTaskScheduled timestamps) and their ratio (target ≤ 1.5×);
 *  - rows in the conversation store (`agent_conversation`) and the payload store
 *    (`agent_payloads`) of the ledger file (n/a when the table does not exist).
 *
 * `--ops N` runs the scripted row instead (bench/long-ops.ts): a live scripted run of N
 * distinct writes, no model; its checkpoint size at every continue-as-new and history per op.
 *
 * Flags: --ops N (scripted row; --plain: its calls written out)  --turns N (1000)  --note-chars N (3000)  --window-chars N (300000)
 *        --context-tokens N (100000; 0 = leave it out)  --timeout-s N (3600)
 *        --provider openai|anthropic (openai; anthropic points ANTHROPIC_BASE_URL at the server)  --json
 */
import { randomUUID } from 'node:crypto';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { quietWorkflowBundle } from '../scripts/workflow-bundle';
import { openSqlite } from '../storage/sqlite-driver';
import type { RunInput, RunResult } from '../common/contracts';
import { plannerSpecSchema } from '../common/planner';
import { longRunGoal, startLongModelServer, type LongModelStats } from '../scripts/long-model/server';
import type { agentRun } from '../workflows';
import {
  bytesOfTurns,
  CONTINUE_AS_NEW_KINDS,
  kindBytesOfTurns,
  measureChain,
  secondsPerTurnAround,
  type ChainMeasure,
} from './long-history';
import { cliFlags, intFlag } from '../scripts/cli-args';
import { runBench } from './bench-worker';
import { opsTable, runOpsBench, startLongBenchStack } from './long-ops';
import { agentRunResult } from '../client/runs';

interface Options {
  /** The scripted row's writes (null: the LLM run). */
  ops: number | null;
  /** With --ops: the script's calls written out one by one, not one `repeat` entry. */
  plain: boolean;
  turns: number;
  noteChars: number;
  windowChars: number;
  contextTokens: number;
  timeoutS: number;
  provider: 'openai' | 'anthropic';
  json: boolean;
}

function parseArgs(argv: string[]): Options {
  const o: Options = {
    ops: null,
    plain: false,
    turns: 1000,
    noteChars: 3000,
    windowChars: 300_000,
    contextTokens: 100_000,
    timeoutS: 3600,
    provider: 'openai',
    json: false,
  };
  const int = intFlag;
  for (const { flag, value } of cliFlags(argv)) {
    switch (flag) {
      case '--ops':
        o.ops = int(flag, value(), 1);
        break;
      case '--plain':
        o.plain = true;
        break;
      case '--turns':
        o.turns = int(flag, value(), 20);
        break;
      case '--note-chars':
        o.noteChars = int(flag, value(), 1);
        break;
      case '--window-chars':
        o.windowChars = int(flag, value(), 1);
        break;
      case '--context-tokens':
        o.contextTokens = int(flag, value(), 0);
        break;
      case '--timeout-s':
        o.timeoutS = int(flag, value(), 1);
        break;
      case '--provider': {
        const v = value();
        if (v !== 'openai' && v !== 'anthropic')
          throw new Error(`--provider: expected openai or anthropic, got ${v}`);
        o.provider = v;
        break;
      }
      case '--json':
        o.json = true;
        break;
      case '-h':
      case '--help':
        process.stdout.write(
          'usage: tsx bench/long.ts [--ops N [--plain] | --turns 1000] [--note-chars 3000] [--window-chars 300000] [--context-tokens 100000] [--timeout-s 3600] [--provider openai|anthropic] [--json]\n',
        );
        process.exit(0);
        break;
      default:
        throw new Error(`unknown flag ${flag} (try --help)`);
    }
  }
  return o;
}

/** Whether the planner spec schema accepts `contextTokens`; older code refuses unknown fields. */
export function contextTokensSupported(): boolean {
  return plannerSpecSchema.safeParse({ kind: 'openai', contextTokens: 100_000 }).success;
}

/** Rows of `table` in the SQLite file, or null when the table does not exist. */
export function countRows(file: string, table: string): number | null {
  const db = openSqlite(file, { readOnly: true });
  try {
    const exists = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(table);
    if (!exists) return null;
    return Number((db.prepare(`SELECT count(*) AS n FROM "${table}"`).get() as unknown as { n: number }).n);
  } finally {
    db.close();
  }
}

export interface LongBenchResult {
  turnsTarget: number;
  noteChars: number;
  windowChars: number;
  provider: 'openai' | 'anthropic';
  contextTokens: number | null;
  contextTokensNote: string | null;
  terminalState: string;
  reason: string | null;
  completedTurns: number;
  executed: number;
  model: Omit<LongModelStats, 'perRequest'>;
  history: {
    runs: number;
    /** Turns completed before each continue-as-new. */
    continuedAtTurn: readonly number[];
    events: number;
    bytes: number;
    bytesPerTurn: number;
    early: { from: number; to: number; bytes: number };
    late: { from: number; to: number; bytes: number };
    lateOverEarly: number | null;
    /** The same two windows without the continue-as-new boundary events (CONTINUE_AS_NEW_KINDS). */
    earlyNoBoundary: number;
    lateNoBoundary: number;
    lateOverEarlyNoBoundary: number | null;
    /** Event kinds whose bytes differ most between the late and the early window (late − early). */
    lateMinusEarlyByKind: Record<string, number>;
    /** Bytes per completed turn by event kind (largest first). */
    perTurnByKind: Record<string, number>;
  };
  secondsPerTurn: {
    early: { at: number; s: number | null };
    late: { at: number; s: number | null };
    ratio: number | null;
  };
  conversationRows: number | null;
  payloadRows: number | null;
  wallS: number;
}

function summarise(
  o: Options,
  r: RunResult,
  writes: number,
  stats: LongModelStats,
  m: ChainMeasure,
  rows: { conversation: number | null; payloads: number | null },
  contextTokens: number | null,
  contextTokensNote: string | null,
  wallS: number,
): LongBenchResult {
  const n = o.turns;
  const early = { from: Math.round(n * 0.1), to: Math.round(n * 0.2) };
  const late = { from: Math.round(n * 0.9), to: n };
  const earlyBytes = bytesOfTurns(m, early.from, early.to);
  const lateBytes = bytesOfTurns(m, late.from, late.to);
  const lateComplete = m.turns >= late.to;
  const earlyKinds = kindBytesOfTurns(m, early.from, early.to);
  const lateKinds = kindBytesOfTurns(m, late.from, late.to);
  const withoutBoundary = (kinds: Record<string, number>): number =>
    Object.entries(kinds).reduce((sum, [k, v]) => (CONTINUE_AS_NEW_KINDS.includes(k) ? sum : sum + v), 0);
  const earlyNoBoundary = withoutBoundary(earlyKinds);
  const lateNoBoundary = withoutBoundary(lateKinds);
  const sEarly = secondsPerTurnAround(m, early.from);
  const sLate = m.turns >= n ? secondsPerTurnAround(m, n) : null;
  const { perRequest: _perRequest, ...model } = stats;
  return {
    turnsTarget: n,
    provider: o.provider,
    noteChars: o.noteChars,
    windowChars: o.windowChars,
    contextTokens,
    contextTokensNote,
    terminalState: r.terminal_state,
    reason: r.reason ?? null,
    completedTurns: writes,
    executed: r.executed,
    model,
    history: {
      runs: m.runs,
      continuedAtTurn: m.continuedAtTurn,
      events: m.events,
      bytes: m.bytes,
      bytesPerTurn: writes > 0 ? m.bytes / writes : m.bytes,
      early: { ...early, bytes: earlyBytes },
      late: { ...late, bytes: lateComplete ? lateBytes : 0 },
      lateOverEarly: lateComplete && earlyBytes > 0 ? lateBytes / earlyBytes : null,
      earlyNoBoundary,
      lateNoBoundary,
      lateOverEarlyNoBoundary: lateComplete && earlyNoBoundary > 0 ? lateNoBoundary / earlyNoBoundary : null,
      lateMinusEarlyByKind: Object.fromEntries(
        [...new Set([...Object.keys(earlyKinds), ...Object.keys(lateKinds)])]
          .map((k) => [k, (lateKinds[k] ?? 0) - (earlyKinds[k] ?? 0)] as const)
          .filter(([, d]) => d !== 0)
          .sort((a, b) => Math.abs(b[1]) - Math.abs(a[1]))
          .slice(0, 8),
      ),
      perTurnByKind: Object.fromEntries(
        Object.entries(m.bytesByKind)
          .sort((a, b) => b[1] - a[1])
          .map(([k, v]) => [k, Math.round(v / Math.max(1, writes))]),
      ),
    },
    secondsPerTurn: {
      early: { at: early.from, s: sEarly },
      late: { at: n, s: sLate },
      ratio: sEarly && sLate ? sLate / sEarly : null,
    },
    conversationRows: rows.conversation,
    payloadRows: rows.payloads,
    wallS,
  };
}

const fmt = (n: number, d = 0): string =>
  n.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });
const kb = (b: number): string => `${fmt(b / 1024, 1)} KB`;
const opt = (v: number | null, f: (x: number) => string): string => (v === null ? 'n/a' : f(v));

/** The Markdown table of a result. */
export function longTable(b: LongBenchResult): string {
  const verdict = (ok: boolean): string => (ok ? 'ok' : 'MISSED');
  const rows: [string, string, string][] = [
    [
      'terminal state',
      `${b.terminalState}${b.reason ? ` (${b.reason})` : ''}`,
      b.terminalState === 'COMPLETED' ? 'ok' : 'MISSED',
    ],
    [
      'completed turns (write_record executions)',
      `${fmt(b.completedTurns)} of ${fmt(b.turnsTarget)}`,
      verdict(b.completedTurns === b.turnsTarget),
    ],
    ['model requests (accepted)', `${fmt(b.model.requests)} (${fmt(b.model.accepted)})`, ''],
    ['refused for context', fmt(b.model.refusedForContext), verdict(b.model.refusedForContext === 0)],
    ['protocol errors', fmt(b.model.protocolErrors), verdict(b.model.protocolErrors === 0)],
    [
      'runs in the continue-as-new chain',
      `${fmt(b.history.runs)}${b.history.continuedAtTurn.length > 0 ? ` (continued after turns ${b.history.continuedAtTurn.join(', ')})` : ''}`,
      '',
    ],
    ['history total (events)', `${fmt(b.history.bytes / 1e6, 2)} MB (${fmt(b.history.events)})`, ''],
    [
      'history per completed turn (target ≤ 25 KB)',
      kb(b.history.bytesPerTurn),
      verdict(b.history.bytesPerTurn <= 25 * 1024),
    ],
    [`history, turns ${b.history.early.from}–${b.history.early.to}`, kb(b.history.early.bytes), ''],
    [
      `history, turns ${b.history.late.from}–${b.history.late.to}`,
      b.history.lateOverEarly === null ? 'n/a (not reached)' : kb(b.history.late.bytes),
      '',
    ],
    [
      'late / early history (target ≤ 1.0; ok ≤ 1.05)',
      opt(b.history.lateOverEarly, (x) => `${fmt(x, 2)}×`),
      b.history.lateOverEarly === null ? 'MISSED' : verdict(b.history.lateOverEarly <= 1.05),
    ],
    [
      'late / early, continue-as-new boundary events left out',
      b.history.lateOverEarlyNoBoundary === null
        ? 'n/a'
        : `${fmt(b.history.lateOverEarlyNoBoundary, 2)}× (${kb(b.history.earlyNoBoundary)} → ${kb(b.history.lateNoBoundary)})`,
      '',
    ],
    [
      'largest request to the model (accepted)',
      `${fmt(b.model.maxRequestChars)} chars (${fmt(b.model.maxAcceptedRequestChars)})`,
      verdict(b.model.maxAcceptedRequestChars <= b.windowChars),
    ],
    [`s/turn around turn ${b.secondsPerTurn.early.at}`, opt(b.secondsPerTurn.early.s, (x) => fmt(x, 3)), ''],
    [`s/turn around turn ${b.secondsPerTurn.late.at}`, opt(b.secondsPerTurn.late.s, (x) => fmt(x, 3)), ''],
    [
      'late / early s/turn (target ≤ 1.5)',
      opt(b.secondsPerTurn.ratio, (x) => `${fmt(x, 2)}×`),
      b.secondsPerTurn.ratio === null ? 'MISSED' : verdict(b.secondsPerTurn.ratio <= 1.5),
    ],
    ['rows in agent_conversation', opt(b.conversationRows, fmt), ''],
    ['rows in agent_payloads', opt(b.payloadRows, fmt), ''],
    ['wall time', `${fmt(b.wallS, 1)} s`, ''],
  ];
  return [
    '',
    `Long run: ${fmt(b.turnsTarget)} turns of ${fmt(b.noteChars)}-char notes, ${fmt(b.windowChars)}-char window, planner ${b.provider}/long-model, contextTokens ${b.contextTokens ?? `not set (${b.contextTokensNote})`}`,
    '',
    '| measure | value | target |',
    '|---|---:|---|',
    ...rows.map(([k, v, t]) => `| ${k} | ${v} | ${t} |`),
    '',
    `Late minus early window (turns ${b.history.late.from}–${b.history.late.to} vs ${b.history.early.from}–${b.history.early.to}), bytes by event kind`,
    '',
    '| event | late − early |',
    '|---|---:|',
    ...Object.entries(b.history.lateMinusEarlyByKind).map(([k, v]) => `| ${k} | ${fmt(v)} |`),
    '',
    'History bytes per completed turn, by event kind (largest first)',
    '',
    '| event | bytes/turn |',
    '|---|---:|',
    ...Object.entries(b.history.perTurnByKind)
      .slice(0, 10)
      .map(([k, v]) => `| ${k} | ${fmt(v)} |`),
    '',
  ].join('\n');
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  const log = (msg: string): void => {
    if (!o.json) process.stderr.write(`${msg}\n`);
  };
  if (o.ops !== null) {
    const r = await runOpsBench(o.ops, o.timeoutS, log, o.plain);
    process.stdout.write(o.json ? `${JSON.stringify(r)}\n` : opsTable(r));
    return;
  }
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const wall0 = performance.now();
  const bundle = await quietWorkflowBundle();

  const model = await startLongModelServer({
    turns: o.turns,
    noteChars: o.noteChars,
    windowChars: o.windowChars,
  });
  // The planner reads its endpoint and key from process.env on every turn.
  process.env.OPENAI_BASE_URL = model.baseURL;
  process.env.OPENAI_API_KEY = 'dummy';
  process.env.ANTHROPIC_BASE_URL = model.origin;
  process.env.ANTHROPIC_API_KEY = 'dummy';
  const { deps, bench, dbFile, close } = await startLongBenchStack('long', bundle);
  const { client, taskQueue } = bench;
  try {
    const supported = o.contextTokens > 0 && contextTokensSupported();
    const contextTokensNote =
      o.contextTokens === 0
        ? '--context-tokens 0'
        : supported
          ? null
          : 'the planner spec does not accept contextTokens yet';
    const input: RunInput = {
      goal: longRunGoal(o.turns),
      planner: {
        kind: o.provider,
        model: 'long-model',
        ...(supported ? { contextTokens: o.contextTokens } : {}),
      } as RunInput['planner'],
      guard: { maxSteps: o.turns + 50, maxMs: 1e12 },
      resumeWindowMs: 1000,
    };
    const workflowId = `bench-long-${randomUUID()}`;
    log(
      `bench:long: ${o.turns} ${o.provider} turns against ${o.provider === 'openai' ? model.baseURL : model.origin} (contextTokens ${supported ? o.contextTokens : `not set: ${contextTokensNote}`}); workflow ${workflowId}`,
    );
    const handle = await client.workflow.start<typeof agentRun>('agentRun', {
      taskQueue,
      workflowId,
      args: [input],
      staticSummary: input.goal,
    });
    const progress = setInterval(() => {
      const s = model.stats();
      log(
        `  … ${s.requests} model requests, last note ${s.lastNote}, ${s.refusedForContext} refused, largest ${fmt(s.maxRequestChars)} chars`,
      );
    }, 15_000);
    let result: RunResult;
    try {
      result = await Promise.race([
        agentRunResult(handle),
        new Promise<never>((_, reject) =>
          setTimeout(() => reject(new Error(`no result after ${o.timeoutS} s`)), o.timeoutS * 1000).unref(),
        ),
      ]);
    } finally {
      clearInterval(progress);
    }
    log(`  run ended ${result.terminal_state} (${result.reason ?? ''}); measuring the history chain…`);
    const writes = (await deps.world.counters(workflowId)).write_record ?? 0;
    const measure = await measureChain(client, workflowId);
    const rows = {
      conversation: countRows(dbFile, 'agent_conversation'),
      payloads: countRows(dbFile, 'agent_payloads'),
    };
    const out = summarise(
      o,
      result,
      writes,
      model.stats(),
      measure,
      rows,
      supported ? o.contextTokens : null,
      contextTokensNote,
      (performance.now() - wall0) / 1000,
    );
    process.stdout.write(o.json ? `${JSON.stringify(out)}\n` : longTable(out));
  } finally {
    await close();
    await model.close();
  }
}

if (require.main === module) runBench('bench:long', main);
