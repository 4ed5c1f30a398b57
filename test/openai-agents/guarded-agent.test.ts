/**
 * agent-loop-guard/openai-agents (issue 39): an agent on `@temporalio/openai-agents` (an
 * `Agent` with `activityAsTool` tools run by `TemporalOpenAIRunner`, each model call an activity
 * of `OpenAIAgentsPlugin` against a local server speaking the Responses API) with the guard
 * added by `guardOpenAIAgent`, on the real dev server and a SQLite ledger. The counters are the
 * tools' own.
 */
import { bundleLedger } from '../helpers/bundle-ledger';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { OpenAIProvider } from '@openai/agents-openai';
import { OpenAIAgentsPlugin } from '@temporalio/openai-agents';
import { Context } from '@temporalio/activity';
import type { WorkflowHandle } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, DefaultLogger, Worker } from '@temporalio/worker';
import { reportQuery, statusQuery, traceQuery, type RunResult, type RunStatus } from '../../common/contracts';
import {
  approveRun,
  getPendingApproval,
  resumeAgentRun,
  stopAgentRun,
  type ApprovalStoreOptions,
} from '../../client/api';
import {
  ledgerWrites,
  OpenAIAgentsGuardPlugin,
  type OpenAIAgentsGuardPluginOptions,
} from '../../openai-agents/worker';
import type { GuardedWriteMeta } from '../../ai-sdk/types';
import { openLedger, type Ledger } from '../../storage/ledger';
import { SpendStore, type SpendLimits } from '../../storage/spend';
import { OperatorRegistry } from '../../operators/registry';
import { alice, signedSpendRaise } from '../approvals/signing';
import { waitFor } from '../helpers/run-inputs';
import { createTestEnv, testDataConverter, uniqueId, uniqueTaskQueue } from '../helpers/temporal-env';
import { startResponsesServer, type ResponsesServer, type ResponsesStep } from './responses-server';
import type { PaymentsAgentInput } from './workflows/payments-agent';

const operatorsOf = () =>
  OperatorRegistry.fromFile({
    operators: { alice: { publicKey: alice.publicKey, roles: ['approver'] } },
    roles: {
      approver: { lift: ['*'], approve: true, stop: true, raise: { maxTokens: 5000 }, raiseSpendUsd: 5 },
    },
  });

/** The guard's plugin as the bundle sees it (its webpack settings; no activities run). */
const guardBundlePlugin = () =>
  new OpenAIAgentsGuardPlugin({ ledger: bundleLedger(), spendLimits: null, operators: operatorsOf() });

const pluginOf = (baseURL: string) =>
  new OpenAIAgentsPlugin({ modelProvider: new OpenAIProvider({ baseURL, apiKey: 'test-key' }) });

type Outcome = {
  run: RunResult;
  executions: Record<string, number>;
  sdkApprovals: string[];
  lastAgent?: string;
};
/** `payVia`: each `pay` activity attempt's answer (`executed`, or `ledger`: nothing ran). */
type Counts = {
  lookup_order: number;
  pay: number;
  transfer: number;
  /** Each transfer that ran (`to:amount`). */
  transferredTo: string[];
  paidTo: string[];
  payVia: string[];
  /** What the plugin's `telemetry` heard: each decision (`phase:decision`) and each run's end. */
  decisions: string[];
  ends: string[];
};

const lookup = (orderId: string, callId?: string): ResponsesStep => ({
  call: 'lookup_order',
  args: { orderId },
  ...(callId ? { callId } : {}),
});
const pay = (
  order: string,
  to: string,
  amount: number,
  requestId: string,
  callId?: string,
): ResponsesStep => ({
  call: 'pay',
  args: { orderId: order, to, amount, requestId },
  ...(callId ? { callId } : {}),
});

