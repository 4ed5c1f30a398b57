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
 *  5. every record in doubt (UNKNOWN, or left DISPATCHED) is proven to belong to a kill between
 *     dispatch and commit, from the timestamps: its owner's pid was SIGKILLed while the record
 *     was DISPATCHED (dispatched before the kill, marked UNKNOWN after it), or the record was in
 *     flight across the PostgreSQL crash or the dev-server SIGKILL; an UNKNOWN record's run
 *     stopped NEEDS_HUMAN `outcome_unknown`, and every such run has an UNKNOWN record. A run
 *     stopped NEEDS_HUMAN `infrastructure_fault` is stopped, not failed (resumable);
 *  6. the chaos happened while runs were in flight (so a pass is not vacuous).
 */
import type { RunResult } from '../../common/contracts';

/** One run as read at the end. */
export interface RunOutcome {
  readonly id: string;
  /**
   * The workflow execution status: COMPLETED (the run completed) or FAILED (it ended in another
   * terminal state) with `result` read; any other status, or FAILED without a RunResult, is a
   * run that did not end in an explicit terminal state.
   */
  readonly status: string;
  readonly result: RunResult | null;
}

/** One chaos event. */
export type ChaosEvent =
  | { kind: 'worker_kill'; atMs: number; openRuns: number; pid: number; aimed?: boolean }
  | { kind: 'temporal_restart'; atMs: number; openRuns: number; downMs: number }
  | { kind: 'postgres_restart'; atMs: number; openRuns: number; downMs: number };

