/**
 * The tool activity's write path, called directly on a real SQLite ledger + world: how
 * every ledger outcome becomes a result kind, and that no path runs a write twice.
 * (The crash itself is simulated by leaving a claim DISPATCHED with an expired lease —
 * exactly what a SIGKILLed executor leaves; test/ledger covers real SIGKILLs.)
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { createActivities } from '../../activities/create-activities';
import { ToolCounters } from '../../activities/progress';
import type { ReconcileAnswer, SqliteLedger, SqlLedger } from '../../storage/ledger';
import { RowCodec } from '../../storage/row-codec';
import type { DatabaseSync } from '../../storage/sqlite-driver';
import { openWorkerDeps } from '../../worker/create-worker';
import { defineTool } from '../../tools/define-tool';
import type { RunToolInput } from '../../activities/types';
import { openDemoWorkerDeps, type DemoWorkerDeps } from '../../demo/deps';

let smsSent = 0;
let reconcileAnswer: ReconcileAnswer = { status: 'unknown' };
const sendSms = defineTool({
  name: 'send_sms',
  description: 'An external side effect without vendor idempotency.',
  effect: 'write',
  schema: z.object({ to: z.string(), text: z.string() }).strict(),
  operationKey: (a) => `sms:${a.to}:${a.text}`,
  reconcile: undefined,
  async execute() {
    smsSent += 1;
    return { data: { sent: true } };
  },
});
/** What each execution of `send_fax` was told: `ctx.reExecution` (docs/ledger.md). */
const faxReExecutions: Array<boolean | undefined> = [];
const sendFax = defineTool({
  name: 'send_fax',
  description: 'An external side effect whose vendor dedupes by the operation key.',
  effect: 'write',
  schema: z.object({ to: z.string() }).strict(),
  operationKey: (a) => `fax:${a.to}`,
  vendorIdempotent: true,
  async execute(_args, ctx) {
    faxReExecutions.push(ctx.reExecution);
    return { data: { queued: true } };
  },
});
const sendSmsReconciled = defineTool({
  ...sendSms,
  name: 'send_sms_reconciled',
  reconcile: async () => reconcileAnswer,
});

