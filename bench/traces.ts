/**
 * `npm run bench:traces`: recorded runs of REAL models, decided as a fresh LLM run of this
 * version would (data, licence and findings in docs/real-agents.md).
 *
 * The data: every benign run of every plain-model pipeline AgentDojo published (2,760 runs of
 * 22 models from OpenAI, Anthropic, Google, Cohere and Meta; bench/traces/agentdojo/SOURCE.md).
 * bench/traces/agentdojo.ts converts each run to a replay file (docs/spec.md §6) in a temporary
 * directory; this bench then decides the files through `runReplay` (client/replay.ts), the code
 * `npm run replay` runs, at the `llm` profile (or `--profile NAME`), and counts per data set:
 *
 * - runs, and successful runs (AgentDojo's `utility`);
 * - FALSE STOPS: successful runs the guard ended (any state but COMPLETED), by reason;
 * - successful runs STEERED (at least one call refused and sent back), by reason of the first;
 * - failed runs stopped, by reason (not wrong in itself: the run failed anyway);
 * - LOOPS, labelled from the record alone (never from a replay):
 *   A. failing-call loop: the same call (tool + canonical args) failed >= 3 times with no
 *      successful write between (bench/traces/agentdojo.ts `labelLoop`);
 *   B. no-progress repeat: the same call made 3 times in a row of its own occurrences with
 *      nothing new learned and nothing written from the first to the third (the run's observed
 *      progress version unchanged, {@link labelRepeat});
 *   caught = the guard refused (steered or stopped) one of the repeats, or stopped the run
 *   before the loop's last repeat; missed = every repeat ran.
 *
 * Time: AgentDojo records each run's total duration, not each turn's; the converter spreads it
 * evenly over the model's turns (the mean is printed).
 *
 * Flags: --profile NAME (default llm) · --json (one JSON object instead of the tables) ·
 * --out DIR (keep the replay files and labels there) · --detail (list every false stop and
 * every labelled loop) · --set KEY=NUMBER (a what-if: a guard setting over the profile's, written
 * into each file's `config`; repeatable) · names of pipelines to restrict to.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runReplay } from '../client/replay';
import { canonicalJson, isGuardProfile, type ReplayOutcome } from '../guard';
import { cliFlags } from '../scripts/cli-args';
import {
  AGENTDOJO_DIR,
  datasetFiles,
  writeReplayFiles,
  type ConvertedRun,
  type LoopLabel,
  type ReplayFileJson,
} from './traces/agentdojo';
import { CODING_VARIANTS, type CodingVariant } from './traces/coding';
import { benchCoding, codingTable, codingTotal, readCodingDir } from './traces/coding-report';

/** Rule B: the same call three occurrences running with the progress version unchanged. */
export function labelRepeat(file: Pick<ReplayFileJson, 'calls'>): LoopLabel | null {
  const last = new Map<string, number[]>();
  for (let i = 0; i < file.calls.length; i++) {
    const c = file.calls[i]!;
    if (c.result.kind === 'SUCCESS' && c.tool === 'complete_task') continue;
    const key = `${c.tool}\u0000${canonicalJson(c.args)}`;
    const list = [...(last.get(key) ?? []), i].slice(-3);
    last.set(key, list);
    if (list.length === 3 && file.calls[list[0]!]!.progressVersion === c.progressVersion)
      return { tool: c.tool, indexes: list };
  }
  return null;
}

/** A call that ran and whose result went to the model with the `no_progress` note. */
const isProgressNote = (d: ReplayOutcome['decisions'][number]): boolean =>
  d.decision !== 'steer' && d.reason === 'no_progress';

/**
 * What the replay did about a labelled loop. A `no_progress` note is not a refusal (the call
 * ran): a loop is caught by it only when the stop that follows comes in time.
 */