/** What {@link checkInvariants} reads. */
export interface ChaosFacts {
  readonly options: { runs: number; writesPerRun: number; workers: number; kills: number };
  readonly outcomes: readonly RunOutcome[];
  readonly effects: readonly { op_key: string; run_id: string; pid: number }[];
  /** Ledger records; times are epoch ms (database clock, the same host as the harness). */
  readonly ledger: readonly LedgerRow[];
  /** Events; `atMs` is relative to `t0` (epoch ms). */
  readonly events: readonly ChaosEvent[];
  readonly t0: number;
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

/** One ledger record as read at the end. */
export interface LedgerRow {
  readonly key: string;
  readonly state: string;
  readonly owner: string;
  readonly run_id: string;
  readonly dispatched_at: number | null;
  readonly finished_at: number | null;
}

const OWNER_PID = /^worker-(\d+)\//;

/** Terminal states a chaos run may end in: done, or stopped for a human (never failed). */
const ALLOWED_NEEDS_HUMAN = new Set(['outcome_unknown', 'infrastructure_fault']);

/**
 * Why a record is in doubt, proven from the times, or null. Slack covers the gap between the
 * harness noting an event and the event itself (a SIGKILL is noted after the exit).
 */
function doubtCause(rec: LedgerRow, f: ChaosFacts): string | null {
  const SLACK = 250;
  const dispatched = rec.dispatched_at;
  if (dispatched === null) return null;
  const until = rec.finished_at ?? Number.POSITIVE_INFINITY;
  const pid = Number(OWNER_PID.exec(rec.owner)?.[1] ?? NaN);
  for (const e of f.events) {
    const start = f.t0 + e.atMs;
    if (e.kind === 'worker_kill') {
      if (e.pid === pid && dispatched <= start + SLACK && until >= start - SLACK) return 'owner SIGKILLed';
    } else {
      const end = start + e.downMs;
      if (dispatched <= end + SLACK && until >= start - SLACK)
        return e.kind === 'postgres_restart' ? 'PostgreSQL crash' : 'dev server SIGKILL';
    }
  }
  return null;
}

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
    if (!r.result) {
      notTerminal.push(`${r.id}: workflow ${r.status}`);
      terminalStates[`workflow ${r.status}`] = (terminalStates[`workflow ${r.status}`] ?? 0) + 1;
      continue;
    }
    const k = r.result.reason ? `${r.result.terminal_state} ${r.result.reason}` : r.result.terminal_state;
    terminalStates[k] = (terminalStates[k] ?? 0) + 1;
    const s = r.result.terminal_state;
    // NEEDS_HUMAN only for what the chaos may cause: an outcome in doubt, or an infrastructure
    // fault that outlasted the retries (stopped, not failed: it waits for a resume).
    const allowed =
      s === 'COMPLETED' || (s === 'NEEDS_HUMAN' && ALLOWED_NEEDS_HUMAN.has(r.result.reason ?? ''));
    if (!allowed) {
      const steps = r.result.decisions
        .map((d) => `${d.index}:${d.decision}${d.after ? `>${d.after}` : ''}`)
        .join(' ');
      notTerminal.push(`${r.id}: ${k}${r.result.summary ? ` (${r.result.summary})` : ''} [${steps}]`);
    }
  }
  check(
    'every run ended in an explicit terminal state (COMPLETED, or NEEDS_HUMAN outcome_unknown / infrastructure_fault), none FAILED',
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
  // claim of its key would turn it UNKNOWN): allowed only when a kill while it was DISPATCHED is proven.
  const pgRestarts = f.events.filter((e) => e.kind === 'postgres_restart').length;
  const ledgerByKey = new Map(f.ledger.map((r) => [r.key, r]));
  const unaccounted: string[] = [];
  const causes: Record<string, number> = {};
  let dangling = 0;
  for (const rec of f.ledger.filter((r) => r.state === 'DISPATCHED')) {
    const cause = doubtCause(rec, f);
    if (cause) {
      dangling += 1;
      causes[`DISPATCHED: ${cause}`] = (causes[`DISPATCHED: ${cause}`] ?? 0) + 1;
    } else unaccounted.push(`${rec.key}: left DISPATCHED by ${rec.owner}, no kill while it was in flight`);
  }
  for (const [k] of effectsByKey) {
    const rec = ledgerByKey.get(k);
    if (!rec) unaccounted.push(`${k}: executed, no ledger record`);
    else if (!['SUCCEEDED', 'UNKNOWN', 'DISPATCHED'].includes(rec.state)) {
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
    'side effects match ledger records (executed ⇒ SUCCEEDED, UNKNOWN or DISPATCHED killed in flight; SUCCEEDED ⇒ executed)',
    unaccounted,
    Object.entries(ledgerStates)
      .map(([k, n]) => `${k}: ${n}`)
      .join(', '),
  );

  // 5: UNKNOWN records: a kill while DISPATCHED proven from the times, and the run stopped for it.
  const unknownBad: string[] = [];
  let unknownCount = 0;
  const unknownRuns = new Set<string>();
  for (const rec of f.ledger.filter((r) => r.state === 'UNKNOWN')) {
    unknownCount += 1;
    unknownRuns.add(rec.run_id);
    const cause = doubtCause(rec, f);
    if (cause) causes[`UNKNOWN: ${cause}`] = (causes[`UNKNOWN: ${cause}`] ?? 0) + 1;
    else
      unknownBad.push(
        `${rec.key}: UNKNOWN, owner ${rec.owner}, dispatched ${rec.dispatched_at === null ? 'never' : `at ${((rec.dispatched_at - f.t0) / 1000).toFixed(1)} s`}: no kill while it was in flight`,
      );
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
    'every UNKNOWN / left-DISPATCHED record: a kill while it was DISPATCHED (owner SIGKILLed, or in flight across a restart), run NEEDS_HUMAN outcome_unknown',
    unknownBad,
    Object.keys(causes).length === 0
      ? 'none in doubt'
      : Object.entries(causes)
          .map(([k, n]) => `${k}: ${n}`)
          .join(', '),
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
    'of which aimed at a worker holding a DISPATCHED record': kills.filter((k) => k.aimed).length,
    'workers that died by themselves': f.unexpectedExits.length,
    'dev server restarts': f.events.filter((e) => e.kind === 'temporal_restart').length,
    'PostgreSQL restarts': pgRestarts,
    'side effects': f.effects.length,
    duplicates: dupes.length,
    'UNKNOWN records': unknownCount,
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
    const detail =
      e.kind === 'worker_kill'
        ? `pid ${e.pid}${e.aimed ? ' (aimed: it held a DISPATCHED record)' : ''}`
        : `down ${(e.downMs / 1000).toFixed(1)} s`;
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