describe('runTool write path', () => {
  let deps: DemoWorkerDeps;
  let acts: ReturnType<typeof createActivities>;

  beforeAll(async () => {
    const url = `sqlite:${join(mkdtempSync(join(tmpdir(), 'alg-act-')), 'agent.db')}`;
    deps = await openDemoWorkerDeps({
      ledgerUrl: url,
      worldUrl: url,
      tools: [sendSms, sendSmsReconciled, sendFax],
      leaseMs: 2000,
    });
    acts = createActivities(deps);
  });
  afterAll(async () => {
    await deps?.close();
  });

  function call(tool: string, args: Record<string, unknown>, runId = 'run-1'): RunToolInput {
    const n = deps.registry.normalize(tool, args);
    return {
      runId,
      tool,
      args: n.args,
      operationKey: n.operationKey,
      fingerprint: n.fingerprint,
      argsHash: n.argsHash,
      fixture: null,
    };
  }

  /** What a worker SIGKILLed after dispatch leaves behind: DISPATCHED, lease expired. */
  async function deadDispatch(input: RunToolInput): Promise<void> {
    const c = await deps.ledger.claim({
      key: input.operationKey as string,
      tool: input.tool,
      argsHash: input.fingerprint as string,
      runId: input.runId,
      owner: 'dead-worker',
      leaseMs: 30,
    });
    if (c.kind !== 'claimed') throw new Error(`expected a fresh claim, got ${c.kind}`);
    await deps.ledger.dispatch(input.operationKey as string, c.token);
    await new Promise((r) => setTimeout(r, 80));
  }

  it('runs a write once; the same operation again is answered from the ledger with zero calls', async () => {
    const input = call('send_sms', { to: '+1', text: 'hello' });
    const first = await acts.runTool(input);
    expect(first).toMatchObject({ result: { kind: 'SUCCESS' }, via: 'executed' });
    const again = await acts.runTool({ ...input, runId: 'run-2' });
    expect(again).toMatchObject({ result: { kind: 'SUCCESS', data: { sent: true } }, via: 'ledger' });
    expect(smsSent).toBe(1);
  });

  it('turns an executor that died after dispatch into FATAL outcome_unknown (NEEDS_HUMAN), never a re-run', async () => {
    const input = call('send_sms', { to: '+2', text: 'lost?' });
    await deadDispatch(input);
    const before = smsSent;
    const out = await acts.runTool(input);
    expect(out.result).toMatchObject({ kind: 'FATAL', code: 'outcome_unknown' });
    expect(out.result.kind === 'FATAL' && out.result.message).toContain(
      // The whole command, the key quoted for the shell (`?` is a glob there).
      `"agentctl ledger resolve 'sms:+2:lost?' --as succeeded --actor NAME --reason 'the evidence checked'"`,
    );
    expect(smsSent).toBe(before);
    expect((await deps.ledger.get(input.operationKey as string))?.state).toBe('UNKNOWN');
  });

  it("settles a dead dispatch through the tool's reconcile lookup instead of re-running it", async () => {
    reconcileAnswer = { status: 'succeeded', result: { sent: true, via: 'vendor-lookup' } };
    const input = call('send_sms_reconciled', { to: '+3', text: 'did it go?' });
    await deadDispatch(input);
    const before = smsSent;
    const out = await acts.runTool(input);
    // Its own word (not `ledger`, not `executed`): the workflow counts it `reconciled` (core/step.ts).
    expect(out).toMatchObject({
      result: { kind: 'SUCCESS', data: { via: 'vendor-lookup' } },
      via: 'reconciled',
    });
    expect(smsSent).toBe(before);
    expect((await deps.ledger.get(input.operationKey as string))?.state).toBe('SUCCEEDED');
  });

  it('re-executes a vendor-idempotent write after a dead dispatch; the vendor dedupes, so nothing is charged twice', async () => {
    const input = call('charge_payment', {
      customer: 'c1',
      invoice: 'inv-9',
      amountCents: 500,
      currency: 'EUR',
    });
    // The dead executor reached the vendor before it died: the payment exists.
    await deps.world.tx.run(
      'INSERT INTO world_payments (op_key, customer, amount_cents, currency) VALUES (?, ?, ?, ?)',
      [input.operationKey, 'c1', 500, 'EUR'],
    );
    await deadDispatch(input);
    const out = await acts.runTool(input);
    expect(out).toMatchObject({ result: { kind: 'SUCCESS' }, via: 'executed' });
    expect(await deps.world.tx.all('SELECT op_key FROM world_payments')).toEqual([
      { op_key: 'charge:inv-9' },
    ]);
    expect((await deps.world.counters('run-1')).charge_payment).toBeUndefined();
  });

  it('tells a write whether it re-executes a lost dispatch (ctx.reExecution): false first, true after a dead dispatch', async () => {
    const first = await acts.runTool(call('send_fax', { to: '+10' }));
    expect(first).toMatchObject({ result: { kind: 'SUCCESS' }, via: 'executed' });
    expect(faxReExecutions).toEqual([false]);
    const lost = call('send_fax', { to: '+11' });
    await deadDispatch(lost);
    const again = await acts.runTool(lost);
    expect(again).toMatchObject({ result: { kind: 'SUCCESS' }, via: 'executed' });
    expect(faxReExecutions).toEqual([false, true]);
  });

  it('answers a live lease held by another executor with RETRYABLE in_progress, and runs nothing', async () => {
    const input = call('send_sms', { to: '+4', text: 'busy' });
    const c = await deps.ledger.claim({
      key: input.operationKey as string,
      tool: 'send_sms',
      argsHash: input.fingerprint as string,
      runId: 'other',
      owner: 'live-worker',
      leaseMs: 10_000,
    });
    expect(c.kind).toBe('claimed');
    const before = smsSent;
    const out = await acts.runTool(input);
    expect(out.result).toMatchObject({ kind: 'RETRYABLE', code: 'in_progress' });
    expect(out.result.kind === 'RETRYABLE' && out.result.retryAfterMs).toBeGreaterThan(0);
    expect(smsSent).toBe(before);
  });

  it('releases the claim when an atomic write is refused (permission), so it runs exactly once after the grant', async () => {
    const input = call('deploy', { service: 'api', version: '7' });
    const denied = await acts.runTool(input);
    expect(denied.result).toMatchObject({ kind: 'FATAL', code: 'permission_denied' });
    expect(await deps.ledger.get(input.operationKey as string)).toBeNull();
    expect((await deps.world.counters('run-1')).deploy).toBeUndefined();
    await deps.world.grant('deploy:api');
    expect((await acts.runTool(input)).result).toMatchObject({ kind: 'SUCCESS' });
    expect((await acts.runTool(input)).via).toBe('ledger');
    expect((await deps.world.counters('run-1')).deploy).toBe(1);
  });

  it('refuses the same key with other args as FATAL idempotency_conflict; the stored record is unchanged', async () => {
    const a = call('send_notification', { channel: 'c', incident: 'i', type: 'page', message: 'one' });
    const b = call('send_notification', { channel: 'c', incident: 'i', type: 'page', message: 'two' });
    expect((await acts.runTool(a)).result.kind).toBe('SUCCESS');
    const out = await acts.runTool(b);
    expect(out).toMatchObject({ result: { kind: 'FATAL', code: 'idempotency_conflict' }, via: 'not_run' });
    // The run holding the key and its tool, for the StopReport (issue 30).
    expect(out.holder).toEqual({ runId: a.runId, tool: 'send_notification' });
    expect((await deps.ledger.get(a.operationKey as string))?.argsHash).toBe(a.argsHash);
    expect(await deps.world.tx.all('SELECT message FROM world_notifications')).toEqual([{ message: 'one' }]);
  });

  describe('args hash (SHA-256, docs/spec.md §8)', () => {
    const notify = (message: string, channel = 'sha') =>
      call('send_notification', { channel, incident: 'i', type: 'page', message });
    const sent = async (channel: string) =>
      (await deps.world.tx.all('SELECT message FROM world_notifications WHERE channel = ?', [channel])).map(
        (r) => r.message,
      );

    /** The plan activity's view of `input`'s key, as the guard gets it. */
    async function planned(input: RunToolInput) {
      const out = await acts.plan({
        runId: input.runId,
        goal: 'args hash',
        planner: {
          kind: 'scripted',
          live: true,
          script: { calls: [{ tool: input.tool, args: input.args as Record<string, unknown> }] },
        } as never,
        memory: null,
        observation: null,
      });
      if (!out.proposal) throw new Error('expected a proposal');
      return out.proposal;
    }

    it('stores sha256 of the canonical call and tells colliding fingerprints apart; the second write never runs', async () => {
      const a = notify('one');
      expect(a.argsHash).toMatch(/^sha256:[0-9a-f]{64}$/);
      expect((await acts.runTool(a)).via).toBe('executed');
      // Other args under the same key, handed the same 64-bit fingerprint (a collision).
      const b = { ...notify('two'), fingerprint: a.fingerprint };
      const out = await acts.runTool(b);
      expect(out).toMatchObject({ result: { kind: 'FATAL', code: 'idempotency_conflict' }, via: 'not_run' });
      expect(await sent('sha')).toEqual(['one']);
    });

    it('computes the hash itself for a workflow scheduled before the upgrade (no argsHash in the input)', async () => {
      const a = notify('old', 'sha-old');
      const { argsHash, ...old } = a;
      expect((await acts.runTool(old)).via).toBe('executed');
      expect((await deps.ledger.get(a.operationKey as string))?.argsHash).toBe(argsHash);
      expect((await acts.runTool(a)).via).toBe('ledger');
      expect(await sent('sha-old')).toEqual(['old']);
    });

    it('answers a new call from a pre-upgrade row (fingerprint as args hash) with zero calls', async () => {
      const a = notify('legacy', 'sha-legacy');
      // What the code before the upgrade left: a SUCCEEDED record keyed by the fingerprint.
      const c = await deps.ledger.claim({
        key: a.operationKey as string,
        tool: a.tool,
        argsHash: a.fingerprint as string,
        runId: 'run-old',
        owner: 'old-worker',
        leaseMs: 5_000,
      });
      if (c.kind !== 'claimed') throw new Error(c.kind);
      await deps.ledger.commit(a.operationKey as string, c.token, { notified: 'legacy' });
      expect(await acts.runTool(a)).toMatchObject({
        result: { kind: 'SUCCESS', data: { notified: 'legacy' } },
        via: 'ledger',
      });
      expect(await sent('sha-legacy')).toEqual([]);
      // The plan activity tells the guard it is the same call (→ return_cached_success).
      const p = await planned(a);
      expect(p.ledger).toMatchObject({ state: 'SUCCEEDED', fingerprint: p.fingerprint });
      // Another call under that key does not match the legacy row: conflict, nothing sent.
      const other = notify('other', 'sha-legacy');
      expect((await acts.runTool(other)).result).toMatchObject({ code: 'idempotency_conflict' });
      expect((await planned(other)).ledger?.fingerprint).toBe(a.fingerprint);
      expect(await sent('sha-legacy')).toEqual([]);
    });

    it("hands the guard the proposal's fingerprint for the same call and an unmatchable one for another", async () => {
      const a = notify('view', 'sha-view');
      await acts.runTool(a);
      const same = await planned(a);
      expect(same.argsHash).toBe(a.argsHash);
      expect(same.ledger?.fingerprint).toBe(same.fingerprint);
      const other = await planned(notify('changed', 'sha-view'));
      expect(other.ledger?.fingerprint).toBe(a.argsHash);
      expect(other.ledger?.fingerprint).not.toBe(other.fingerprint);
      expect(await sent('sha-view')).toEqual(['view']);
    });
  });
  it('takes a call without fingerprint or args hash (issue 42) and counts an executed write once, a duplicate never', async () => {
    const counters = new ToolCounters((deps.ledger as SqlLedger<unknown>).database());
    const {
      fingerprint: _f,
      argsHash: _h,
      ...lean
    } = call('send_sms', { to: '+42', text: 'lean' }, 'run-42');
    const n = deps.registry.normalize('send_sms', { to: '+42', text: 'lean' });
    const sent = smsSent;
    const first = await acts.runTool(lean);
    expect(first).toMatchObject({ result: { kind: 'SUCCESS' }, via: 'executed' });
    // The record carries the args hash the plan computed: the same call is not a conflict.
    expect((await deps.ledger.get(n.operationKey as string))?.argsHash).toBe(n.argsHash);
    expect((await counters.of('run-42')).send_sms).toBe(1);
    const again = await acts.runTool(lean);
    expect(again).toMatchObject({ result: { kind: 'SUCCESS' }, via: 'ledger' });
    expect((await counters.of('run-42')).send_sms).toBe(1);
    expect(smsSent - sent).toBe(1);
  });
});