export function loopCaught(loop: LoopLabel, outcome: ReplayOutcome): boolean {
  const repeats = new Set(loop.indexes.slice(1));
  if (
    outcome.decisions.some((d) => repeats.has(d.index) && (d.decision === 'steer' || d.decision === 'stop'))
  )
    return true;
  const lastRepeat = loop.indexes[loop.indexes.length - 1]!;
  return (
    outcome.terminal_state !== 'COMPLETED' && outcome.stopped_at !== null && outcome.stopped_at <= lastRepeat
  );
}

interface LoopCount {
  labelled: number;
  caught: number;
  missed: string[];
  caughtRuns: string[];
}

/** One data set's figures. */
export interface DatasetRow {
  dataset: string;
  runs: number;
  successful: number;
  completed: number;
  falseStops: Record<string, number>;
  falseStopRuns: string[];
  steeredSuccess: Record<string, number>;
  failedStopped: Record<string, number>;
  loopsA: LoopCount;
  loopsB: LoopCount;
  msPerTurnMean: number;
  calls: number;
  /** Calls the replay ran (executed or answered from the ledger): what the run's model paid a turn for. */
  ran: number;
  /** `no_progress` notes given: in every run, and in successful runs. */
  notes: number;
  notesSuccess: number;
}

const bump = (o: Record<string, number>, k: string): void => {
  o[k] = (o[k] ?? 0) + 1;
};

function newLoopCount(): LoopCount {
  return { labelled: 0, caught: 0, missed: [], caughtRuns: [] };
}

function countLoop(c: LoopCount, loop: LoopLabel | null, outcome: ReplayOutcome, name: string): void {
  if (!loop) return;
  c.labelled += 1;
  if (loopCaught(loop, outcome)) {
    c.caught += 1;
    c.caughtRuns.push(name);
  } else c.missed.push(name);
}

/** Converts, replays and counts; the replay files live in `out` (a temp dir unless given). */
export function benchTraces(
  options: { profile?: string; only?: readonly string[]; out?: string; config?: Record<string, number> } = {},
): {
  profile: string;
  rows: DatasetRow[];
  outcomes: Map<string, ReplayOutcome>;
} {
  const profile = options.profile ?? 'llm';
  const files = datasetFiles(AGENTDOJO_DIR, options.only ?? []);
  if (files.length === 0) throw new Error(`no data set named ${(options.only ?? []).join(', ')}`);
  const out = options.out ?? mkdtempSync(join(tmpdir(), 'bench-traces-'));
  try {
    const converted = writeReplayFiles(files, out, options.config);
    const lines: string[] = [];
    const errors: string[] = [];
    const code = runReplay(
      converted.map((c) => c.path),
      (l) => lines.push(l),
      (l) => errors.push(l),
      { profile },
    );
    if (code !== 0) throw new Error(`replay exited ${code}: ${errors.slice(0, 5).join('\n')}`);
    const outcomes = new Map<string, ReplayOutcome>();
    const rows = new Map<string, DatasetRow>();
    const turnMs = new Map<string, number[]>();
    converted.forEach((c: ConvertedRun & { path: string }, i) => {
      const outcome = JSON.parse(lines[i]!) as ReplayOutcome;
      outcomes.set(c.name, outcome);
      let row = rows.get(c.dataset);
      if (!row) {
        row = {
          dataset: c.dataset,
          runs: 0,
          successful: 0,
          completed: 0,
          falseStops: {},
          falseStopRuns: [],
          steeredSuccess: {},
          failedStopped: {},
          loopsA: newLoopCount(),
          loopsB: newLoopCount(),
          msPerTurnMean: 0,
          calls: 0,
          ran: 0,
          notes: 0,
          notesSuccess: 0,
        };
        rows.set(c.dataset, row);
      }
      row.runs += 1;
      row.calls += c.file.calls.length;
      if (c.turns > 0) turnMs.set(c.dataset, [...(turnMs.get(c.dataset) ?? []), c.msPerTurn]);
      const done = outcome.terminal_state === 'COMPLETED';
      if (done) row.completed += 1;
      const reason = outcome.reason ?? 'none';
      row.ran += outcome.executed + outcome.cached;
      const notes = outcome.decisions.filter(isProgressNote).length;
      row.notes += notes;
      if (c.success) {
        row.notesSuccess += notes;
        row.successful += 1;
        if (!done) {
          bump(row.falseStops, `${outcome.terminal_state} ${reason}`);
          row.falseStopRuns.push(c.name);
        }
        const steer = outcome.decisions.find((d) => d.decision === 'steer' || isProgressNote(d));
        if (steer) bump(row.steeredSuccess, steer.reason ?? 'steer');
      } else if (!done && outcome.reason !== 'planner_exhausted') {
        bump(row.failedStopped, `${outcome.terminal_state} ${reason}`);
      }
      countLoop(row.loopsA, c.loop, outcome, c.name);
      countLoop(row.loopsB, labelRepeat(c.file), outcome, c.name);
    });
    for (const row of rows.values()) {
      const t = turnMs.get(row.dataset) ?? [];
      row.msPerTurnMean = t.length ? Math.round(t.reduce((a, b) => a + b, 0) / t.length) : 0;
    }
    return { profile, rows: [...rows.values()], outcomes };
  } finally {
    if (options.out === undefined) rmSync(out, { recursive: true, force: true });
  }
}

