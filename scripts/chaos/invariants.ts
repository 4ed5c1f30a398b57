/**
 * What a chaos run must show at the end, checked from the outside: the runs' closed
 * results, the side-effect rows and the ledger's records (docs/chaos.md).
 *
 *  1. every run settled in an explicit terminal state, none FAILED (nor failed, timed out or
 *     terminated as a workflow) — infrastructure faults must not end a run;
 *  2. no run lost: every started workflow id is found and readable;
 *  3. each operation key's side effect executed at most once (rows per key ≤ 1);
 *  4. every side effect is accounted for by its ledger record (SUCCEEDED, or UNKNOWN), and no
 *     SUCCEEDED record lacks its side effect;
 *  5. every UNKNOWN record belongs to an executor that died between dispatch and commit (its
 *     owner's pid was SIGKILLed) or to the PostgreSQL crash, and its run stopped NEEDS_HUMAN
 *     `outcome_unknown`; every such run has an UNKNOWN record;
 *  6. the chaos happened while runs were in flight (so a pass is not vacuous).
 */
import type { RunResult } from '../../common/contracts';

/** One run as read at the end. */
export interface RunOutcome {
  readonly id: string;
  /** The workflow execution status (COMPLETED = the workflow returned a RunResult). */
  readonly status: string;
  readonly result: RunResult | null;
}

/** One chaos event. */
export type ChaosEvent =
  | { kind: 'worker_kill'; atMs: number; openRuns: number; pid: number }
  | { kind: 'temporal_restart'; atMs: number; openRuns: number; downMs: number }
  | { kind: 'postgres_restart'; atMs: number; openRuns: number; downMs: number };

/** What {@link checkInvariants} reads. */
export interface ChaosFacts {
  readonly options: { runs: number; writesPerRun: number; workers: number; kills: number };
  readonly outcomes: readonly RunOutcome[];
  readonly effects: readonly { op_key: string; run_id: string; pid: number }[];
  readonly ledger: readonly { key: string; state: string; owner: string; run_id: string }[];
  readonly events: readonly ChaosEvent[];
  readonly killedPids: ReadonlySet<number>;
  readonly unexpectedExits: readonly { pid: number; code: number | null; signal: string | null }[];
  readonly settledMs: number;
  readonly totalMs: number;
}

/** One invariant's verdict. */
export interface InvariantResult {
  readonly name: string;
  readonly ok: boolean;
  readonly detail: string;
}

/** The chaos run's figures and verdicts. */
export interface ChaosReport {
  readonly ok: boolean;
  readonly invariants: InvariantResult[];
  readonly figures: Record<string, string | number>;
  readonly terminalStates: Record<string, number>;
  readonly events: readonly ChaosEvent[];
  /** Up to 20 examples per violated invariant. */
  readonly examples: Record<string, string[]>;
}

const OWNER_PID = /^worker-(\d+)\//;