describe('runTool: a write tool that answers FATAL (it does not throw)', () => {
  let charges = 0;
  const charge = defineTool({
    name: 'charge_card',
    description: 'A payment that the vendor declines.',
    effect: 'write',
    schema: z.object({ order: z.string() }).strict(),
    operationKey: (a) => `charge:${a.order}`,
    async execute() {
      charges += 1;
      return { kind: 'FATAL', code: 'card_declined', message: 'the card was declined' };
    },
  });
  let deps: DemoWorkerDeps;
  let acts: ReturnType<typeof createActivities>;
  beforeAll(async () => {
    const url = `sqlite:${join(mkdtempSync(join(tmpdir(), 'alg-fatal-')), 'agent.db')}`;
    deps = await openDemoWorkerDeps({ ledgerUrl: url, worldUrl: url, tools: [charge] });
    acts = createActivities(deps);
  });
  afterAll(async () => {
    await deps?.close();
  });

  it('stops with the tool’s own code and message, first time and from the ledger', async () => {
    const n = deps.registry.normalize('charge_card', { order: 'o-1' });
    const input: RunToolInput = {
      runId: 'run-fatal',
      tool: 'charge_card',
      args: n.args,
      operationKey: n.operationKey,
      fingerprint: n.fingerprint,
      fixture: null,
    };
    const first = await acts.runTool(input);
    expect(first.result).toEqual({ kind: 'FATAL', code: 'card_declined', message: 'the card was declined' });
    expect(charges).toBe(1);
    const again = await acts.runTool({ ...input, runId: 'run-fatal-2' });
    expect(again.result).toEqual({ kind: 'FATAL', code: 'card_declined', message: 'the card was declined' });
    expect(again.via).toBe('ledger');
    expect(charges).toBe(1); // the final failure is answered from the ledger: the card is not charged again
  });
});