function total(rows: readonly DatasetRow[]): DatasetRow {
  const t: DatasetRow = {
    dataset: 'ALL',
    runs: 0,
    successful: 0,
    completed: 0,
    falseStops: {},
    falseStopRuns: [],
    steeredSuccess: {},
    failedStopped: {},
    loopsA: newLoopCount(),
    loopsB: newLoopCount(),
    msPerTurnMean: 0,
    calls: 0,
    ran: 0,
    notes: 0,
    notesSuccess: 0,
  };
  let turnSum = 0;
  for (const r of rows) {
    t.runs += r.runs;
    t.successful += r.successful;
    t.completed += r.completed;
    t.calls += r.calls;
    t.ran += r.ran;
    t.notes += r.notes;
    t.notesSuccess += r.notesSuccess;
    turnSum += r.msPerTurnMean * r.runs;
    t.falseStopRuns.push(...r.falseStopRuns);
    for (const [k, v] of Object.entries(r.falseStops)) t.falseStops[k] = (t.falseStops[k] ?? 0) + v;
    for (const [k, v] of Object.entries(r.steeredSuccess))
      t.steeredSuccess[k] = (t.steeredSuccess[k] ?? 0) + v;
    for (const [k, v] of Object.entries(r.failedStopped)) t.failedStopped[k] = (t.failedStopped[k] ?? 0) + v;
    for (const key of ['loopsA', 'loopsB'] as const) {
      t[key].labelled += r[key].labelled;
      t[key].caught += r[key].caught;
      t[key].missed.push(...r[key].missed);
      t[key].caughtRuns.push(...r[key].caughtRuns);
    }
  }
  t.msPerTurnMean = t.runs ? Math.round(turnSum / t.runs) : 0;
  return t;
}

const sum = (o: Record<string, number>): number => Object.values(o).reduce((a, b) => a + b, 0);
const byReason = (o: Record<string, number>): string =>
  Object.keys(o).length === 0
    ? '-'
    : Object.entries(o)
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([k, v]) => `${k.replace(/^STOPPED_LOOP_GUARD /, '')} ${v}`)
        .join(', ');
/** A list of run names, the first ten and a count of the rest. */
const names = (list: readonly string[]): string =>
  list.length <= 10
    ? list.join(', ')
    : `${list.slice(0, 10).join(', ')} and ${list.length - 10} more (--detail)`;
const loops = (c: LoopCount): string =>
  c.labelled === 0 ? '0' : `${c.labelled}: ${c.caught} / ${c.missed.length}`;