describe('guardOpenAIAgent on @temporalio/openai-agents', () => {
  let env: TestWorkflowEnvironment;
  let dir: string;
  let ledger: Ledger;
  let store: ApprovalStoreOptions;
  let workflowBundle: { code: string };
  const servers: ResponsesServer[] = [];

  beforeAll(async () => {
    env = await createTestEnv();
    dir = mkdtempSync(join(tmpdir(), 'openai-agents-guard-'));
    ledger = await openLedger(`sqlite:${join(dir, 'ledger.db')}`);
    store = { ledger, operators: operatorsOf(), env: {} };
    // Bundled once through the integration's plugin (its polyfills first), as a user's worker does.
    workflowBundle = await bundleWorkflowCode({
      workflowsPath: require.resolve('./workflows/payments-agent'),
      plugins: [pluginOf('http://127.0.0.1:1/v1'), guardBundlePlugin()],
      logger: new DefaultLogger('WARN'),
    });
  });
  afterAll(async () => {
    await ledger?.close();
    for (const s of servers) await s.close();
    await env?.teardown();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Replays a run's history on a replay worker set up as a user's (throws on nondeterminism). */
  const replays = (history: Parameters<typeof Worker.runReplayHistory>[1]) =>
    Worker.runReplayHistory(
      {
        workflowBundle,
        dataConverter: testDataConverter(),
        plugins: [pluginOf('http://127.0.0.1:1/v1'), guardBundlePlugin()],
      },
      history,
    );

  async function run(
    script: ResponsesStep[],
    input: Omit<PaymentsAgentInput, 'prompt'> & { workflow?: string },
    drive: (h: WorkflowHandle, counts: Counts) => Promise<void> = async () => undefined,
    payBehaviour: 'hang_first' | 'hang_always' | 'ok' = 'ok',
    lookupGate: Promise<void> = Promise.resolve(),
    /** The worker's spend caps, and the ledger its guard plugin gets (default the test's). */
    guardWorker: {
      spendLimits?: SpendLimits;
      ledger?: Ledger;
      verifyPrecondition?: OpenAIAgentsGuardPluginOptions['verifyPrecondition'];
    } = {},
  ) {
    const server = await startResponsesServer(script);
    servers.push(server);
    const counts: Counts = {
      lookup_order: 0,
      pay: 0,
      transfer: 0,
      transferredTo: [],
      paidTo: [],
      payVia: [],
      decisions: [],
      ends: [],
    };
    const operators = operatorsOf();
    const writes = ledgerWrites(
      ledger,
      {
        pay: async (i: { to: string; amount: number }) => {
          counts.pay += 1;
          counts.paidTo.push(`${i.to}:${i.amount}`);
          return { paid: i.amount, to: i.to };
        },
        transfer: async (i: { to: string; amount: number }) => {
          counts.transfer += 1;
          counts.transferredTo.push(`${i.to}:${i.amount}`);
          return `sent ${i.amount} to ${i.to}`;
        },
      },
      { operators },
    );
    const taskQueue = uniqueTaskQueue('openai-agents-guard');
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
        transfer: writes.transfer,
      },
      plugins: [
        pluginOf(server.baseURL),
        new OpenAIAgentsGuardPlugin({
          ledger: guardWorker.ledger ?? ledger,
          operators,
          spendLimits: guardWorker.spendLimits ?? null,
          ...(guardWorker.verifyPrecondition ? { verifyPrecondition: guardWorker.verifyPrecondition } : {}),
          dataConverter: testDataConverter(),
          telemetry: {
            decision: (e) => counts.decisions.push(`${e.phase}:${e.decision}`),
            runEnd: (e) => counts.ends.push(e.terminalState),
            turn: () => undefined,
          },
        }),
      ],
    });
    const workflowId = uniqueId('openai-agents-guard');
    const outcome = await worker.runUntil(async () => {
      const handle = await env.client.workflow.start(input.workflow ?? 'paymentsAgent', {
        taskQueue,
        workflowId,
        args: [{ prompt: 'Pay order A-1.', ...input }],
      });
      await drive(handle, counts);
      const result = (await handle.result()) as Outcome;
      const status = await handle.query(statusQuery);
      const report = await handle.query(reportQuery);
      const trace = await handle.query(traceQuery);
      return { result, status, report, trace, history: await handle.fetchHistory() };
    });
    return { ...outcome, counts, server, workflowId };
  }

  it('stops a repeated lookup before its third run (counter 2) with the StopReport; the workflow does not fail', async () => {
    const { result, status, report, counts, server, history } = await run(
      [lookup('A-1'), lookup('A-1'), lookup('A-1'), { text: 'looked it up' }],
      {},
    );
    expect(counts.lookup_order).toBe(2);
    expect(result.executions).toEqual({ lookup_order: 2 });
    // The plugin registers the agentTelemetry sink: the guard's decisions and the stop reach it.
    expect(counts.decisions.filter((d) => d === 'before:execute')).toHaveLength(2);
    expect(counts.decisions).toContain('before:stop');
    expect(counts.ends).toEqual(['STOPPED_LOOP_GUARD']);
    expect(result.run).toMatchObject({
      terminal_state: 'STOPPED_LOOP_GUARD',
      reason: 'same_call_repeat',
      report: { guard_reason: 'same_call_repeat', blocked_call: { tool: 'lookup_order' } },
    });
    // The SDK's loop ended at the stop: three model calls, the fourth reply never asked for.
    expect(server.requests()).toHaveLength(3);
    // Model usage counted: 3 responses of 110 tokens.
    expect(result.run.usage?.tokens).toBe(330);
    expect(status as RunStatus).toMatchObject({
      terminalState: 'STOPPED_LOOP_GUARD',
      usage: { tokens: 330 },
    });
    expect(report).toEqual(result.run.report);
    // Deterministic: the history replays.
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
    expect(server.requests()).toHaveLength(4);
  });

  it("agentctl resume --note after a repeated lookup: the model's next request ends with the note and the verifier's fresh reading", async () => {
    let paid = false;
    const { result, counts, server } = await run(
      [lookup('N-1'), lookup('N-1'), lookup('N-1'), { text: 'N-1 is paid' }],
      { resumeAfterStop: true },
      async (h, counts) => {
        await waitFor(
          () => h.query(statusQuery),
          (s) => s.waitingForResume,
        );
        expect(await h.query(statusQuery)).toMatchObject({ guardReason: 'same_call_repeat' });
        const unchanged = await resumeAgentRun(env.client, h.workflowId, {
          actor: 'alice',
          key: alice.keyFile,
        });
        expect(unchanged).toMatchObject({ accepted: false, reason: 'order N-1 is still unpaid' });
        paid = true;
        const ok = await resumeAgentRun(env.client, h.workflowId, {
          actor: 'alice',
          key: alice.keyFile,
          reason: 'customer paid by wire',
          note: 'Do not look N-1 up again; it is settled.',
        });
        expect(ok).toMatchObject({ accepted: true, reason: 'order N-1 is paid now' });
        expect(counts.lookup_order).toBe(2);
      },
      'ok',
      Promise.resolve(),
      {
        // The worker's own check of the world, and what it read: the order as it is now.
        verifyPrecondition: () =>
          Promise.resolve({
            changed: paid,
            detail: paid ? 'order N-1 is paid now' : 'order N-1 is still unpaid',
            observed: { orderId: 'N-1', status: paid ? 'paid' : 'unpaid' },
          }),
      },
    );
    // No lookup ran after the resume (the scripted model answers with its text).
    expect(counts.lookup_order).toBe(2);
    expect(result.run).toMatchObject({ terminal_state: 'COMPLETED', summary: 'N-1 is paid' });
    const after = server.requests()[3]!.input;
    const told = JSON.stringify(after[after.length - 1]);
    expect(told).toContain('resumed by alice: customer paid by wire');
    expect(told).toContain("Operator's note: Do not look N-1 up again; it is settled.");
    expect(told).toContain('Verified before resuming: order N-1 is paid now');
    expect(told).toContain('\\"status\\":\\"paid\\"');
  });

  it("a handoff's agent shares the run's guard: its tools are guarded in the same run, its re-sent payment answered once", async () => {
    const { result, counts } = await run(
      [
        lookup('H-1'),
        { call: 'transfer_to_Billing', args: {} },
        pay('H-1', 'acme', 10, 'req-1'),
        pay('H-1', 'acme', 10, 'req-2'),
        { text: 'paid' },
      ],
      { workflow: 'handoffAgent' },
    );
    expect(result.lastAgent).toBe('Billing');
    expect(counts.pay).toBe(1);
    expect(result.executions).toEqual({ lookup_order: 1, pay: 1 });
    expect(result.run).toMatchObject({ terminal_state: 'COMPLETED', summary: 'paid', cached: 1 });
  });

  it('a payment runs once across a timeout after its side effect and a re-plan with a new request id (counter 1)', async () => {
    const { result, counts } = await run(
      [pay('A-1', 'acme', 100, 'req-1'), pay('A-1', 'acme', 100, 'req-2'), { text: 'paid' }],
      {},
      undefined,
      'hang_first',
    );
    expect(counts.pay).toBe(1);
    expect(result.executions).toEqual({ pay: 1 });
    expect(result.run).toMatchObject({ terminal_state: 'COMPLETED', summary: 'paid', cached: 1 });
  });

  it('every attempt timing out: the error goes to the model, which re-plans with a new request id (declared non-semantic); the ledger answers it, the payment ran once', async () => {
    const { result, counts, server } = await run(
      [pay('A-2', 'globex', 100, 'req-1'), pay('A-2', 'globex', 100, 'req-2'), { text: 'paid' }],
      { payAttempts: 2 },
      undefined,
      'hang_always',
    );
    expect(counts.pay).toBe(1);
    expect(counts.paidTo).toEqual(['globex:100']);
    // The ledger hashes the args the guard fingerprinted (requestId dropped by the tool's
    // `nonSemantic` rule): the re-planned call is the same operation, answered from the ledger.
    expect(result.run).toMatchObject({ terminal_state: 'COMPLETED', summary: 'paid' });
    expect(result.run.terminal_state).not.toBe('NEEDS_HUMAN');
    // The model read the failure as the call's output (not a failed workflow).
    const outputs = server.requests()[1]!.input.filter((i) => i.type === 'function_call_output');
    expect(JSON.stringify(outputs)).toMatch(/error occurred while running the tool/i);
    // Attempts: the first ran the payment; every later one, the re-planned call's included
    // (2 attempts each), got the ledger's stored result.
    expect(counts.payVia).toEqual(['executed', 'ledger', 'ledger', 'ledger']);
  });

  it('a re-planned payment under the same key with another amount (a semantic field) is an idempotency_conflict for a person; the payment ran once', async () => {
    const { result, counts } = await run(
      [pay('A-3', 'globex', 100, 'req-1'), pay('A-3', 'globex', 250, 'req-2'), { text: 'paid' }],
      { payAttempts: 2, keyByOrder: true },
      undefined,
      'hang_always',
    );
    expect(counts.pay).toBe(1);
    expect(counts.paidTo).toEqual(['globex:100']);
    // The re-planned call never got an answer from the ledger: refused as a conflict.
    expect(counts.payVia).toEqual(['executed', 'ledger']);
    expect(result.run).toMatchObject({ terminal_state: 'NEEDS_HUMAN', reason: 'idempotency_conflict' });
  });

  it("the SDK's max-turns error ends the run with a step_budget StopReport, not a failed workflow", async () => {
    const { result, counts } = await run([lookup('A-1'), lookup('A-2'), lookup('A-3'), { text: 'x' }], {
      maxTurns: 2,
    });
    expect(counts.lookup_order).toBe(2);
    expect(result.run).toMatchObject({
      terminal_state: 'STOPPED_LOOP_GUARD',
      reason: 'step_budget',
      report: { guard_reason: 'step_budget' },
    });
  });

  it('model usage past the token budget stops the run before the next tool call', async () => {
    const { result, counts } = await run([lookup('A-1'), lookup('A-2'), lookup('A-3'), { text: 'x' }], {
      tokenBudget: 200,
    });
    // 110 tokens, then 220 > 200: the second lookup did not run.
    expect(counts.lookup_order).toBe(1);
    expect(result.run).toMatchObject({ terminal_state: 'STOPPED_LOOP_GUARD', reason: 'token_budget' });
  });

  it.each([
    ['under the approved call id', 'B-1', 'call_x'],
    ['under a new call id', 'B-2', 'call_y'],
  ])(
    'a payment twin after a signed approval %s waits for its own approval (twin counter 0)',
    async (_what, order, twinCallId) => {
      const { result, counts } = await run(
        [
          pay(order, 'bob', 100, 'req-1', 'call_x'),
          pay(order, 'mallory', 49999, 'req-2', twinCallId),
          { text: 'paid' },
        ],
        { approval: true, approvalWaitMs: 4000 },
        async (h, counts) => {
          const first = await waitFor(
            () => getPendingApproval(env.client, h.workflowId).catch(() => null),
            (p) => p !== null,
          );
          expect(first).toMatchObject({ tool: 'pay', args: { to: 'bob', amount: 100 } });
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
          expect(twin).toMatchObject({ tool: 'pay', args: { to: 'mallory', amount: 49999 } });
          expect(twin!.argsDigest).not.toBe(first!.argsDigest);
          expect(counts.paidTo).toEqual(['bob:100']);
          // Not approved: its wait runs out and the run stops NEEDS_HUMAN, the twin unpaid.
        },
      );
      expect(counts.paidTo).toEqual(['bob:100']);
      expect(result.run).toMatchObject({ terminal_state: 'NEEDS_HUMAN', reason: 'approval_required' });
      expect(result.run.report?.blocked_call).toMatchObject({ tool: 'pay' });
    },
  );

  it.each([
    ['', false, 10],
    [' (a continue-as-new at each interruption, the run state and the checkpoint carried)', true, 20],
  ])(
    "the SDK's own needsApproval is honoured; a twin under the approved call id waits for its own approval, and that approval runs it%s",
    async (_what, continueAtInterruption, amount) => {
      // Each case its own amounts: the ledger (shared by the file) keys a transfer by payee and amount.
      const { result, counts, server, trace, history } = await run(
        [
          { call: 'transfer', args: { to: 'ops', amount }, callId: 'call_t' },
          { call: 'transfer', args: { to: 'mallory', amount: 49999 - amount }, callId: 'call_t' },
          { text: 'Transfers done.' },
        ],
        { sdkApproval: true, continueAtInterruption },
      );
      // The workflow approves each interruption the SDK raises (its README's pattern). The twin
      // did not run on the first call's approval (the SDK keys one by tool name and call id): it
      // raised its own interruption, with its own arguments.
      expect(result.sdkApprovals.map((a) => JSON.parse(a) as unknown)).toEqual([
        { to: 'ops', amount },
        { to: 'mallory', amount: 49999 - amount },
      ]);
      // Approved, it ran: an approval given through the SDK's interruption is never dropped.
      expect(counts.transfer).toBe(2);
      expect(counts.transferredTo).toEqual([`ops:${amount}`, `mallory:${49999 - amount}`]);
      // The guard's counters and trace span the whole chain when it continued as new.
      expect(result.run).toMatchObject({
        terminal_state: 'COMPLETED',
        summary: 'Transfers done.',
        executed: 2,
        cached: 0,
      });
      expect(trace.records.map((r) => [r.phase, r.tool, r.decision])).toEqual([
        ['before', 'transfer', 'execute'],
        ['after', 'transfer', 'continue'],
        ['before', 'transfer', 'execute'],
        ['after', 'transfer', 'continue'],
      ]);
      // The model read both outputs, each under its own call id (the twin's given a fresh one).
      const last = server.requests()[server.requests().length - 1]!.input;
      const calls = last.filter((i) => i.type === 'function_call').map((i) => i.call_id);
      const outputs = last.filter((i) => i.type === 'function_call_output');
      expect(calls).toEqual(['call_t', 'call_t_2']);
      expect(outputs.map((o) => o.call_id)).toEqual(['call_t', 'call_t_2']);
      expect(JSON.stringify(outputs)).toContain(`sent ${49999 - amount} to mallory`);
      await replays(history);
    },
  );

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
        [lookup('A-1'), { text: 'looked it up' }],
        { spendTenant: tenant },
        async () => undefined,
        'ok',
        Promise.resolve(),
        { spendLimits: limits },
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
      // Below any call's worst case (its request's bytes + 512 tokens + 100 out, at $10/M).
      const limits = limitsOf(tenant, 0.001);
      const spend = SpendStore.over(ledger, limits);
      let requestsAtStop = -1;
      let lookupsAtStop = -1;
      const { result, counts, server, history } = await run(
        [lookup('A-1'), { text: 'looked it up' }],
        { spendTenant: tenant, resumeAfterStop: true },
        async (h, counts) => {
          await waitFor(
            async () => (await h.query(statusQuery)).terminalState,
            (t) => t === 'NEEDS_HUMAN',
          );
          requestsAtStop = servers[servers.length - 1]!.requests().length;
          lookupsAtStop = counts.lookup_order;
          expect(await h.query(statusQuery)).toMatchObject({ guardReason: 'spend_limit' });
          // No room in the window for the refused call: the resume is refused, saying why.
          const r = await resumeAgentRun(env.client, h.workflowId, { actor: 'alice', key: alice.keyFile });
          expect(r).toMatchObject({ accepted: false, reason: expect.stringMatching(/raise the cap/) });
          await spend.raise(signedSpendRaise(alice.keyFile, tenant, 1));
          const ok = await resumeAgentRun(env.client, h.workflowId, { actor: 'alice', key: alice.keyFile });
          expect(ok).toMatchObject({ accepted: true });
        },
        'ok',
        Promise.resolve(),
        { spendLimits: limits },
      );
      // The refused call never reached the model, and no tool ran.
      expect(requestsAtStop).toBe(0);
      expect(lookupsAtStop).toBe(0);
      // After the raise: the lookup and the answer.
      expect(server.requests()).toHaveLength(2);
      expect(counts.lookup_order).toBe(1);
      expect(result.run).toMatchObject({ terminal_state: 'COMPLETED', summary: 'looked it up' });
      const st = await spend.status(tenant);
      expect(st.calls).toEqual({ settled: 2, inFlight: 0, refused: 1 });
      expect(st.settledUsd).toBeCloseTo(2 * REPLY_USD, 9);
      // Deterministic: the metered model, the refusal and the resume replay.
      await replays(history);
    });

    it('the spend store unreachable: NEEDS_HUMAN infrastructure_fault, the model not called', async () => {
      const tenant = uniqueId('tenant').slice(0, 40);
      // The guard plugin's ledger (where the spend store lives) is closed: every reservation fails.
      const closed = await openLedger(`sqlite:${join(dir, `closed-${tenant}.db`)}`);
      await closed.close();
      const { result, counts, server } = await run(
        [lookup('A-1'), { text: 'looked it up' }],
        { spendTenant: tenant },
        async () => undefined,
        'ok',
        Promise.resolve(),
        { spendLimits: limitsOf(tenant, 1), ledger: closed },
      );
      expect(server.requests()).toHaveLength(0);
      expect(counts.lookup_order).toBe(0);
      expect(result.run).toMatchObject({ terminal_state: 'NEEDS_HUMAN', reason: 'infrastructure_fault' });
      expect(result.run.report?.unmet_precondition).toMatch(/spend store unavailable/);
    });
  });
});
