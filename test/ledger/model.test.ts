/**
 * Model-based test of claim / dispatch / side effect / commit / crash / expire / replay
 * interleavings by two workers on one key (a worker's "step" advances it one phase). After every command: at most one side effect
 * for the key, exactly one when the record is SUCCEEDED, none while it is absent or CLAIMED.
 */
import fc from 'fast-check';
import { executeOnce, LedgerState, StaleTokenError, type Ledger } from '../../storage/ledger';
import { backendNames, createTestDb, type TestDb } from './helpers/backends';

interface Worker {
  token: number | null;
  dispatched: boolean;
  effected: boolean;
}
interface Real {
  ledger: Ledger;
  db: TestDb;
  key: string;
  sideEffects: number;
  workers: Worker[];
}
type Model = Record<string, never>;
type Cmd = fc.AsyncCommand<Model, Real>;

const idle = (): Worker => ({ token: null, dispatched: false, effected: false });
const claimInput = (r: Real, w: number) => ({
  key: r.key,
  tool: 'transfer',
  argsHash: 'h',
  runId: 'run-model',
  owner: `w${w}`,
  leaseMs: 30_000,
});

async function check(r: Real): Promise<void> {
  const rec = await r.ledger.get(r.key);
  const state = rec?.state ?? null;
  expect(r.sideEffects).toBeLessThanOrEqual(1);
  if (state === LedgerState.SUCCEEDED) expect(r.sideEffects).toBe(1);
  if (state === null || state === LedgerState.CLAIMED) expect(r.sideEffects).toBe(0);
}

/** Runs a fenced ledger call; a stale token means this worker lost the key, as in production. */
async function fenced(
  r: Real,
  w: number,
  op: (token: number) => Promise<void>,
  onOk: (worker: Worker) => void,
) {
  const worker = r.workers[w] as Worker;
  try {
    await op(worker.token as number);
    onOk(worker);
  } catch (err) {
    if (!(err instanceof StaleTokenError)) throw err;
    r.workers[w] = idle();
  }
}

/** Advances one worker by one phase of the protocol: claim → dispatch → side effect → commit. */
class Step implements Cmd {
  constructor(readonly w: number) {}
  check = () => true;
  async run(_m: Model, r: Real) {
    const wk = r.workers[this.w] as Worker;
    if (wk.token === null) {
      const c = await r.ledger.claim(claimInput(r, this.w));
      if (c.kind === 'claimed') r.workers[this.w] = { token: c.token, dispatched: false, effected: false };
    } else if (!wk.dispatched) {
      await fenced(
        r,
        this.w,
        (t) => r.ledger.dispatch(r.key, t),
        (x) => (x.dispatched = true),
      );
    } else if (!wk.effected) {
      r.sideEffects += 1;
      wk.effected = true;
    } else {
      await fenced(
        r,
        this.w,
        (t) => r.ledger.commit(r.key, t, { by: this.w }),
        () => (r.workers[this.w] = idle()),
      );
    }
    await check(r);
  }
  toString = () => `step(w${this.w})`;
}

class FailTransient implements Cmd {
  constructor(readonly w: number) {}
  check = () => true;
  async run(_m: Model, r: Real) {
    const wk = r.workers[this.w] as Worker;
    if (wk.token === null || wk.dispatched) return;
    await fenced(
      r,
      this.w,
      (t) => r.ledger.fail(r.key, t, new Error('429'), { final: false }),
      () => (r.workers[this.w] = idle()),
    );
    await check(r);
  }
  toString = () => `failTransient(w${this.w})`;
}

class Crash implements Cmd {
  constructor(readonly w: number) {}
  check = () => true;
  async run(_m: Model, r: Real) {
    r.workers[this.w] = idle();
    await check(r);
  }
  toString = () => `crash(w${this.w})`;
}

class Expire implements Cmd {
  check = () => true;
  async run(_m: Model, r: Real) {
    await r.db.expireLease(r.key);
    await check(r);
  }
  toString = () => 'expireLease';
}

class Replay implements Cmd {
  constructor(readonly w: number) {}
  check = () => true;
  async run(_m: Model, r: Real) {
    if (r.workers[this.w]?.token !== null) return;
    const outcome = await executeOnce(r.ledger, claimInput(r, this.w), async () => {
      r.sideEffects += 1;
      return { by: this.w };
    });
    expect(['executed', 'cached', 'in_progress', 'unknown', 'failed_final']).toContain(outcome.kind);
    await check(r);
  }
  toString = () => `replay(w${this.w})`;
}

const worker = fc.integer({ min: 0, max: 1 });
const commands = fc.commands(
  [
    worker.map((w) => new Step(w)),
    worker.map((w) => new Step(w)),
    worker.map((w) => new Step(w)),
    worker.map((w) => new FailTransient(w)),
    worker.map((w) => new Crash(w)),
    fc.constant(new Expire()),
    fc.constant(new Expire()),
    worker.map((w) => new Replay(w)),
  ],
  { maxCommands: 30, size: 'max' },
);

describe.each(backendNames)('ledger model on %s', (backend) => {
  let db: TestDb;
  let ledger: Ledger;

  beforeAll(async () => {
    db = await createTestDb(backend);
    ledger = await db.open();
  });
  afterAll(async () => db.cleanup());

  it('never runs a side effect twice for a key, and exactly once for a SUCCEEDED key, in any interleaving', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(commands, async (cmds) => {
        const real: Real = { ledger, db, key: `model-${++run}`, sideEffects: 0, workers: [idle(), idle()] };
        await fc.asyncModelRun(() => ({ model: {}, real }), cmds);
        // Whatever was left behind, a final replay after expiry must not add a second effect.
        await db.expireLease(real.key);
        await executeOnce(ledger, claimInput(real, 0), async () => {
          real.sideEffects += 1;
          return 'final';
        });
        await check(real);
      }),
      { numRuns: 100 },
    );
  });
});