function table(profile: string, rows: readonly DatasetRow[]): string {
  const all = total(rows);
  const head =
    '| data set | runs | calls | s/turn | successful | COMPLETED | false stops | successful steered | failed runs stopped | loops A: caught / missed | loops B: caught / missed |';
  const sep = '|---|---:|---:|---:|---:|---:|---|---|---|---:|---:|';
  const line = (r: DatasetRow): string =>
    `| ${r.dataset} | ${r.runs} | ${r.calls} | ${(r.msPerTurnMean / 1000).toFixed(1)} | ${r.successful} | ${r.completed} | ` +
    `${sum(r.falseStops)}${sum(r.falseStops) ? ` (${byReason(r.falseStops)})` : ''} | ` +
    `${sum(r.steeredSuccess)}${sum(r.steeredSuccess) ? ` (${byReason(r.steeredSuccess)})` : ''} | ` +
    `${sum(r.failedStopped)}${sum(r.failedStopped) ? ` (${byReason(r.failedStopped)})` : ''} | ${loops(r.loopsA)} | ${loops(r.loopsB)} |`;
  return [
    `bench:traces: ${all.runs} recorded AgentDojo runs of real models, decided by npm run replay at profile ${profile}`,
    '',
    head,
    sep,
    ...rows.map(line),
    line(all).replace('| ALL |', '| **ALL** |'),
    '',
    `false stops (successful runs not COMPLETED): ${sum(all.falseStops)} of ${all.successful}` +
      (all.falseStopRuns.length ? `: ${names(all.falseStopRuns)}` : ''),
    `loops A (same call failed >= 3 times, no write between): ${all.loopsA.labelled} labelled, ${all.loopsA.caught} caught, ${all.loopsA.missed.length} missed` +
      (all.loopsA.missed.length ? ` (${names(all.loopsA.missed)})` : ''),
    `loops B (same call 3 times, nothing learned or written between): ${all.loopsB.labelled} labelled, ${all.loopsB.caught} caught, ${all.loopsB.missed.length} missed` +
      (all.loopsB.missed.length ? ` (${names(all.loopsB.missed)})` : ''),
    `calls run (executed or cached): ${all.ran}; no_progress notes: ${all.notes} (${all.notesSuccess} in successful runs)`,
  ].join('\n');
}

function main(argv: readonly string[]): void {
  let profile = 'llm';
  let json = false;
  let out: string | undefined;
  let detail = false;
  let profileGiven = false;
  const coding: string[] = [];
  const variants: CodingVariant[] = [];
  const only: string[] = [];
  const config: Record<string, number> = {};
  for (const { flag, value } of cliFlags(argv)) {
    if (flag === '--profile') {
      profile = value() ?? '';
      profileGiven = true;
    } else if (flag === '--coding') coding.push(value() ?? '');
    else if (flag === '--variant') {
      const v = value() ?? '';
      if (!(CODING_VARIANTS as readonly string[]).includes(v))
        throw new Error(`--variant: one of ${CODING_VARIANTS.join(', ')}`);
      variants.push(v as CodingVariant);
    } else if (flag === '--json') json = true;
    else if (flag === '--out') out = value();
    else if (flag === '--detail') detail = true;
    else if (flag === '--set') {
      const [k, v] = (value() ?? '').split('=');
      if (!k || v === undefined || !Number.isFinite(Number(v))) throw new Error('--set KEY=NUMBER');
      config[k] = Number(v);
    } else if (flag.startsWith('--')) throw new Error(`unknown flag ${flag}`);
    else only.push(flag);
  }
  if (!isGuardProfile(profile)) {
    process.stderr.write(`bench:traces: --profile: unknown guard profile "${profile}"\n`);
    process.exitCode = 2;
    return;
  }
  const started = Date.now();
  if (coding.length > 0) {
    mainCoding(coding, variants, profileGiven ? profile : null, config, json, detail);
    process.stdout.write(`\n(${((Date.now() - started) / 1000).toFixed(1)} s)\n`);
    return;
  }
  const { rows, outcomes } = benchTraces({ profile, only, out, config });
  if (json) {
    process.stdout.write(JSON.stringify({ profile, config, rows, total: total(rows) }) + '\n');
    return;
  }
  const what = Object.keys(config).length
    ? `${profile} with ${Object.entries(config)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')}`
    : profile;
  process.stdout.write(table(what, rows) + '\n');
  if (detail) {
    const all = total(rows);
    const show = (name: string): string => {
      const o = outcomes.get(name)!;
      return `  ${name}: ${o.terminal_state} ${o.reason ?? ''} at call ${o.stopped_at ?? '-'}; decisions ${o.decisions
        .map((d) =>
          d.decision === 'execute' && !d.reason
            ? 'x'
            : `${d.decision === 'execute' ? 'x+note' : d.decision}${d.reason ? `:${d.reason}` : ''}@${d.index}`,
        )
        .join(' ')}`;
    };
    process.stdout.write('\nfalse stops:\n' + all.falseStopRuns.map(show).join('\n') + '\n');
    process.stdout.write(
      '\nloops A:\n' + [...all.loopsA.caughtRuns, ...all.loopsA.missed].map(show).join('\n') + '\n',
    );
    process.stdout.write(
      '\nloops B:\n' + [...all.loopsB.caughtRuns, ...all.loopsB.missed].map(show).join('\n') + '\n',
    );
  }
  process.stdout.write(`\n(${((Date.now() - started) / 1000).toFixed(1)} s)\n`);
}

