/**
 * The worker half of every engine, once: the framework guards' spend gate prices and settles as
 * an `agentRun` planner does, their writes answer as an `agentRun` tool does, their stores are
 * wired as an `agentRun` worker's. Each case runs against a real SQLite ledger, approval store
 * and spend store, and reads counters and outcomes back from them.
 */
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { guardActivities, ledgerWrites } from '../../ai-sdk/worker';
import { SpendGate } from '../../core/spend-gate';
import { canonicalize } from '../../guard';
import { OperatorRegistry } from '../../operators/registry';
import { worstCaseOf } from '../../planners/call-ceiling';
import { ApprovalStore } from '../../storage/approvals';
import { executeOnce, SideEffectErrorClass, sha256ArgsHash, type Ledger } from '../../storage/ledger';
import { SpendLimitsInvalidError, SpendStore } from '../../storage/spend';
import { createTestDb, type TestDb } from '../ledger/helpers/backends';

const open = OperatorRegistry.open();
const LIMITS = { acme: { maxUsd: 100, windowMs: 3_600_000 } };

describe('the worker half, the same on every engine', () => {
  let db: TestDb;
  let ledger: Ledger;
  beforeEach(async () => {
    db = await createTestDb('sqlite');
    ledger = await db.open();
  });
  afterEach(() => db.cleanup());

  async function failureOf(p: Promise<unknown>): Promise<ApplicationFailure> {
    const err = await p.then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ApplicationFailure);
    return err as ApplicationFailure;
  }

  describe('spend', () => {
    it('a call whose provider reported no usage settles at its worst case, not at $0', async () => {
      const acts = guardActivities(ledger, { operators: open, spendLimits: LIMITS });
      const gate = new SpendGate(
        acts as never,
        'acme',
        'run-1',
        { inputPerMTok: 10, outputPerMTok: 30 },
        1000,
      );
      const r = await gate.reserve('m', 2000);
      await gate.settle(r as never, undefined as never);
      const status = await SpendStore.over(ledger, LIMITS).status('acme');
      const worst = worstCaseOf({ bytes: 2000 }, 0, 1000, { inputPerMTok: 10, outputPerMTok: 30 }).costUsd!;
      expect(worst).toBeGreaterThan(0);
      expect(status.calls).toEqual({ settled: 1, inFlight: 0, refused: 0 });
      expect(status.settledUsd).toBeCloseTo(worst, 9);
    });

    it('the worst case is the planner’s: the same overhead, input at the dearest (cache-write) rate', async () => {
      const price = { inputPerMTok: 4, outputPerMTok: 20, cacheWritePerMTok: 5, cacheReadPerMTok: 0.4 };
      const reserved: (number | null)[] = [];
      const acts = {
        agentLoopGuardReserveSpend: async (i: { worstUsd: number | null }) => {
          reserved.push(i.worstUsd);
          return { kind: 'none' as const };
        },
        agentLoopGuardSettleSpend: async () => undefined,
      };
      await new SpendGate(acts as never, 'acme', 'run-1', price, 700).reserve('m', 3000);
      expect(reserved).toEqual([worstCaseOf({ bytes: 3000 }, 0, 700, price).costUsd]);
    });

    it('spend limits given in code are checked when the worker is built, naming the field', () => {
      expect(() =>
        guardActivities(ledger, { operators: open, spendLimits: { acme: { maxUsd: -1, windowMs: 1 } } }),
      ).toThrow(SpendLimitsInvalidError);
      expect(() =>
        guardActivities(ledger, { operators: open, spendLimits: { acme: { maxUsd: 1 } } as never }),
      ).toThrow(/spendLimits\.acme\.windowMs/);
    });
  });

  describe('a guarded write answers as an agentRun tool', () => {
    const meta = (over: object = {}) => ({ tool: 'pay', operationKey: 'k-1', runId: 'run-1', ...over });

    it('a key held by a running write: RETRYABLE in_progress with its retryAfterMs', async () => {
      let ran = 0;
      const writes = ledgerWrites(
        ledger,
        { pay: async () => (ran += 1) },
        { operators: open, leaseMs: 60_000 },
      );
      let release!: () => void;
      const held = executeOnce(
        ledger,
        {
          key: 'k-1',
          tool: 'pay',
          argsHash: sha256ArgsHash('pay', canonicalize({ n: 1 })),
          runId: 'run-0',
          owner: 'other',
          leaseMs: 60_000,
        },
        () => new Promise((resolve) => (release = () => resolve('done'))),
      );
      await new Promise((r) => setTimeout(r, 200));
      const f = await failureOf(new MockActivityEnvironment().run(writes.pay, { n: 1 } as never, meta()));
      release();
      await held;
      expect(f.type).toBe('RETRYABLE');
      expect(f.nonRetryable).toBe(false);
      const d = f.details?.[0] as { code: string; retryAfterMs: number };
      expect(d.code).toBe('in_progress');
      expect(d.retryAfterMs).toBeGreaterThan(0);
      expect(ran).toBe(0);
    });

    it('a conflict names the holder of the key; nothing runs', async () => {
      let ran = 0;
      const writes = ledgerWrites(ledger, { pay: async () => (ran += 1) }, { operators: open });
      await new MockActivityEnvironment().run(writes.pay, { n: 1 } as never, meta({ runId: 'run-a' }));
      const f = await failureOf(
        new MockActivityEnvironment().run(writes.pay, { n: 2 } as never, meta({ runId: 'run-b' })),
      );
      expect(f.nonRetryable).toBe(true);
      expect(f.details?.[0]).toMatchObject({
        code: 'idempotency_conflict',
        holder: { runId: 'run-a', tool: 'pay' },
      });
      expect(ran).toBe(1);
    });

    it('a failure the ledger kept final: failed_final with the stored message', async () => {
      await executeOnce(
        ledger,
        {
          key: 'k-1',
          tool: 'pay',
          argsHash: sha256ArgsHash('pay', canonicalize({ n: 1 })),
          runId: 'run-0',
          owner: 'first',
          leaseMs: 30_000,
          classifyError: () => SideEffectErrorClass.FINAL,
        },
        async () => {
          throw new Error('card declined');
        },
      );
      let ran = 0;
      const writes = ledgerWrites(ledger, { pay: async () => (ran += 1) }, { operators: open });
      const f = await failureOf(new MockActivityEnvironment().run(writes.pay, { n: 1 } as never, meta()));
      expect(f.type).toBe('FATAL');
      expect(f.details?.[0]).toMatchObject({ code: 'failed_final' });
      expect(f.message).toBe('card declined');
      expect(ran).toBe(0);
    });

    it('a gated write without an approval is refused and audited, as on an agentRun worker', async () => {
      let ran = 0;
      const writes = ledgerWrites(ledger, { pay: async () => (ran += 1) }, { operators: open });
      const f = await failureOf(
        new MockActivityEnvironment().run(writes.pay, { n: 1 } as never, meta({ requiresApproval: true })),
      );
      expect(f.details?.[0]).toMatchObject({ code: 'approval_required' });
      expect(f.message).toMatch(/pay needs a person's approval of this exact call/);
      const audit = await ApprovalStore.over(ledger).audit({ runId: 'run-1' });
      expect(audit.map((a) => a.action)).toEqual(['refused']);
      expect(ran).toBe(0);
    });
  });
});
