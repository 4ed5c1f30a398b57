/**
 * `npm run bench:guard`: cost of one guard decision pair (fingerprint + before + after)
 * as the window grows, next to the seed's algorithm (bench/seed-baseline.ts) in the
 * same process.
 *
 * Method. For window size N a fresh guard is filled with N distinct calls that make no
 * progress (limits set huge, so nothing stops and the window only grows); then K more
 * distinct pairs are timed, K = max(1, N/10), so every timed pair sees a window between
 * N and 1.1·N. Small windows are timed across several guards per batch so that one
 * timer read covers at least 256 pairs. Each size is repeated and the median batch is
 * reported; filling is not timed. Both sides fingerprint every call from raw args
 * (ours: fingerprintCall; baseline: sorted-copy + JSON.stringify), as a runtime must.
 *
 * Targets: ours(10,000) within 2x of ours(10); at least 20x faster than the
 * baseline at 1,000. `--json` prints one JSON object instead of the table.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { fingerprintCall, LoopGuard, type ToolResult } from '../guard';
import { BaselineGuard, baselineFingerprint, type BaselineCall } from './seed-baseline';

const SIZES = [10, 100, 1_000, 10_000] as const;
const PAIRS_PER_BATCH = 256;
/** Timed time per size and side before we stop repeating (ns). */
const TIMED_BUDGET_NS = 100e6;
const MIN_REPS = 5;
const MAX_REPS = 200;
/** Wall-time cap per measurement (ms), so the whole bench stays well under 30 s. */
const WALL_CAP_MS = 800;

const HUGE = { maxSteps: 1e9, maxMs: 1e15, sameCallLimit: 1e9, noProgressLimit: 1e9 };
const OK: ToolResult = { kind: 'SUCCESS' };
const BASE_OK = { kind: 'SUCCESS' } as const;
const TOOL = 'search';

/** Realistic small args: a query, a page, a nested filter object. All distinct. */
function makeArgs(count: number): BaselineCall[] {
  return Array.from({ length: count }, (_, i) => ({
    tool: TOOL,
    args: { q: `query-${i}`, page: i % 7, filters: { since: '2024-01-01', lang: 'en' }, limit: 20 },
  }));
}

let sink = 0;

/**
 * A full GC before every timed batch, so garbage left by the (untimed) filling is not
 * collected on the timed clock: otherwise large windows pay for their own set-up.
 * `--expose-gc` cannot be passed through `npm run bench:guard`, hence the V8 flag at
 * run time.
 */
const collectGarbage: () => void = (() => {
  try {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as unknown;
    if (typeof gc === 'function') return gc as () => void;
  } catch {
    // Fall through: measure without forced collections.
  }
  return () => undefined;
})();

interface Side {
  /** Creates a guard and fills it with `calls[0..n)`; returns the timed-pair function. */
  prepare(n: number): (i: number) => void;
}

/**
 * Our side. With `fps` the fingerprints are precomputed (decision cost only); without,
 * every pair normalises the raw args first, as the runtime does.
 */
function oursSide(calls: readonly BaselineCall[], fps?: readonly string[]): Side {
  return {
    prepare(n) {
      const g = new LoopGuard(HUGE);
      const pair = (i: number): void => {
        const c = calls[i]!;
        const call = { tool: c.tool, fingerprint: fps ? fps[i]! : fingerprintCall(c.tool, c.args) };
        const b = g.before(call, 0);
        if (b.decision !== 'execute') throw new Error(`ours refused call ${i}: ${JSON.stringify(b)}`);
        const a = g.after(call, OK, 0, 0);
        sink += a.decision.length;
      };
      for (let i = 0; i < n; i++) pair(i);
      if (g.windowSize !== n) throw new Error(`ours window ${g.windowSize} != ${n}`);
      return pair;
    },
  };
}

/** The baseline. With `fps` its fingerprints are precomputed too (history scan only). */
function baselineSide(calls: readonly BaselineCall[], fps?: readonly string[]): Side {
  const filled = fps ?? calls.map((c) => baselineFingerprint(c.tool, c.args));
  return {
    prepare(n) {
      const g = new BaselineGuard(HUGE);
      const pair = (i: number): void => {
        const c = calls[i]!;
        const b = fps ? g.decide(fps[i]!, c, 0) : g.before(c, 0);
        if (b.decision !== 'execute') throw new Error(`baseline refused call ${i}`);
        sink += g.after(b.fp, c, BASE_OK, 0).length;
      };
      // Same end state as n pairs (history of n distinct fingerprints), built in O(n).
      g.preload(filled.slice(0, n));
      if (g.windowSize !== n) throw new Error(`baseline window ${g.windowSize} != ${n}`);
      return pair;
    },
  };
}

