import type { PlanOutput } from '../../activities/types';
import { fullPrefetchedTurn, leanPrefetchedTurn } from '../../common/prefetched-turn';

/** As `runTool`'s completion carries it: through JSON. */
const wire = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;

const usage = { tokens: 0, costUsd: 0 };
function planned(args: unknown, canonicalArgs: unknown, tail: Record<string, unknown> = {}): PlanOutput {
  return {
    turn: { type: 'call', tool: 'floor_write', args, operationKey: null, usage, scriptIndex: 0 },
    memory: { next: 1 },
    proposal: {
      tool: 'floor_write',
      args,
      canonicalArgs,
      fingerprint: 'floor_write:139e68d1830f0041',
      argsHash: 'sha256:7ff8927a473c8ff4be3452280c8cd06835d81afaf6a14ce1bdaa8c1286410161',
      operationKey: 'floor:08017ec4:2',
      effect: 'write',
      rejection: null,
      ledger: null,
      fixture: null,
      approval: null,
      ...tail,
    },
  } as unknown as PlanOutput;
}

describe('prefetched turn (issue 42: the args once in runTool completion)', () => {
  it('sends the args once and gives back the same JSON, key order included', () => {
    const out = planned({ tag: ' 08017ec4', n: 2 }, { n: 2, tag: '08017ec4' });
    const lean = wire(leanPrefetchedTurn(out));
    expect(lean.shared).toBe(7);
    expect(lean.turn.type === 'call' && lean.turn.args).toBeNull();
    expect(lean.proposal?.canonicalArgs).toBeNull();
    expect(Object.keys(lean.proposal ?? {})).not.toContain('ledger');
    expect(JSON.stringify(lean).length).toBeLessThan(JSON.stringify(out).length - 80);
    expect(JSON.stringify(fullPrefetchedTurn(lean))).toBe(JSON.stringify(out));
  });

  it('keeps what it cannot rebuild: canonical args with defaults, a ledger record', () => {
    const ledger = { state: 'SUCCEEDED', fingerprint: 'floor_write:1', result: { n: 2 } };
    const out = planned({ n: 2 }, { n: 2, mode: 'fast' }, { ledger });
    const lean = wire(leanPrefetchedTurn(out));
    expect(lean.shared).toBe(1);
    expect(lean.proposal?.canonicalArgs).toEqual({ n: 2, mode: 'fast' });
    expect(lean.proposal?.ledger).toEqual(ledger);
    expect(JSON.stringify(fullPrefetchedTurn(lean))).toBe(JSON.stringify(out));
  });

  it('passes a full turn (a history recorded before) and a turn without a call as they are', () => {
    const full = wire(planned({ n: 2 }, { n: 2 }));
    expect(fullPrefetchedTurn(full)).toEqual(full);
    const done: PlanOutput = {
      turn: { type: 'exhausted', usage } as never,
      memory: { next: 0 },
      proposal: null,
    };
    expect(leanPrefetchedTurn(done)).toBe(done);
    expect(fullPrefetchedTurn(done)).toEqual(done);
  });
});
