/**
 * The coding half of `npm run bench:traces` (`--coding DIR`, docs/real-agents.md "Coding
 * agents"): recorded runs of real coding agents (bench/traces/coding.ts) replayed through
 * `runReplay` (client/replay.ts, the code `npm run replay` runs) in each variant of the record,
 * counted per data set: resolved runs stopped (false stops) by reason, resolved runs steered by
 * the first steer's reason, unresolved runs stopped, and the labelled loops caught or missed.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runReplay } from '../../client/replay';
import type { ReplayOutcome } from '../../guard';
import {
  convertCoding,
  readCodingDir,
  type CodingLoop,
  type CodingRecord,
  type CodingVariant,
  type ConvertedCodingRun,
} from './coding';

/** Loops of one class: labelled, caught, the missed runs. */
export interface CodingLoopCount {
  labelled: number;
  caught: number;
  missed: string[];
}

/** One data set's figures in one variant. */
export interface CodingRow {
  dataset: string;
  runs: number;
  resolved: number;
  calls: number;
  callsMax: number;
  falseStops: Record<string, number>;
  falseStopRuns: string[];
  steeredResolved: Record<string, number>;
  unresolvedStopped: Record<string, number>;
  loops: Record<CodingLoop['kind'], CodingLoopCount>;
}

const bump = (o: Record<string, number>, k: string): void => {
  o[k] = (o[k] ?? 0) + 1;
};

/** Whether the replay refused one of the loop's repeats or stopped the run by its last one. */
export function codingLoopCaught(loop: CodingLoop, outcome: ReplayOutcome): boolean {
  const repeats = new Set(loop.indexes.slice(1));
  if (
    outcome.decisions.some((d) => repeats.has(d.index) && (d.decision === 'steer' || d.decision === 'stop'))
  )
    return true;
  const last = loop.indexes[loop.indexes.length - 1]!;
  return outcome.terminal_state !== 'COMPLETED' && outcome.stopped_at !== null && outcome.stopped_at <= last;
}

function newRow(dataset: string): CodingRow {
  const l = (): CodingLoopCount => ({ labelled: 0, caught: 0, missed: [] });
  return {
    dataset,
    runs: 0,
    resolved: 0,
    calls: 0,
    callsMax: 0,
    falseStops: {},
    falseStopRuns: [],
    steeredResolved: {},
    unresolvedStopped: {},
    loops: { failing: l(), repeat: l(), reapplied: l() },
  };
}