/**
 * `--coding DIR`: the coding records under DIR (bench/traces/coding.ts), each variant replayed.
 * Without `--variant` / `--profile`: before (`naive` and `exit-as-result` at `llm`, the runtime
 * without workspace reports or a coding profile) and after (`workspace` at `coding`).
 */
function mainCoding(
  dirs: readonly string[],
  variants: readonly CodingVariant[],
  profile: string | null,
  config: Record<string, number>,
  json: boolean,
  detail: boolean,
): void {
  const records = dirs.flatMap((d) => readCodingDir(d));
  const plan: Array<[CodingVariant, string]> =
    variants.length > 0 || profile !== null
      ? (variants.length > 0 ? variants : CODING_VARIANTS).map((v) => [v, profile ?? 'llm'])
      : [
          ['naive', 'llm'],
          ['exit-as-result', 'llm'],
          ['workspace', 'llm'],
          ['workspace', 'coding'],
        ];
  const results = [];
  for (const [variant, p] of plan) {
    const { rows, outcomes } = benchCoding(records, variant, p, config);
    results.push({ variant, profile: p, rows, total: codingTotal(rows) });
    if (json) continue;
    process.stdout.write(codingTable(variant, p, rows) + '\n');
    const all = codingTotal(rows);
    const show = (name: string): string => {
      const o = outcomes.get(name)!;
      const marks = o.decisions
        .filter((d) => d.decision !== 'execute' || d.reason)
        .map((d) => `${d.decision}${d.reason ? `:${d.reason}` : ''}@${d.index}`)
        .join(' ');
      return `  ${name}: ${o.terminal_state} ${o.reason ?? ''} at call ${o.stopped_at ?? '-'} ${marks}`;
    };
    if (detail) {
      process.stdout.write('false stops:\n' + all.falseStopRuns.map(show).join('\n') + '\n');
      for (const k of ['failing', 'repeat', 'reapplied'] as const)
        process.stdout.write(`loops ${k} missed:\n` + all.loops[k].missed.map(show).join('\n') + '\n');
    }
    process.stdout.write('\n');
  }
  if (json) process.stdout.write(JSON.stringify({ config, results }) + '\n');
}

if (require.main === module) main(process.argv.slice(2));

/** For the test: the committed data's directory. */
export { AGENTDOJO_DIR };
/** Reads a replay file the converter wrote. */
export const readReplayJson = (path: string): ReplayFileJson =>
  JSON.parse(readFileSync(path, 'utf8')) as ReplayFileJson;
