/**
 * agent-loop-guard/ai-sdk (issue 34): signed approvals and `agentctl resume` on a user's
 * `@temporalio/ai-sdk` agent (test/ai-sdk/workflows/approval-agent.ts) whose handlers are
 * installed, against the real dev server, a SQLite ledger and a local OpenAI-compatible server.
 * A gated write waits in its execute for a signed approval of that exact call (its digest): the
 * tool's counter does not move until then, and a twin call needs its own approval. The counters
 * are the tools' own.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { AiSdkPlugin } from '@temporalio/ai-sdk';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { bundleAiSdkWorkflows } from './bundle';
import type { WorkflowHandle } from '@temporalio/client';
import { statusQuery, type RunResult } from '../../common/contracts';
import {
  approveRun,
  getApprovalAudit,
  listPendingApprovals,
  getPendingApproval,
  resumeAgentRun,
  type ApprovalStoreOptions,
} from '../../client/api';
import { CliError } from '../../client/format';
import { guardActivities, ledgerWrites, type GuardActivitiesOptions } from '../../ai-sdk/worker';
import type { GuardedWriteMeta } from '../../ai-sdk/types';
import { Context } from '@temporalio/activity';
import { ApprovalStore } from '../../storage/approvals/approval-store';
import { openLedger, type Ledger } from '../../storage/ledger';
import { SpendStore } from '../../storage/spend';
import { OperatorRegistry } from '../../operators/registry';
import { alice, signedGrant, signedSpendRaise } from '../approvals/signing';
import { waitFor } from '../helpers/run-inputs';
import { agentctl } from '../client/cli-helpers';
import { startOpenAIServer, type OpenAIServer } from '../../testing/openai-server';
import { createTestEnv, testDataConverter, uniqueId, uniqueTaskQueue } from '../helpers/temporal-env';
import { agentSinks } from '../../worker/create-worker';

const call = (name: string, args: unknown) => ({
  tool_calls: [{ name, arguments: JSON.stringify(args) }],
  usage: { prompt_tokens: 100, completion_tokens: 10 },
});

/** The workers' operators: alice approves, lifts any stop, may raise the token budget to 5000 and a tenant's cap to $5. */
const operatorsOf = () =>
  OperatorRegistry.fromFile({
    operators: { alice: { publicKey: alice.publicKey, roles: ['approver'] } },
    roles: { approver: { lift: ['*'], approve: true, raise: { maxTokens: 5000 }, raiseSpendUsd: 5 } },
  });

type Outcome = { run: RunResult; executions: Record<string, number>; rounds: number };

