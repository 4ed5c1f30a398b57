/**
 * agent-loop-guard/strands-agents: an agent on `@temporalio/strands-agents` (a `TemporalAgent`
 * with `activityAsTool` tools, each model call the `StrandsPlugin`'s activity running the SDK's
 * own `OpenAIModel` against a local streaming Responses server) with the guard added by
 * `guardStrandsAgent`, on the real dev server and a SQLite ledger. The counters are the tools'
 * own.
 */
import { bundleLedger } from '../helpers/bundle-ledger';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { StrandsPlugin } from '@temporalio/strands-agents';
import { Context } from '@temporalio/activity';
import type { WorkflowHandle } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, DefaultLogger, Worker } from '@temporalio/worker';
import { reportQuery, statusQuery, traceQuery, type RunResult } from '../../common/contracts';
import {
  approveRun,
  getPendingApproval,
  resumeAgentRun,
  stopAgentRun,
  type ApprovalStoreOptions,
} from '../../client/api';
import { ledgerWrites, StrandsGuardPlugin } from '../../strands-agents/worker';
import type { GuardedWriteMeta } from '../../core/framework-types';
import { openLedger, type Ledger } from '../../storage/ledger';
import { SpendStore, type SpendLimits } from '../../storage/spend';
import { signedSpendRaise } from '../approvals/signing';
import { OperatorRegistry } from '../../operators/registry';
import { alice } from '../approvals/signing';
import { waitFor } from '../helpers/run-inputs';
import { createTestEnv, testDataConverter, uniqueId, uniqueTaskQueue } from '../helpers/temporal-env';
import { OpenAIModel } from './openai-model';
import { startModelServer, type ModelServer, type Step } from './model-server';
import type { StrandsAgentInput } from './workflows/strands-agent';

const operatorsOf = () =>
  OperatorRegistry.fromFile({
    operators: { alice: { publicKey: alice.publicKey, roles: ['approver'] } },
    roles: {
      approver: { lift: ['*'], approve: true, stop: true, raise: { maxTokens: 5000 }, raiseSpendUsd: 5 },
    },
  });

/** The SDK's own OpenAI provider, exactly as documented (the guard keeps the cancel signal out). */
const strandsPluginOf = (baseURL: string) =>
  new StrandsPlugin({
    models: {
      openai: () =>
        new OpenAIModel({ modelId: 'gpt-scripted', apiKey: 'sk-local', clientConfig: { baseURL } }),
    },
  });

type Outcome = { run: RunResult; executions: Record<string, number>; stopReason: string };
type Counts = { lookup_order: number; pay: number; paidTo: string[]; payVia: string[] };

const lookup = (orderId: string): Step => ({ call: 'lookup_order', args: { orderId } });
const pay = (order: string, to: string, amount: number, requestId: string, callId?: string) => ({
  call: 'pay',
  args: { orderId: order, to, amount, requestId },
  ...(callId ? { callId } : {}),
});

