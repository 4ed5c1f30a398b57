/**
 * The chaos run's checks themselves (scripts/chaos/invariants.ts), on hand-made facts: a record
 * in doubt passes only when a kill while it was DISPATCHED is proven from the times, a duplicate
 * side effect fails, and a run stopped NEEDS_HUMAN `infrastructure_fault` is stopped, not failed.
 */
import type { RunResult } from '../../common/contracts';
import { checkInvariants, type ChaosFacts, type LedgerRow } from '../../scripts/chaos/invariants';

const T0 = 1_700_000_000_000;

function result(id: string, terminal_state: string, reason: string | null): RunResult {
  return { workflow_id: id, terminal_state, reason, decisions: [], summary: '' } as unknown as RunResult;
}

/** Two runs, one write each; run b's write is UNKNOWN, owned by pid 42. */
function facts(over: { unknown?: Partial<LedgerRow>; events?: ChaosFacts['events'] } = {}): ChaosFacts {
  const rec = (key: string, run: string, state: string, extra: Partial<LedgerRow> = {}): LedgerRow => ({
    key,
    state,
    owner: 'worker-41/x',
    run_id: run,
    dispatched_at: T0 + 1000,
    finished_at: T0 + 1100,
    ...extra,
  });
  return {
    options: { runs: 2, writesPerRun: 1, workers: 2, kills: 1 },
    outcomes: [
      { id: 'a', status: 'COMPLETED', result: result('a', 'COMPLETED', null) },
      { id: 'b', status: 'COMPLETED', result: result('b', 'NEEDS_HUMAN', 'outcome_unknown') },
    ],
    effects: [
      { op_key: 'k-a', run_id: 'a', pid: 41 },
      { op_key: 'k-b', run_id: 'b', pid: 42 },
    ],
    ledger: [
      rec('k-a', 'a', 'SUCCEEDED'),
      rec('k-b', 'b', 'UNKNOWN', {
        owner: 'worker-42/y',
        dispatched_at: T0 + 2000,
        finished_at: T0 + 6000,
        ...over.unknown,
      }),
    ],
    events: over.events ?? [
      { kind: 'worker_kill', atMs: 2500, openRuns: 2, pid: 42 },
      { kind: 'temporal_restart', atMs: 500, openRuns: 2, downMs: 300 },
      { kind: 'postgres_restart', atMs: 800, openRuns: 2, downMs: 100 },
    ],
    t0: T0,
    killedPids: new Set([42]),
    unexpectedExits: [],
    settledMs: 1,
    totalMs: 1,
  };
}

const verdict = (f: ChaosFacts, prefix: string): boolean =>
  checkInvariants(f).invariants.find((i) => i.name.startsWith(prefix))!.ok;

describe('chaos invariants', () => {
  it('an UNKNOWN record whose owner was SIGKILLed while it was DISPATCHED passes', () => {
    const r = checkInvariants(facts());
    expect(r.ok).toBe(true);
  });

  it('an UNKNOWN record whose owner was killed only after it was marked fails', () => {
    const f = facts({ unknown: { dispatched_at: T0 + 2000, finished_at: T0 + 2100 } });
    expect(verdict(f, 'every UNKNOWN')).toBe(false);
  });

  it('an UNKNOWN record whose owner was never killed and no restart overlapped fails', () => {
    const f = facts({ unknown: { owner: 'worker-99/z' } });
    expect(verdict(f, 'every UNKNOWN')).toBe(false);
  });

  it('an UNKNOWN record in flight across the PostgreSQL crash passes', () => {
    const f = facts({ unknown: { owner: 'worker-99/z', dispatched_at: T0 + 700, finished_at: T0 + 4000 } });
    expect(verdict(f, 'every UNKNOWN')).toBe(true);
  });

  it('a record left DISPATCHED by a live owner fails', () => {
    const f = facts({ unknown: { state: 'DISPATCHED', owner: 'worker-99/z', finished_at: null } });
    expect(verdict(f, 'side effects match')).toBe(false);
  });

  it('a duplicate side effect fails', () => {
    const f = facts();
    const g = { ...f, effects: [...f.effects, { op_key: 'k-a', run_id: 'a', pid: 43 }] };
    expect(verdict(g, 'each operation key')).toBe(false);
  });

  it('NEEDS_HUMAN infrastructure_fault is an allowed stop; FAILED is not', () => {
    const f = facts();
    const stopped = {
      ...f,
      outcomes: [
        { id: 'a', status: 'COMPLETED', result: result('a', 'NEEDS_HUMAN', 'infrastructure_fault') },
        f.outcomes[1]!,
      ],
    };
    expect(verdict(stopped, 'every run ended')).toBe(true);
    const failed = {
      ...f,
      outcomes: [
        { id: 'a', status: 'COMPLETED', result: result('a', 'FAILED', 'tool_error') },
        f.outcomes[1]!,
      ],
    };
    expect(verdict(failed, 'every run ended')).toBe(false);
  });
});