/** Checks the invariants (see the module comment). */
export function checkInvariants(f: ChaosFacts): ChaosReport {
  const invariants: InvariantResult[] = [];
  const examples: Record<string, string[]> = {};
  const check = (name: string, bad: string[], detail: string): void => {
    invariants.push({
      name,
      ok: bad.length === 0,
      detail: bad.length === 0 ? detail : `${bad.length} violation(s)`,
    });
    if (bad.length > 0) examples[name] = bad.slice(0, 20);
  };

  // 1 + 2: terminal states, nothing lost.
  const terminalStates: Record<string, number> = {};
  const notTerminal: string[] = [];
  const lost: string[] = [];
  const byRun = new Map<string, RunOutcome>();
  for (const r of f.outcomes) {
    byRun.set(r.id, r);
    if (r.status === 'NOT_FOUND' || r.status === 'NOT_STARTED' || r.status.startsWith('UNREADABLE')) {
      lost.push(`${r.id}: ${r.status}`);
      continue;
    }
    if (r.status !== 'COMPLETED' || !r.result) {
      notTerminal.push(`${r.id}: workflow ${r.status}`);
      terminalStates[`workflow ${r.status}`] = (terminalStates[`workflow ${r.status}`] ?? 0) + 1;
      continue;
    }
    const k = r.result.reason ? `${r.result.terminal_state} ${r.result.reason}` : r.result.terminal_state;
    terminalStates[k] = (terminalStates[k] ?? 0) + 1;
    const s = r.result.terminal_state;
    const allowed = s === 'COMPLETED' || s === 'NEEDS_HUMAN';
    if (!allowed) {
      const steps = r.result.decisions
        .map((d) => `${d.index}:${d.decision}${d.after ? `>${d.after}` : ''}`)
        .join(' ');
      notTerminal.push(`${r.id}: ${k}${r.result.summary ? ` (${r.result.summary})` : ''} [${steps}]`);
    }
  }
  check(
    'every run ended in an explicit terminal state (COMPLETED or NEEDS_HUMAN), none FAILED',
    notTerminal,
    Object.entries(terminalStates)
      .map(([k, n]) => `${k}: ${n}`)
      .join(', '),
  );
  check('no run lost (every started id found and readable)', lost, `${f.outcomes.length} runs read`);

  // 3: at most once.
  const effectsByKey = new Map<string, { run_id: string; pid: number }[]>();
  for (const e of f.effects) effectsByKey.set(e.op_key, [...(effectsByKey.get(e.op_key) ?? []), e]);
  const dupes = [...effectsByKey]
    .filter(([, rows]) => rows.length > 1)
    .map(([k, rows]) => `${k}: ${rows.length} executions (pids ${rows.map((r) => r.pid).join(', ')})`);
  check(
    'each operation key executed at most once',
    dupes,
    `${f.effects.length} side effects over ${effectsByKey.size} keys`,
  );

  // 4: effects vs ledger records. A record still DISPATCHED is in doubt, like UNKNOWN (the next
  // claim of its key turns it UNKNOWN): allowed when its executor died or PostgreSQL crashed.
  const pgRestarts = f.events.filter((e) => e.kind === 'postgres_restart').length;
  const ownerDied = (owner: string): boolean => f.killedPids.has(Number(OWNER_PID.exec(owner)?.[1] ?? NaN));
  const ledgerByKey = new Map(f.ledger.map((r) => [r.key, r]));
  const unaccounted: string[] = [];
  let dangling = 0;
  for (const [k] of effectsByKey) {
    const rec = ledgerByKey.get(k);
    if (!rec) unaccounted.push(`${k}: executed, no ledger record`);
    else if (rec.state === 'DISPATCHED' && (ownerDied(rec.owner) || pgRestarts > 0)) dangling += 1;
    else if (rec.state !== 'SUCCEEDED' && rec.state !== 'UNKNOWN') {
      unaccounted.push(`${k}: executed, ledger ${rec.state} (owner ${rec.owner})`);
    }
  }
  for (const rec of f.ledger) {
    if (rec.state === 'SUCCEEDED' && !effectsByKey.has(rec.key))
      unaccounted.push(`${rec.key}: SUCCEEDED without its side effect`);
  }
  const ledgerStates: Record<string, number> = {};
  for (const r of f.ledger) ledgerStates[r.state] = (ledgerStates[r.state] ?? 0) + 1;
  check(
    'side effects match ledger records (executed ⇒ SUCCEEDED, UNKNOWN or a dead executor’s DISPATCHED; SUCCEEDED ⇒ executed)',
    unaccounted,
    Object.entries(ledgerStates)
      .map(([k, n]) => `${k}: ${n}`)
      .join(', '),
  );

  // 5: UNKNOWN records.
  const unknownBad: string[] = [];
  let byKill = 0;
  let byPg = 0;
  const unknownRuns = new Set<string>();
  for (const rec of f.ledger.filter((r) => r.state === 'UNKNOWN')) {
    unknownRuns.add(rec.run_id);
    const pid = Number(OWNER_PID.exec(rec.owner)?.[1] ?? NaN);
    if (f.killedPids.has(pid)) byKill += 1;
    else if (pgRestarts > 0) byPg += 1;
    else unknownBad.push(`${rec.key}: UNKNOWN, owner ${rec.owner} was not killed`);
    const run = byRun.get(rec.run_id)?.result;
    if (!run || run.terminal_state !== 'NEEDS_HUMAN' || run.reason !== 'outcome_unknown') {
      unknownBad.push(
        `${rec.key}: UNKNOWN, but its run ended ${run ? `${run.terminal_state} ${run.reason ?? ''}` : 'unread'}`,
      );
    }
  }
  for (const r of f.outcomes) {
    if (r.result?.reason === 'outcome_unknown' && !unknownRuns.has(r.id)) {
      unknownBad.push(`${r.id}: NEEDS_HUMAN outcome_unknown without an UNKNOWN ledger record`);
    }
  }
  check(
    'every UNKNOWN record: executor killed between dispatch and commit (or the PostgreSQL crash), run NEEDS_HUMAN outcome_unknown',
    unknownBad,
    `${byKill + byPg} UNKNOWN (${byKill} owner SIGKILLed, ${byPg} other owner during the PostgreSQL crash)`,
  );

  // 6: the chaos was real.
  const notReal: string[] = [];
  const kills = f.events.filter((e) => e.kind === 'worker_kill');
  if (kills.length === 0) notReal.push('no worker was killed');
  for (const kind of ['temporal_restart', 'postgres_restart'] as const) {
    const e = f.events.find((x) => x.kind === kind);
    if (!e) notReal.push(`no ${kind}`);
    else if (e.openRuns === 0) notReal.push(`${kind} happened with no run in flight`);
  }
  if (kills.length > 0 && kills.every((k) => k.openRuns === 0))
    notReal.push('every kill happened with no run in flight');
  check(
    'the chaos hit runs in flight',
    notReal,
    `${kills.length} kills, ${f.events.length - kills.length} restarts`,
  );

  const figures: Record<string, string | number> = {
    runs: f.options.runs,
    'writes per run': f.options.writesPerRun,
    workers: f.options.workers,
    'worker SIGKILLs': kills.length,
    'workers that died by themselves': f.unexpectedExits.length,
    'dev server restarts': f.events.filter((e) => e.kind === 'temporal_restart').length,
    'PostgreSQL restarts': pgRestarts,
    'side effects': f.effects.length,
    duplicates: dupes.length,
    'UNKNOWN records': byKill + byPg,
    'DISPATCHED left by a dead executor (its run moved on)': dangling,
    'settled after (s)': (f.settledMs / 1000).toFixed(1),
    'total (s)': (f.totalMs / 1000).toFixed(1),
  };
  return {
    ok: invariants.every((i) => i.ok),
    invariants,
    figures,
    terminalStates,
    events: f.events,
    examples,
  };
}