describe('runTool: a terminal write answered from the ledger stays terminal', () => {
  let publishes = 0;
  const publish = defineTool({
    name: 'publish_release',
    description: 'The last step of a job: a write that completes the run.',
    effect: 'write',
    schema: z.object({ version: z.string() }).strict(),
    operationKey: (a) => `release:${a.version}`,
    async execute(args) {
      publishes += 1;
      return { data: { summary: `released ${args.version}` }, terminal: true };
    },
  });
  let deps: DemoWorkerDeps;
  let acts: ReturnType<typeof createActivities>;
  beforeAll(async () => {
    const url = `sqlite:${join(mkdtempSync(join(tmpdir(), 'alg-term-')), 'agent.db')}`;
    deps = await openDemoWorkerDeps({ ledgerUrl: url, worldUrl: url, tools: [publish] });
    acts = createActivities(deps);
  });
  afterAll(async () => {
    await deps?.close();
  });

  it('a retried attempt after the commit gets the same terminal SUCCESS, and the write ran once', async () => {
    const n = deps.registry.normalize('publish_release', { version: '1.2' });
    const input: RunToolInput = {
      runId: 'run-term',
      tool: 'publish_release',
      args: n.args,
      operationKey: n.operationKey,
      fingerprint: n.fingerprint,
      fixture: null,
    };
    const first = await acts.runTool(input);
    expect(first.result).toEqual({ kind: 'SUCCESS', data: { summary: 'released 1.2' }, terminal: true });
    const retried = await acts.runTool(input); // the attempt whose completion was lost
    expect(retried.via).toBe('ledger');
    expect(retried.result).toEqual({ kind: 'SUCCESS', data: { summary: 'released 1.2' }, terminal: true });
    expect(publishes).toBe(1);
    // The guard's view of the record is the business result, without the flag.
    const rec = await deps.ledger.get(n.operationKey as string);
    expect(rec?.state).toBe('SUCCEEDED');
  });
});

