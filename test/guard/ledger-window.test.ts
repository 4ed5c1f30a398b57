/**
 * The guard's ledger window (docs/spec.md §7.10, issue 19): a guard with one keeps only the
 * newest ledger-backed completed keys, and its answers do not depend on what it forgot as long
 * as the ledger hands a key back (`markCompleted`) before the key is proposed again; keys that
 * are not ledger-backed stay exact. Also the compact script form (`repeat`, guard/script-calls.ts).
 */
import {
  buildStopReport,
  LoopGuard,
  normalizeCall,
  parseReplayFile,
  replay,
  ReplayFormatError,
  scriptCallAt,
  scriptLength,
  stopReportSchema,
  TerminalState,
  type GuardCall,
  type ReplayCall,
} from '../../guard';

const write = (i: number, body = 'b'): GuardCall => ({
  tool: 'write_record',
  fingerprint: normalizeCall('write_record', { id: `r-${i}`, body }).fingerprint,
  operationKey: `k-${i}`,
  ledgerBacked: true,
});

/** Runs `n` distinct ledger-backed writes to success, each making progress. */
function writeMany(g: LoopGuard, n: number, from = 0): void {
  for (let i = from; i < from + n; i++) {
    const c = write(i);
    expect(g.before(c, 0).decision).toBe('execute');
    expect(g.after(c, { kind: 'SUCCESS' }, g.progressVersion + 1, 0).decision).toBe('continue');
  }
}

const lean = (keep = 4): LoopGuard => {
  const g = new LoopGuard({ maxSteps: 10_000, noProgressLimit: 10_000 });
  g.useLedgerWindow(keep);
  return g;
};

describe('the ledger window', () => {
  it('keeps the newest keys and counts every completed one', () => {
    const g = lean(4);
    writeMany(g, 10);
    expect(g.completedKeys()).toEqual(['k-6', 'k-7', 'k-8', 'k-9']);
    expect(g.completedTotal).toBe(10);
    const json = g.toJSON();
    expect(json.completed).toEqual([]);
    expect(json.ledgerCompleted).toEqual({
      keep: 4,
      recent: ['k-6', 'k-7', 'k-8', 'k-9'].map((k, i) => [k, write(6 + i).fingerprint]),
      total: 10,
    });
    const back = LoopGuard.fromJSON(json);
    expect(back.toJSON()).toEqual(json);
    expect(back.completedTotal).toBe(10);
  });

  it('answers a forgotten key exactly as a guard that kept it, once the ledger hands it back', () => {
    const full = new LoopGuard({ maxSteps: 10_000, noProgressLimit: 10_000 });
    const g = lean(4);
    writeMany(full, 10);
    writeMany(g, 10);
    expect(g.isCompleted('k-0')).toBe(false);
    // Same call again: the plan activity hands over the ledger record with the proposal's fingerprint.
    const same = write(0);
    g.markCompleted('k-0', same.fingerprint);
    full.markCompleted('k-0', same.fingerprint);
    expect(g.before(same, 0)).toEqual(full.before(same, 0));
    expect(g.after(same, { kind: 'SUCCESS' }, 0, 0)).toEqual(full.after(same, { kind: 'SUCCESS' }, 0, 0));
    expect(g.completedTotal).toBe(10); // a cached answer completes nothing new
    // Other args under a forgotten key: the ledger's record carries its args hash → conflict.
    const other = write(1, 'other');
    g.markCompleted('k-1', 'sha256:stored-args-hash');
    full.markCompleted('k-1', 'sha256:stored-args-hash');
    const a = g.before(other, 0);
    expect(a).toEqual(full.before(other, 0));
    expect(a).toMatchObject({
      decision: 'stop',
      reason: 'idempotency_conflict',
      terminalState: 'NEEDS_HUMAN',
    });
  });

  it('keeps keys that are not ledger-backed exactly (reads with a key, seeded keys)', () => {
    const g = new LoopGuard({ maxSteps: 10_000, noProgressLimit: 10_000 }, { completed: ['seeded'] });
    g.useLedgerWindow(2);
    const read = {
      tool: 'search',
      fingerprint: normalizeCall('search', { q: 1 }).fingerprint,
      operationKey: 'read-1',
    };
    expect(g.before(read, 0).decision).toBe('execute');
    g.after(read, { kind: 'SUCCESS' }, 1, 0);
    writeMany(g, 5);
    expect(g.completedKeys()).toEqual(['seeded', 'read-1', 'k-3', 'k-4']);
    expect(g.completedTotal).toBe(7);
    // Never forgotten: the read is answered from the guard itself, no ledger involved.
    expect(g.before(read, 0).decision).toBe('return_cached_success');
    expect(LoopGuard.fromJSON(g.toJSON()).toJSON().completed).toEqual([
      ['seeded', null],
      ['read-1', read.fingerprint],
    ]);
  });

  it('a restored guard without a window (a checkpoint from before it) keeps its keys exact', () => {
    const old = new LoopGuard({ maxSteps: 10_000, noProgressLimit: 10_000 });
    writeMany(old, 50);
    const g = LoopGuard.fromJSON(old.toJSON());
    g.useLedgerWindow(4);
    writeMany(g, 10, 50);
    expect(g.completedTotal).toBe(60);
    expect(g.toJSON().completed).toHaveLength(50);
    expect(g.toJSON().ledgerCompleted?.recent).toHaveLength(4);
    expect(g.before(write(0), 0).decision).toBe('return_cached_success');
  });

  it('the StopReport lists the newest 100 keys and the total', () => {
    const g = lean(100);
    writeMany(g, 150);
    const report = buildStopReport(g, {
      terminalState: TerminalState.STOPPED_LOOP_GUARD,
      reason: 'operator_stop',
    });
    expect(stopReportSchema.parse(report)).toEqual(report);
    expect(report.completed).toHaveLength(100);
    expect(report.completed[0]).toBe('k-50');
    expect(report.completed_total).toBe(150);
    const full = new LoopGuard({ maxSteps: 10_000, noProgressLimit: 10_000 });
    writeMany(full, 3);
    const r2 = buildStopReport(full, {
      terminalState: TerminalState.STOPPED_LOOP_GUARD,
      reason: 'operator_stop',
    });
    expect(r2.completed).toEqual(['k-0', 'k-1', 'k-2']);
    expect(r2).not.toHaveProperty('completed_total');
  });

  it('refuses a window of less than one key', () => {
    expect(() => new LoopGuard().useLedgerWindow(0)).toThrow(RangeError);
  });
});