/** Median ns per pair at window size n. */
function measure(side: Side, n: number): number {
  const k = Math.max(1, Math.floor(n / 10));
  const guards = Math.max(1, Math.ceil(PAIRS_PER_BATCH / k));
  const samples: number[] = [];
  let timed = 0;
  const wallStart = Date.now();
  for (let rep = 0; rep < MAX_REPS; rep++) {
    const pairs = Array.from({ length: guards }, () => side.prepare(n));
    collectGarbage();
    const t0 = process.hrtime.bigint();
    for (const pair of pairs) for (let i = n; i < n + k; i++) pair(i);
    const dt = Number(process.hrtime.bigint() - t0);
    samples.push(dt / (guards * k));
    timed += dt;
    if (rep + 1 >= MIN_REPS && (timed >= TIMED_BUDGET_NS || Date.now() - wallStart > WALL_CAP_MS)) break;
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)]!;
}

/** One row of the result. */
export interface BenchRow {
  window: number;
  ours_ns_per_pair: number;
  baseline_ns_per_pair: number;
  speedup: number;
  ours_vs_ours_10: number;
  /** The same with fingerprints precomputed: the decision cost alone. */
  decision_only: { ours_ns_per_pair: number; baseline_ns_per_pair: number; speedup: number };
}

function main(): void {
  const json = process.argv.includes('--json');
  const calls = makeArgs(Math.max(...SIZES) * 1.1 + 10);
  const ours = oursSide(calls);
  const base = baselineSide(calls);
  const oursDecide = oursSide(
    calls,
    calls.map((c) => fingerprintCall(c.tool, c.args)),
  );
  const baseDecide = baselineSide(
    calls,
    calls.map((c) => baselineFingerprint(c.tool, c.args)),
  );

  // Warm-up: let both sides reach optimised code before anything is recorded.
  for (let w = 0; w < 3; w++) {
    for (const side of [ours, base, oursDecide, baseDecide]) {
      measureQuick(side, 100);
      measureQuick(side, 1_000);
    }
  }

  const started = Date.now();
  const rows: BenchRow[] = [];
  let ours10 = 0;
  for (const n of SIZES) {
    const o = measure(ours, n);
    const b = measure(base, n);
    const od = measure(oursDecide, n);
    const bd = measure(baseDecide, n);
    if (n === 10) ours10 = o;
    rows.push({
      window: n,
      ours_ns_per_pair: round(o),
      baseline_ns_per_pair: round(b),
      speedup: round(b / o, 1),
      ours_vs_ours_10: round(o / ours10, 2),
      decision_only: {
        ours_ns_per_pair: round(od),
        baseline_ns_per_pair: round(bd),
        speedup: round(bd / od, 1),
      },
    });
  }
  const at1000 = rows.find((r) => r.window === 1_000)!;
  const at10000 = rows.find((r) => r.window === 10_000)!;
  const targets = {
    flat_per_call_cost: { limit: 2, got: at10000.ours_vs_ours_10, met: at10000.ours_vs_ours_10 <= 2 },
    speedup_at_1000: { limit: 20, got: at1000.speedup, met: at1000.speedup >= 20 },
  };

  if (json) {
    process.stdout.write(
      JSON.stringify({
        bench: 'guard',
        node: process.version,
        unit: 'ns per before+after pair',
        rows,
        targets,
        ms: Date.now() - started,
        sink: sink % 7,
      }) + '\n',
    );
    return;
  }
  const header = [
    'window',
    'ours ns/pair',
    'baseline ns/pair',
    'speed-up x',
    'ours(n)/ours(10)',
    '| decision only: ours',
    'baseline',
    'speed-up x',
  ];
  const lines = rows.map((r) => [
    r.window.toLocaleString('en-US'),
    r.ours_ns_per_pair.toLocaleString('en-US'),
    r.baseline_ns_per_pair.toLocaleString('en-US'),
    r.speedup.toFixed(1),
    r.ours_vs_ours_10.toFixed(2),
    r.decision_only.ours_ns_per_pair.toLocaleString('en-US'),
    r.decision_only.baseline_ns_per_pair.toLocaleString('en-US'),
    r.decision_only.speedup.toFixed(1),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const fmt = (cells: string[]) => cells.map((c, i) => c.padStart(widths[i]!)).join('  ');
  console.log(
    `guard bench (node ${process.version}): ns per fingerprint+before+after pair, median of batches`,
  );
  console.log(fmt(header));
  for (const l of lines) console.log(fmt(l));
  console.log(
    `targets: ours(10,000)/ours(10) <= 2: ${targets.flat_per_call_cost.met ? 'met' : 'NOT met'} (${targets.flat_per_call_cost.got}); ` +
      `speed-up at 1,000 >= 20x: ${targets.speedup_at_1000.met ? 'met' : 'NOT met'} (${targets.speedup_at_1000.got}x); ` +
      `${Date.now() - started} ms`,
  );
  if (sink < 0) console.log(sink); // keeps the work observable
}

/** A short, unrecorded run of one size (warm-up). */
function measureQuick(side: Side, n: number): void {
  const pair = side.prepare(n);
  for (let i = n; i < n + Math.max(1, n / 10); i++) pair(i);
}

function round(x: number, digits = 0): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

main();