/** The report as markdown tables. */
export function formatReport(r: ChaosReport): string {
  const out: string[] = ['', '| chaos run | |', '|---|---:|'];
  for (const [k, v] of Object.entries(r.figures)) out.push(`| ${k} | ${v} |`);
  out.push('', '| terminal state | runs |', '|---|---:|');
  for (const [k, v] of Object.entries(r.terminalStates)) out.push(`| ${k} | ${v} |`);
  out.push('', '| event | at (s) | runs open | detail |', '|---|---:|---:|---|');
  for (const e of r.events) {
    const detail = e.kind === 'worker_kill' ? `pid ${e.pid}` : `down ${(e.downMs / 1000).toFixed(1)} s`;
    out.push(`| ${e.kind} | ${(e.atMs / 1000).toFixed(1)} | ${e.openRuns} | ${detail} |`);
  }
  out.push('', '| invariant | | detail |', '|---|---|---|');
  for (const i of r.invariants) out.push(`| ${i.name} | ${i.ok ? 'PASS' : 'FAIL'} | ${i.detail} |`);
  for (const [name, ex] of Object.entries(r.examples)) {
    out.push('', `FAIL ${name}:`, ...ex.map((e) => `  - ${e}`));
  }
  out.push('', r.ok ? 'chaos: all invariants hold' : 'chaos: INVARIANTS VIOLATED', '');
  return out.join('\n');
}