describe('guardStrandsAgent on @temporalio/strands-agents', () => {
  let env: TestWorkflowEnvironment;
  let dir: string;
  let ledger: Ledger;
  let store: ApprovalStoreOptions;
  let workflowBundle: { code: string };
  const servers: ModelServer[] = [];

  beforeAll(async () => {
    env = await createTestEnv();
    dir = mkdtempSync(join(tmpdir(), 'strands-guard-'));
    ledger = await openLedger(`sqlite:${join(dir, 'ledger.db')}`);
    store = { ledger, operators: operatorsOf(), env: {} };
    // Bundled once through the integration's plugin (its polyfills first), as a user's worker does.
    workflowBundle = await bundleWorkflowCode({
      workflowsPath: require.resolve('./workflows/strands-agent'),
      plugins: [
        strandsPluginOf('http://127.0.0.1:1/v1'),
        new StrandsGuardPlugin({ ledger: bundleLedger(), spendLimits: null, operators: operatorsOf() }),
      ],
      logger: new DefaultLogger('WARN'),
    });
  }, 120_000);
  afterAll(async () => {
    await ledger?.close();
    for (const s of servers) await s.close();
    await env?.teardown();
    rmSync(dir, { recursive: true, force: true });
  });

  async function run(
    script: Step[],
    input: Omit<StrandsAgentInput, 'prompt'>,
    drive: (h: WorkflowHandle, counts: Counts) => Promise<void> = async () => undefined,
    payBehaviour: 'hang_first' | 'hang_always' | 'ok' = 'ok',
    lookupGate: Promise<void> = Promise.resolve(),
    /** The worker's spend caps (default: none). */
    spendLimits: SpendLimits | null = null,
  ) {
    const server = await startModelServer(script);
    servers.push(server);
    const counts: Counts = { lookup_order: 0, pay: 0, paidTo: [], payVia: [] };
    const operators = operatorsOf();
    const writes = ledgerWrites(
      ledger,
      {
        pay: async (i: { to: string; amount: number }) => {
          counts.pay += 1;
          counts.paidTo.push(`${i.to}:${i.amount}`);
          return { paid: i.amount, to: i.to };
        },
      },
      { operators },
    );
    const taskQueue = uniqueTaskQueue('strands-guard');
    const worker = await Worker.create({
      connection: env.nativeConnection,
      namespace: 'default',
      taskQueue,
      workflowBundle,
      activities: {
        lookup_order: async (i: { orderId: string }) => {
          counts.lookup_order += 1;
          await lookupGate;
          return { orderId: i.orderId, status: 'unpaid', amount: 100 };
        },
        // The write commits, then its activity times out (1 s) before it reports back: the
        // retry gets the ledger's answer; 'hang_always': every attempt times out.
        pay: async (i: { orderId: string; to: string; amount: number }, meta: GuardedWriteMeta) => {
          const out = await writes.pay(i, meta);
          counts.payVia.push(out.via);
          const attempt = Context.current().info.attempt;
          if (payBehaviour === 'hang_always' || (payBehaviour === 'hang_first' && attempt === 1))
            await sleep(1500);
          return out;
        },
      },
      plugins: [
        strandsPluginOf(server.baseURL),
        new StrandsGuardPlugin({
          ledger,
          operators,
          spendLimits,
          dataConverter: testDataConverter(),
          verifyPrecondition: () => Promise.resolve({ changed: true, detail: 'new rows arrived' }),
        }),
      ],
    });
    const outcome = await worker.runUntil(async () => {
      const handle = await env.client.workflow.start('strandsAgent', {
        taskQueue,
        workflowId: uniqueId('strands-guard'),
        args: [{ prompt: 'Pay order A-1.', ...input }],
      });
      await drive(handle, counts);
      const result = (await handle.result()) as Outcome;
      const report = await handle.query(reportQuery);
      const trace = await handle.query(traceQuery);
      return { result, report, trace, history: await handle.fetchHistory() };
    });
    return { ...outcome, counts, server };
  }

  const replays = (history: Parameters<typeof Worker.runReplayHistory>[1]) =>
    Worker.runReplayHistory(
      {
        workflowBundle,
        dataConverter: testDataConverter(),
        plugins: [
          strandsPluginOf('http://127.0.0.1:1/v1'),
          new StrandsGuardPlugin({ ledger: bundleLedger(), spendLimits: null, operators: operatorsOf() }),
        ],
      },
      history,
    );

  it('stops a runaway read before its third run (counter 2) with the StopReport; the model is not asked again', async () => {
    const { result, report, counts, server, history } = await run([lookup('A-1')], {});
    expect(counts.lookup_order).toBe(2);
    expect(result.executions).toEqual({ lookup_order: 2 });
    expect(result.run).toMatchObject({
      terminal_state: 'STOPPED_LOOP_GUARD',
      reason: 'same_call_repeat',
      report: { guard_reason: 'same_call_repeat', blocked_call: { tool: 'lookup_order' } },
    });
    // Three model calls (the third proposed the blocked call); the fourth was not sent.
    expect(server.requests()).toHaveLength(3);
    expect(result.run.usage?.tokens).toBe(330);
    expect(report).toEqual(result.run.report);
    await replays(history);
  });

  it('agentctl stop (the same handlers): the next tool call does not run, the run ends operator_stop', async () => {
    let release = () => undefined as void;
    const gate = new Promise<void>((r) => (release = r));
    const { result, counts } = await run(
      [lookup('S-1'), lookup('S-2'), lookup('S-3'), { text: 'done' }],
      {},
      async (h, counts) => {
        await waitFor(
          async () => counts.lookup_order,
          (n) => n === 1,
        );
        const answer = await stopAgentRun(env.client, h.workflowId, {
          actor: 'alice',
          key: alice.keyFile,
          reason: 'runaway',
        });
        expect(answer).toMatchObject({ accepted: true });
        release();
      },
      'ok',
      gate,
    );
    expect(counts.lookup_order).toBe(1);
    expect(result.run).toMatchObject({ terminal_state: 'STOPPED_LOOP_GUARD', reason: 'operator_stop' });
  });

  it('agentctl resume after a token-budget stop (a raise): the loop goes on with the conversation so far', async () => {
    const { result, counts, server } = await run(
      [lookup('R-1'), lookup('R-2'), lookup('R-3'), { text: 'found them' }],
      { tokenBudget: 200, resumeAfterStop: true },
      async (h, counts) => {
        await waitFor(
          () => h.query(statusQuery),
          (s) => s.waitingForResume,
        );
        expect(await h.query(statusQuery)).toMatchObject({ guardReason: 'token_budget' });
        expect(counts.lookup_order).toBe(1);
        const bare = await resumeAgentRun(env.client, h.workflowId, { actor: 'alice', key: alice.keyFile });
        expect(bare).toMatchObject({ accepted: false });
        const raised = await resumeAgentRun(env.client, h.workflowId, {
          actor: 'alice',
          key: alice.keyFile,
          raise: { maxTokens: 5000 },
        });
        expect(raised).toMatchObject({ accepted: true });
      },
    );
    // R-2 was refused at the stop; after the resume the model went on: R-3 ran, then its answer.
    expect(counts.lookup_order).toBe(2);
    expect(result.run).toMatchObject({ terminal_state: 'COMPLETED', summary: 'found them' });
    // The resume's note reached the model (a user message after the stop).
    expect(JSON.stringify(server.requests().at(-2))).toMatch(/resum/i);
  });

  it('a payment runs once across a timeout after its side effect and a re-plan with a new request id (counter 1)', async () => {
    const { result, counts } = await run(
      [pay('A-1', 'acme', 100, 'req-1'), pay('A-1', 'acme', 100, 'req-2'), { text: 'paid' }],
      {},
      undefined,
      'hang_first',
    );
    expect(counts.pay).toBe(1);
    expect(counts.payVia).toEqual(['executed', 'ledger']);
    expect(result.executions).toEqual({ pay: 1 });
    expect(result.run).toMatchObject({ terminal_state: 'COMPLETED', summary: 'paid', cached: 1 });
  });

  it('every attempt timing out: the error goes to the model, which re-plans; the ledger answers it, the payment ran once', async () => {
    const { result, counts, server } = await run(
      [pay('A-2', 'globex', 100, 'req-1'), pay('A-2', 'globex', 100, 'req-2'), { text: 'paid' }],
      { payAttempts: 3 },
      undefined,
      'hang_always',
    );
    expect(counts.pay).toBe(1);
    expect(counts.paidTo).toEqual(['globex:100']);
    expect(result.run).toMatchObject({ terminal_state: 'COMPLETED', summary: 'paid' });
    // The model read the failure as the call's error result (not a failed workflow).
    const outputs = server.requests()[1]!.filter((i) => i.type === 'function_call_output');
    expect(JSON.stringify(outputs)).toMatch(/timed out|timeout|fail/i);
    // The first attempt ran the payment; every later one, the re-planned call's included, got the ledger's result.
    expect(counts.payVia).toEqual(['executed', 'ledger', 'ledger', 'ledger', 'ledger', 'ledger']);
  });

  it('a twin under the approved tool-use id in the same model response waits for its own approval (twin counter 0)', async () => {
    const { result, counts } = await run(
      [
        [pay('T-1', 'alice', 1000, 'req-1', 'call_pay'), pay('T-1', 'mallory', 500000, 'req-2', 'call_pay')],
        { text: 'paid' },
      ],
      { approval: true },
      async (h, counts) => {
        const first = await waitFor(
          () => getPendingApproval(env.client, h.workflowId).catch(() => null),
          (p) => p !== null,
        );
        expect(first).toMatchObject({ tool: 'pay', args: { to: 'alice', amount: 1000 } });
        expect(counts.pay).toBe(0);
        const ok = await approveRun(env.client, h.workflowId, {
          ...store,
          key: alice.keyFile,
          reason: 'invoice checked',
          resume: true,
        });
        expect(ok.resume).toMatchObject({ accepted: true });
        const twin = await waitFor(
          () => getPendingApproval(env.client, h.workflowId).catch(() => null),
          (p) => p !== null && p.stopRef !== first!.stopRef,
        );
        expect(twin).toMatchObject({ tool: 'pay', args: { to: 'mallory', amount: 500000 } });
        expect(twin!.argsDigest).not.toBe(first!.argsDigest);
        // The twin has not run on alice's approval.
        expect(counts.paidTo).toEqual(['alice:1000']);
        const own = await approveRun(env.client, h.workflowId, {
          ...store,
          key: alice.keyFile,
          reason: 'mallory checked too',
          resume: true,
        });
        expect(own.resume).toMatchObject({ accepted: true });
      },
    );
    // Its own approval ran it, once.
    expect(counts.paidTo).toEqual(['alice:1000', 'mallory:500000']);
    expect(result.run).toMatchObject({ terminal_state: 'COMPLETED', summary: 'paid' });
  });

  it("the SDK's own turn limit (limits.turns) ends the run with a step_budget StopReport", async () => {
    const { result, counts } = await run([lookup('L-1'), lookup('L-2'), lookup('L-3'), lookup('L-4')], {
      turns: 2,
    });
    expect(counts.lookup_order).toBe(2);
    expect(result.stopReason).toBe('limitTurns');
    expect(result.run).toMatchObject({
      terminal_state: 'STOPPED_LOOP_GUARD',
      reason: 'step_budget',
      report: { guard_reason: 'step_budget' },
    });
  });

  it('model usage past the token budget stops the run before the next model call', async () => {
    const { result, counts, server } = await run(
      [lookup('B-1'), lookup('B-2'), lookup('B-3'), { text: 'x' }],
      {
        tokenBudget: 200,
      },
    );
    // 110 tokens, then 220 > 200: the second lookup did not run, no third request was sent.
    expect(counts.lookup_order).toBe(1);
    expect(server.requests()).toHaveLength(2);
    expect(result.run).toMatchObject({ terminal_state: 'STOPPED_LOOP_GUARD', reason: 'token_budget' });
  });

  it('a model that fails for good is a NEEDS_HUMAN planner_failed stop, not a workflow task retried forever', async () => {
    const { result, counts, server } = await run([lookup('F-1'), { error: 400 }], { modelAttempts: 2 });
    expect(counts.lookup_order).toBe(1);
    // The first reply, then the failing call's two attempts.
    expect(server.requests()).toHaveLength(3);
    expect(result.stopReason).toBeNull();
    expect(result.run).toMatchObject({
      terminal_state: 'NEEDS_HUMAN',
      reason: 'planner_failed',
      report: { guard_reason: 'planner_failed' },
    });
  });

  describe("the tenant's spend limit (spend: { tenant })", () => {
    /** $10 per million tokens: a reply's 110 tokens cost $0.0011. */
    const REPLY_USD = 0.0011;
    const limitsOf = (tenant: string, maxUsd: number): SpendLimits => ({
      [tenant]: { maxUsd, windowMs: 3_600_000 },
    });

    it('reserves each model call before it is sent and settles it at its usage', async () => {
      const tenant = uniqueId('tenant').slice(0, 40);
      const limits = limitsOf(tenant, 1);
      const { result, counts, server } = await run(
        [lookup('P-1'), { text: 'looked it up' }],
        { spendTenant: tenant },
        undefined,
        'ok',
        Promise.resolve(),
        limits,
      );
      expect(result.run.terminal_state).toBe('COMPLETED');
      expect(counts.lookup_order).toBe(1);
      expect(server.requests()).toHaveLength(2);
      const st = await SpendStore.over(ledger, limits).status(tenant);
      expect(st.calls).toEqual({ settled: 2, inFlight: 0, refused: 0 });
      expect(st.settledUsd).toBeCloseTo(2 * REPLY_USD, 9);
    });

    it('a call over the cap is not sent: NEEDS_HUMAN spend_limit; after a signed raise, a verified resume runs on', async () => {
      const tenant = uniqueId('tenant').slice(0, 40);
      const limits = limitsOf(tenant, 0.001);
      const spend = SpendStore.over(ledger, limits);
      let requestsAtStop = -1;
      const { result, counts, server } = await run(
        [lookup('P-2'), { text: 'looked it up' }],
        { spendTenant: tenant, resumeAfterStop: true },
        async (h) => {
          await waitFor(
            async () => (await h.query(statusQuery)).terminalState,
            (t) => t === 'NEEDS_HUMAN',
          );
          requestsAtStop = servers[servers.length - 1]!.requests().length;
          expect(await h.query(statusQuery)).toMatchObject({ guardReason: 'spend_limit' });
          await spend.raise(signedSpendRaise(alice.keyFile, tenant, 1));
          const ok = await resumeAgentRun(env.client, h.workflowId, { actor: 'alice', key: alice.keyFile });
          expect(ok).toMatchObject({ accepted: true });
        },
        'ok',
        Promise.resolve(),
        limits,
      );
      // The refused call never reached the model; after the raise: the lookup and the answer.
      expect(requestsAtStop).toBe(0);
      expect(server.requests()).toHaveLength(2);
      expect(counts.lookup_order).toBe(1);
      expect(result.run).toMatchObject({ terminal_state: 'COMPLETED', summary: 'looked it up' });
      expect((await spend.status(tenant)).calls).toEqual({ settled: 2, inFlight: 0, refused: 1 });
    });
  });
});