describe('repeat entries in a script', () => {
  const file = parseReplayFile({
    config: { noProgressLimit: 10 },
    calls: [
      { tool: 'search', args: { q: 'first' } },
      {
        repeat: {
          times: 3,
          call: { tool: 'write', args: { id: 'r-{i}', tags: ['{i}', 7] }, operationKey: 'op-{i}' },
        },
      },
      { tool: 'finish', result: { kind: 'SUCCESS', terminal: true } },
    ],
  });

  it('expands to times copies with {i} in args and operationKey', () => {
    expect(scriptLength(file.calls)).toBe(5);
    expect(scriptCallAt(file.calls, 0)).toEqual({ tool: 'search', args: { q: 'first' } });
    expect(scriptCallAt<ReplayCall>(file.calls, 3)).toEqual({
      tool: 'write',
      args: { id: 'r-2', tags: ['2', 7] },
      operationKey: 'op-2',
    });
    expect(scriptCallAt<ReplayCall>(file.calls, 4)?.tool).toBe('finish');
    expect(scriptCallAt(file.calls, 5)).toBeUndefined();
    expect(scriptCallAt(file.calls, -1)).toBeUndefined();
  });

  it('replays as the expanded script does', () => {
    const expanded = parseReplayFile({
      config: file.config,
      calls: Array.from({ length: 5 }, (_, i) => scriptCallAt<ReplayCall>(file.calls, i)),
    });
    expect(replay(file)).toEqual(replay(expanded));
    expect(replay(file)).toMatchObject({ terminal_state: 'COMPLETED', executed: 5 });
  });

  it('a 100,000-call script stays small', () => {
    const big = { calls: [{ repeat: { times: 100_000, call: { tool: 'w', args: { id: '{i}' } } } }] };
    expect(JSON.stringify(big).length).toBeLessThan(100);
    expect(scriptLength(parseReplayFile(big).calls)).toBe(100_000);
  });

  it('names the field of a bad entry', () => {
    const bad = (calls: unknown[]) => () => parseReplayFile({ calls });
    expect(bad([{ repeat: { times: -1, call: { tool: 'w' } } }])).toThrow(ReplayFormatError);
    expect(bad([{ repeat: { times: -1, call: { tool: 'w' } } }])).toThrow(/calls\[0\]\.repeat\.times/);
    expect(bad([{ repeat: { times: 2, call: {} } }])).toThrow(
      /calls\[0\]\.repeat\.call\.tool: required string/,
    );
    expect(bad([{ tool: 'ok' }, { args: {} }])).toThrow(/calls\[1\]\.tool: required string/);
  });
});