/** Replays every record in one variant at `profile`; rows per data set, and each run's outcome. */
export function benchCoding(
  records: readonly CodingRecord[],
  variant: CodingVariant,
  profile: string,
  config: Record<string, number> = {},
): { rows: CodingRow[]; outcomes: Map<string, ReplayOutcome>; runs: ConvertedCodingRun[] } {
  const out = mkdtempSync(join(tmpdir(), 'bench-coding-'));
  try {
    const runs = records.map((r) => convertCoding(r, variant, profile));
    const paths = runs.map((c, i) => {
      if (Object.keys(config).length > 0) c.file = { ...c.file, config: { ...config } };
      const dir = join(out, c.dataset);
      mkdirSync(dir, { recursive: true });
      const path = join(dir, `${i}.json`);
      writeFileSync(path, JSON.stringify(c.file));
      return path;
    });
    const lines: string[] = [];
    const errors: string[] = [];
    const code = runReplay(
      paths,
      (l) => lines.push(l),
      (l) => errors.push(l),
      { profile },
    );
    if (code !== 0) throw new Error(`replay exited ${code}: ${errors.slice(0, 5).join('\n')}`);
    const rows = new Map<string, CodingRow>();
    const outcomes = new Map<string, ReplayOutcome>();
    runs.forEach((c, i) => {
      const o = JSON.parse(lines[i]!) as ReplayOutcome;
      outcomes.set(c.name, o);
      let row = rows.get(c.dataset);
      if (!row) rows.set(c.dataset, (row = newRow(c.dataset)));
      row.runs += 1;
      row.calls += c.file.calls.length;
      row.callsMax = Math.max(row.callsMax, c.file.calls.length);
      const done = o.terminal_state === 'COMPLETED';
      const reason = `${o.reason ?? 'none'}`;
      if (c.resolved) {
        row.resolved += 1;
        if (!done) {
          bump(row.falseStops, reason);
          row.falseStopRuns.push(c.name);
        }
        const steer = o.decisions.find((d) => d.decision === 'steer' || d.reason === 'no_progress');
        if (steer) bump(row.steeredResolved, steer.reason ?? 'steer');
      } else if (!done && o.reason !== 'planner_exhausted') bump(row.unresolvedStopped, reason);
      for (const loop of c.loops) {
        const count = row.loops[loop.kind];
        count.labelled += 1;
        if (codingLoopCaught(loop, o)) count.caught += 1;
        else count.missed.push(c.name);
      }
    });
    return { rows: [...rows.values()], outcomes, runs };
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

/** The rows summed. */
export function codingTotal(rows: readonly CodingRow[]): CodingRow {
  const t = newRow('ALL');
  for (const r of rows) {
    t.runs += r.runs;
    t.resolved += r.resolved;
    t.calls += r.calls;
    t.callsMax = Math.max(t.callsMax, r.callsMax);
    t.falseStopRuns.push(...r.falseStopRuns);
    for (const [k, v] of Object.entries(r.falseStops)) t.falseStops[k] = (t.falseStops[k] ?? 0) + v;
    for (const [k, v] of Object.entries(r.steeredResolved))
      t.steeredResolved[k] = (t.steeredResolved[k] ?? 0) + v;
    for (const [k, v] of Object.entries(r.unresolvedStopped))
      t.unresolvedStopped[k] = (t.unresolvedStopped[k] ?? 0) + v;
    for (const k of ['failing', 'repeat', 'reapplied'] as const) {
      t.loops[k].labelled += r.loops[k].labelled;
      t.loops[k].caught += r.loops[k].caught;
      t.loops[k].missed.push(...r.loops[k].missed);
    }
  }
  return t;
}

const sum = (o: Record<string, number>): number => Object.values(o).reduce((a, b) => a + b, 0);
const byReason = (o: Record<string, number>): string =>
  sum(o) === 0
    ? '0'
    : `${sum(o)} (${Object.entries(o)
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')})`;
const loopCell = (c: CodingLoopCount): string =>
  c.labelled === 0 ? '0' : `${c.labelled}: ${c.caught} / ${c.missed.length}`;

/** The table of one variant. */
export function codingTable(variant: string, profile: string, rows: readonly CodingRow[]): string {
  const line = (r: CodingRow): string =>
    `| ${r.dataset} | ${r.runs} | ${r.calls} | ${r.callsMax} | ${r.resolved} | ${byReason(r.falseStops)} | ${byReason(r.steeredResolved)} | ${byReason(r.unresolvedStopped)} | ${loopCell(r.loops.failing)} | ${loopCell(r.loops.repeat)} | ${loopCell(r.loops.reapplied)} |`;
  const all = codingTotal(rows);
  return [
    `coding traces, variant ${variant}, profile ${profile}: ${all.runs} recorded runs of real coding agents`,
    '',
    '| data set | runs | calls | longest | resolved | false stops (resolved, not COMPLETED) | resolved steered | unresolved stopped | loops failing: caught / missed | loops repeat: caught / missed | loops reapplied: caught / missed |',
    '|---|---:|---:|---:|---:|---|---|---|---:|---:|---:|',
    ...rows.map(line),
    ...(rows.length > 1 ? [line(all).replace('| ALL |', '| **ALL** |')] : []),
  ].join('\n');
}

export { readCodingDir };