describe('guardAgent approvals and resume on @temporalio/ai-sdk', () => {
  let env: TestWorkflowEnvironment;
  let dir: string;
  let ledger: Ledger;
  let store: ApprovalStoreOptions;
  let workflowBundle: { code: string };
  const servers: OpenAIServer[] = [];

  beforeAll(async () => {
    env = await createTestEnv();
    dir = mkdtempSync(join(tmpdir(), 'ai-sdk-approve-'));
    ledger = await openLedger(`sqlite:${join(dir, 'ledger.db')}`);
    store = { ledger, operators: operatorsOf(), env: {} };
    workflowBundle = await bundleAiSdkWorkflows(require.resolve('./workflows/approval-agent'));
  });
  afterAll(async () => {
    await ledger?.close();
    for (const s of servers) await s.close();
    await env?.teardown();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Runs the agent on a worker with alice's operators; `drive` acts on the open run. */
  async function run(
    script: Parameters<typeof startOpenAIServer>[0],
    input: Record<string, unknown>,
    drive: (h: WorkflowHandle, counts: Record<string, number>) => Promise<void>,
    workerOptions: Omit<GuardActivitiesOptions, 'operators'> = {},
  ) {
    const server = await startOpenAIServer(script);
    servers.push(server);
    const counts = { search_tickets: 0, transfer_funds: 0 };
    const sent: number[] = [];
    const operators = operatorsOf();
    const writes = ledgerWrites(
      ledger,
      {
        transferFunds: async (i: { to: string; amount: number }) => {
          counts.transfer_funds += 1;
          sent.push(i.amount);
          return { ok: true };
        },
      },
      { operators },
    );
    const taskQueue = uniqueTaskQueue('ai-sdk-approve');
    const worker = await Worker.create({
      connection: env.nativeConnection,
      namespace: 'default',
      taskQueue,
      dataConverter: testDataConverter(),
      workflowBundle,
      // The agentTelemetry sink the guarded core reports to (the plugin registers it in a user's worker).
      sinks: agentSinks(),
      activities: {
        searchTickets: async (query: string) => {
          counts.search_tickets += 1;
          return [`INC-0: ${query} (closed)`];
        },
        // The first attempt's completion is lost after the write committed (a worker dying): the
        // retry uses the same approval again (the same activity) and gets the ledger's answer.
        transferFunds: async (i: { to: string; amount: number }, meta: GuardedWriteMeta) => {
          const out = await writes.transferFunds(i, meta);
          if (Context.current().info.attempt === 1) throw new Error('worker died before reporting');
          return out;
        },
        ...guardActivities(ledger, { spendLimits: null, ...workerOptions, operators }),
        // The gate's refusal audit (core/gate.ts, issue 37), next to guardActivities.
      },
      plugins: [
        new AiSdkPlugin({
          modelProvider: createOpenAICompatible({ name: 'local', baseURL: server.baseURL }),
        }),
      ],
    });
    const workflowId = uniqueId('ai-sdk-approve');
    return worker.runUntil(async () => {
      const handle = await env.client.workflow.start('approvalAgent', {
        taskQueue,
        workflowId,
        args: [{ prompt: 'Pay acme.', ...input }],
      });
      await drive(handle, counts);
      const result = (await handle.result()) as Outcome;
      return { result, counts, sent, workflowId, server, history: await handle.fetchHistory() };
    });
  }

  const waiting = (h: WorkflowHandle) =>
    waitFor(
      () => h.query(statusQuery),
      (s) => s.waitingForResume,
    );

  it('a gated write waits for a signed approval of its exact call, runs once across a lost completion; a twin call needs its own', async () => {
    const { result, counts, sent, history, workflowId } = await run(
      [
        call('transfer_funds', { to: 'acme', amount: 100 }),
        call('transfer_funds', { to: 'acme', amount: 900 }),
        { content: 'paid' },
      ],
      { searchAttributes: true },
      async (h, counts) => {
        await waiting(h);
        // `agentctl approvals list` (no run id) lists this run too (issue 37: any engine).
        const listed = await waitFor(
          () => listPendingApprovals(env.client),
          (all) => all.some((p) => p.runId === h.workflowId),
        );
        expect(listed.find((p) => p.runId === h.workflowId)).toMatchObject({ tool: 'transfer_funds' });
        const first = await getPendingApproval(env.client, h.workflowId);
        expect(first).toMatchObject({
          reason: 'approval_required',
          tool: 'transfer_funds',
          args: { to: 'acme', amount: 100 },
          argsDigest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
        });
        expect(await h.query(statusQuery)).toMatchObject({
          terminalState: 'NEEDS_HUMAN',
          guardReason: 'approval_required',
        });
        // A resume without an approval is refused; the write has not run.
        const bare = await resumeAgentRun(env.client, h.workflowId, {
          actor: 'alice',
          key: alice.keyFile,
        });
        expect(bare).toMatchObject({ accepted: false, reason: expect.stringMatching(/not approved/) });
        expect(counts.transfer_funds).toBe(0);
        // Signed by alice, bound to this stop and this call's digest; the resume lifts it.
        const ok = await approveRun(env.client, h.workflowId, {
          ...store,
          key: alice.keyFile,
          reason: 'invoice checked',
          resume: true,
        });
        expect(ok.trusted).toBe(true);
        expect(ok.resume).toMatchObject({ accepted: true });

        // The twin (other amount) waits at its own stop.
        await waitFor(
          () => getPendingApproval(env.client, h.workflowId).catch(() => null),
          (p) => p !== null && p.stopRef !== first.stopRef,
        );
        const twin = await getPendingApproval(env.client, h.workflowId);
        expect(twin.args).toEqual({ to: 'acme', amount: 900 });
        expect(twin.argsDigest).not.toBe(first.argsDigest);
        expect(counts.transfer_funds).toBe(1);
        // An approval shown for the first call cannot approve the twin.
        const stale = await approveRun(env.client, h.workflowId, {
          ...store,
          key: alice.keyFile,
          reason: 'seen earlier',
          expectedStop: {
            stopRef: first.stopRef,
            fingerprint: first.fingerprint,
            argsDigest: first.argsDigest,
          },
        }).catch((e: unknown) => e);
        expect(stale).toBeInstanceOf(CliError);
        expect((stale as CliError).message).toMatch(/has moved on/);
        // A signed approval at the twin's stop but of the first call's digest does not lift it.
        await ApprovalStore.over(ledger).grant(
          signedGrant(alice.keyFile, {
            runId: h.workflowId,
            stopRef: twin.stopRef,
            tool: twin.tool,
            fingerprint: twin.fingerprint,
            argsHash: first.argsDigest!,
            reason: 'wrong digest',
            ttlMs: 60_000,
          }),
        );
        const wrong = await resumeAgentRun(env.client, h.workflowId, { actor: 'alice', key: alice.keyFile });
        expect(wrong).toMatchObject({ accepted: false, reason: expect.stringMatching(/^not approved \(/) });
        expect(counts.transfer_funds).toBe(1);
        const own = await approveRun(env.client, h.workflowId, {
          ...store,
          key: alice.keyFile,
          reason: 'second invoice checked',
          resume: true,
        });
        expect(own.resume).toMatchObject({ accepted: true });
      },
    );
    expect(counts).toEqual({ search_tickets: 0, transfer_funds: 2 });
    expect(sent).toEqual([100, 900]);
    expect(result.executions).toEqual({ transfer_funds: 2 });
    expect(result.run.terminal_state).toBe('COMPLETED');
    expect(result.run.summary).toBe('paid');
    // Each approval used by its write's activity, and again only by that activity's retry.
    const audit = await getApprovalAudit({ ...store, runId: workflowId });
    expect(
      audit.filter((a) => a.action === 'consumed').map((a) => (a.detail ?? '').replace(/^.* at /, '')),
    ).toEqual(['approval-0', 'approval-0 (activity retry)', 'approval-1', 'approval-1 (activity retry)']);
    // Deterministic: the history (waits, updates, verify activities) replays.
    await Worker.runReplayHistory(
      {
        workflowBundle,
        // The agentTelemetry sink the guarded core reports to (the plugin registers it in a user's worker).
        sinks: agentSinks(),
        dataConverter: testDataConverter(),
        plugins: [
          new AiSdkPlugin({
            modelProvider: createOpenAICompatible({ name: 'unused', baseURL: 'http://127.0.0.1:1/v1' }),
          }),
        ],
      },
      history,
    );
  });

  it('a gated write whose approval does not come in time stops the run NEEDS_HUMAN, nothing written', async () => {
    const { result, counts } = await run(
      [call('transfer_funds', { to: 'acme', amount: 100 }), { content: 'paid' }],
      { approvalWaitMs: 1500 },
      async () => undefined,
    );
    expect(counts.transfer_funds).toBe(0);
    expect(result.run).toMatchObject({ terminal_state: 'NEEDS_HUMAN', reason: 'approval_required' });
    expect(result.run.report?.blocked_call).toMatchObject({
      tool: 'transfer_funds',
      args_digest: expect.stringMatching(/^sha256:/),
    });
  });

  it('approved after its wait ran out: the re-entered loop runs that call once with the approval', async () => {
    const { result, counts, sent } = await run(
      [
        call('transfer_funds', { to: 'globex', amount: 250 }),
        call('transfer_funds', { to: 'globex', amount: 250 }),
        { content: 'paid' },
      ],
      { approvalWaitMs: 1000, resumes: 1 },
      async (h) => {
        // The wait runs out (the loop ends); the workflow then waits in untilResumed.
        await waitFor(
          () => h.query(statusQuery),
          // The trace's last word, as an agentRun's status shows it (issue 37: one core).
          (s) => s.waitingForResume && s.lastDecision === 'stop (approval_required)' && s.proposals === 1,
        );
        // Its wait ran out in the workflow (the timer fired), however late a loaded machine gets there.
        await waitFor(
          async () => (await h.fetchHistory()).events ?? [],
          (events) => events.some((e) => e.timerFiredEventAttributes),
        );
        const ok = await approveRun(env.client, h.workflowId, {
          ...store,
          key: alice.keyFile,
          reason: 'late but fine',
          resume: true,
        });
        expect(ok.resume).toMatchObject({ accepted: true });
      },
    );
    expect(result.rounds).toBe(2);
    expect(counts.transfer_funds).toBe(1);
    expect(sent).toEqual([250]); // (a key of its own: the ledger is shared by the file's runs)
    expect(result.run).toMatchObject({ terminal_state: 'COMPLETED', summary: 'paid' });
  });

  it('agentctl resume: a budget stop goes on after a raise, the loop re-entered with the messages so far', async () => {
    const { result, counts, server } = await run(
      [
        call('search_tickets', { query: 'a' }),
        call('search_tickets', { query: 'b' }),
        call('search_tickets', { query: 'b' }),
        { content: 'found INC-0', usage: { prompt_tokens: 100, completion_tokens: 10 } },
      ],
      { tokenBudget: 150, resumes: 1 },
      async (h, counts) => {
        await waiting(h);
        expect(await h.query(statusQuery)).toMatchObject({ guardReason: 'token_budget' });
        // 110 tokens, then 220 > 150: the second search was refused before it ran.
        expect(counts.search_tickets).toBe(1);
        const bare = await resumeAgentRun(env.client, h.workflowId, { actor: 'alice', key: alice.keyFile });
        expect(bare).toMatchObject({ accepted: false, reason: expect.stringMatching(/not raised/) });
        // The same authority rules as an agentRun: alice's role raises tokens to 5000 at most.
        const tooMuch = await resumeAgentRun(env.client, h.workflowId, {
          actor: 'alice',
          key: alice.keyFile,
          raise: { maxTokens: 9000 },
        });
        expect(tooMuch).toMatchObject({ accepted: false, reason: expect.stringMatching(/at most 5000/) });
        // The real agentctl, signed with alice's key file: the resume an operator types.
        const keyFile = join(dir, 'alice.key.json');
        writeFileSync(keyFile, JSON.stringify(alice.keyFile), { mode: 0o600 });
        const cli = await agentctl(
          ['resume', h.workflowId, '--key', keyFile, '--raise-tokens', '1000', '--json'],
          {
            TEMPORAL_ADDRESS: process.env.TEMPORAL_TEST_ADDRESS as string,
            TEMPORAL_NAMESPACE: 'default',
          },
        );
        expect(cli.code).toBe(0);
        expect(JSON.parse(cli.stdout)).toMatchObject({ workflow_id: h.workflowId, accepted: true });
      },
    );
    expect(counts.search_tickets).toBe(2);
    expect(result.rounds).toBe(2);
    expect(result.run).toMatchObject({ terminal_state: 'COMPLETED', summary: 'found INC-0' });
    expect(result.run.usage?.tokens).toBe(440);
    // The second generateText carried the conversation: the refused call's result is in it,
    // then the resume's note (the raise that lifted the budget stop).
    const third = server.completionRequests()[2] as { messages: Array<{ role: string; content: unknown }> };
    expect(third.messages.map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'assistant',
      'tool',
      'user',
    ]);
    expect(JSON.stringify(third.messages[5]!.content)).toMatch(/Budget raised: maxTokens to \d+/);
  });

  it('agentctl resume: a repeat stop goes on only when the worker verifies that the world changed', async () => {
    let changed = false;
    const { result, counts } = await run(
      [
        call('search_tickets', { query: 'x' }),
        call('search_tickets', { query: 'x' }),
        call('search_tickets', { query: 'x' }),
        call('search_tickets', { query: 'x' }),
        { content: 'INC-1 is new' },
      ],
      { resumes: 1 },
      async (h, counts) => {
        await waiting(h);
        expect(await h.query(statusQuery)).toMatchObject({ guardReason: 'same_call_repeat' });
        expect(counts.search_tickets).toBe(2);
        const same = await resumeAgentRun(env.client, h.workflowId, { actor: 'alice', key: alice.keyFile });
        expect(same).toMatchObject({ accepted: false, reason: 'no new tickets' });
        // Unsigned, on a worker with operators: refused before anything is verified.
        const unsigned = await resumeAgentRun(env.client, h.workflowId, { actor: 'alice' });
        expect(unsigned).toMatchObject({ accepted: false, reason: expect.stringMatching(/not authorised/) });
        changed = true;
        const ok = await resumeAgentRun(env.client, h.workflowId, { actor: 'alice', key: alice.keyFile });
        expect(ok).toMatchObject({ accepted: true, reason: 'INC-1 filed since' });
      },
      {
        verifyPrecondition: (i) =>
          Promise.resolve(
            changed && i.blockedTool === 'search_tickets'
              ? { changed: true, detail: 'INC-1 filed since' }
              : { changed: false, detail: 'no new tickets' },
          ),
      },
    );
    // Two runs, the stop, then one more after the verified resume (a new window).
    expect(counts.search_tickets).toBe(3);
    expect(result.rounds).toBe(2);
    expect(result.run).toMatchObject({ terminal_state: 'COMPLETED', summary: 'INC-1 is new' });
  });

  it("charges the tenant's spend limit: reserved before each model call, settled after; a refusal calls no model", async () => {
    const big = (name: string, args: unknown) => ({
      ...call(name, args),
      usage: { prompt_tokens: 2000, completion_tokens: 500 }, // $0.025 at $10 per million
    });
    const tenant = uniqueId('tenant').slice(0, 40);
    const limits = { [tenant]: { maxUsd: 0.06, windowMs: 3_600_000 } };
    const spend = SpendStore.over(ledger, limits);
    let requestsAtStop = -1;
    let searchesAtStop = -1;
    const { result, counts, server } = await run(
      [
        big('search_tickets', { query: 'a' }),
        big('search_tickets', { query: 'b' }),
        big('search_tickets', { query: 'c' }),
        { content: 'done', usage: { prompt_tokens: 100, completion_tokens: 10 } },
      ],
      { tenant, resumes: 1, resumeWaitMs: 30_000 },
      async (h, counts) => {
        await waiting(h);
        requestsAtStop = servers[servers.length - 1]!.completionRequests().length;
        searchesAtStop = counts.search_tickets ?? -1;
        expect(await h.query(statusQuery)).toMatchObject({
          terminalState: 'NEEDS_HUMAN',
          guardReason: 'spend_limit',
        });
        // The window has no room for the refused call: a resume is refused, saying why.
        const r = await resumeAgentRun(env.client, h.workflowId, { actor: 'alice', key: alice.keyFile });
        expect(r).toMatchObject({ accepted: false, reason: expect.stringMatching(/raise the cap/) });
        // alice raises the tenant's cap (signed, within her role's $5): now the resume is accepted.
        await spend.raise(signedSpendRaise(alice.keyFile, tenant, 1));
        const ok = await resumeAgentRun(env.client, h.workflowId, { actor: 'alice', key: alice.keyFile });
        expect(ok).toMatchObject({ accepted: true, reason: expect.stringMatching(/left/) });
      },
      { spendLimits: limits },
    );
    // Call 1 reserved ~$0.027 of $0.06, settled $0.025; call 2 the same, settled $0.05 in all;
    // call 3 ($0.05 + its worst case > $0.06) was refused: the model was not asked a third time.
    expect(requestsAtStop).toBe(2);
    expect(searchesAtStop).toBe(2);
    // After the raise: the third search and the final answer.
    expect(server.completionRequests()).toHaveLength(4);
    expect(counts.search_tickets).toBe(3);
    expect(result.run).toMatchObject({ terminal_state: 'COMPLETED', summary: 'done' });
    const st = await spend.status(tenant);
    expect(st.calls).toEqual({ settled: 4, inFlight: 0, refused: 1 });
    expect(st.settledUsd).toBeCloseTo(0.075 + 0.0011, 6);
  });
});