describe('runTool: a read keeps its bookkeeping without a flush of its own (issue 42)', () => {
  let lookups = 0;
  const lookup = defineTool({
    name: 'lookup',
    description: 'A read whose answer is new each time.',
    effect: 'read',
    schema: z.object({ q: z.string() }).strict(),
    execute: (a) => {
      lookups += 1;
      return { data: { q: a.q, n: lookups } };
    },
  });
  let deps: Awaited<ReturnType<typeof openWorkerDeps>>;
  let acts: ReturnType<typeof createActivities>;
  beforeAll(async () => {
    const url = `sqlite:${join(mkdtempSync(join(tmpdir(), 'alg-read-')), 'agent.db')}`;
    deps = await openWorkerDeps({ ledgerUrl: url, tools: [lookup], configPath: null });
    acts = createActivities({ rows: new RowCodec([]), ...deps });
  });
  afterAll(async () => {
    await deps?.close();
  });

  it("commits a read's counter and progress fact unflushed, then puts synchronous=FULL back", async () => {
    const sqlite = deps.ledger as SqliteLedger;
    const level = () =>
      (sqlite as unknown as { db: DatabaseSync }).db.prepare('PRAGMA synchronous').get()?.synchronous;
    const counters = new ToolCounters(sqlite.database());
    const spy = jest.spyOn(
      sqlite as unknown as { connect: (...a: unknown[]) => Promise<unknown> },
      'connect',
    );
    const before = lookups;
    let out: Awaited<ReturnType<typeof acts.runTool>>;
    let units: string[];
    try {
      out = await acts.runTool({
        runId: 'run-read',
        tool: 'lookup',
        args: { q: 'a' },
        operationKey: null,
        fixture: null,
      });
      units = spy.mock.calls.filter((c) => c[0] !== 'read').map((c) => `${String(c[0])} ${String(c[2])}`);
    } finally {
      spy.mockRestore();
    }
    expect(lookups - before).toBe(1);
    expect(out).toMatchObject({ result: { kind: 'SUCCESS' }, via: 'executed', progressVersion: 1 });
    // One unit of work, unflushed; nothing else the read wrote.
    expect(units).toEqual(['transaction unflushed']);
    expect(level()).toBe(2);
    // Committed: another reader sees the counter and the fact (the version moved).
    expect((await counters.of('run-read')).lookup).toBe(1);
    const again = await acts.runTool({
      runId: 'run-read',
      tool: 'lookup',
      args: { q: 'b' },
      operationKey: null,
      fixture: null,
    });
    expect(again).toMatchObject({ progressVersion: 2 });
    expect((await counters.of('run-read')).lookup).toBe(2);
  });
});
