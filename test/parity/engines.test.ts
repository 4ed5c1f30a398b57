/**
 * One situation, one answer, on every engine: the same scenarios run against an `agentRun`
 * (a live scripted planner), an AI SDK agent (`guardAgent`, `generateText` against a local
 * Chat Completions server), an OpenAI Agents agent (`guardOpenAIAgent`, `TemporalOpenAIRunner`
 * against a local Responses server) and a Strands agent (`guardStrandsAgent`, a `TemporalAgent`
 * whose `OpenAIModel` streams from a local Responses server), each on the real dev server. Each row compares what an
 * operator reads: the StopReport's fields, the counters, the checkpoint, the search attributes.
 * Where an engine cannot give the same answer, the row says why.
 */
import { bundleLedger } from '../helpers/bundle-ledger';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OpenAIProvider } from '@openai/agents-openai';
import { OpenAIAgentsPlugin } from '@temporalio/openai-agents';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { AiSdkPlugin } from '@temporalio/ai-sdk';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { bundleWorkflowCode, DefaultLogger, Worker } from '@temporalio/worker';
import { z } from 'zod';
import { approveRun, getPendingApproval, resumeAgentRun, stopAgentRun } from '../../client/api';
import { statusQuery, type RunResult } from '../../common/contracts';
import { jsonBytes } from '../../common/payload-limits';
import { AGENT_STATE } from '../../common/search-attributes';
import { CHECKPOINT_ARGS_BYTES, CHECKPOINT_TRACE_BYTES } from '../../core/checkpoint-bounds';
import { guardActivities, ledgerWrites } from '../../ai-sdk/worker';
import type { Ledger } from '../../storage/ledger';
import { SpendStore, type SpendLimits } from '../../storage/spend';
import { startOpenAIServer, type OpenAIServer } from '../../testing/openai-server';
import { OpenAIAgentsGuardPlugin } from '../../openai-agents/worker';
import { OperatorRegistry } from '../../operators/registry';
import { defineTool } from '../../tools/define-tool';
import { agentSinks } from '../../worker/create-worker';
import { alice } from '../approvals/signing';
import { aiSdkTestBed } from '../ai-sdk/bundle';
import { startHarness, type Harness } from '../helpers/run-harness';
import { live, waitFor } from '../helpers/run-inputs';
import { runResult } from '../helpers/run-result';
import { testDataConverter, uniqueId, uniqueTaskQueue } from '../helpers/temporal-env';
import { startResponsesServer, type ResponsesStep } from '../openai-agents/responses-server';
import { StrandsPlugin } from '@temporalio/strands-agents';
import { StrandsGuardPlugin } from '../../strands-agents/worker';
import { OpenAIModel } from '../strands-agents/openai-model';
import { startModelServer, type Step } from '../strands-agents/model-server';

type Engine = 'agentRun' | 'aiSdk' | 'openAI' | 'strands';
const ENGINES: readonly Engine[] = ['agentRun', 'aiSdk', 'openAI', 'strands'];

/** What one engine's run gave: its result, its tool's executions, its model requests, the AgentState seen. */
interface Outcome {
  run: RunResult;
  executions: number;
  /** Model requests sent (null: the engine's planner sends none, a scripted agentRun). */
  modelRequests: number | null;
  /** AgentState while the resumed run was still running (when the scenario holds one open). */
  stateWhileResumed?: string;
  /** AgentState once the run closed. */
  stateAtEnd?: string;
  /** What an operator saw at each approval of a twin scenario. */
  twin?: TwinSeen;
  /** The payments made by the run's end (`to:amount`). */
  paid?: readonly string[];
}

/** A twin scenario as the operator saw it, and the payments made meanwhile. */
interface TwinSeen {
  /** The pending call (payee and amount) at the first stop, and at the second. */
  readonly pending: readonly unknown[];
  /** Payments made while the first call waited, and while the twin waited. */
  readonly paidAtFirst: readonly string[];
  readonly paidAtTwin: readonly string[];
  /** The run's status while the twin waited. */
  readonly whileTwinWaits: { terminalState: string | null; guardReason: string | null };
  /** The twin's args digest is not the approved call's. */
  readonly ownDigest: boolean;
}

/** A scenario in each engine's terms: the read's queries in order, then the final text. */
interface Scenario {
  /** The read's argument, call by call (`HOLD` blocks until the row releases it). */
  readonly reads: readonly string[];
  /** Resume after the first stop (the worker's verifier accepts), and hold the resumed run open. */
  readonly resume?: boolean;
  /**
   * The scripted agentRun's reads when they differ: its planner proposes the blocked call again
   * itself after a resume, where a framework's model is scripted to send it again.
   */
  readonly agentRunReads?: readonly string[];
  /** While the `HOLD` read runs, an operator stops the run (`agentctl stop`), then it is released. */
  readonly operatorStop?: boolean;
  /** The run's token budget (each model reply uses 100 in + 10 out). */
  readonly tokenBudget?: number;
  /**
   * Two calls of the approval-gated payment ({@link TWIN}) in one model response, under one call
   * id on the Responses engines (the AI SDK's two ids: see there; the scripted agentRun: two
   * steps); alice approves each, signed, as it comes up.
   */
  readonly twin?: boolean;
  /** Every model call is charged to {@link TENANT}, whose cap is below one call's worst case. */
  readonly spend?: boolean;
}

const HOLD = 'HOLD';
const DONE = 'done';

/** The approved call and its twin: the same tool, other payee and amount. */
const TWIN = [
  { to: 'alice', amount: 10 },
  { to: 'mallory', amount: 5000 },
] as const;
/** Each payment the gated write made (`to:amount`), on whichever engine ran. */
const paid: string[] = [];
function recordPayment(i: { to: string; amount: number }): { paid: number; to: string } {
  paid.push(`${i.to}:${i.amount}`);
  return { paid: i.amount, to: i.to };
}

/**
 * A tenant capped at $0.00001 an hour: below the worst case of any one model call on every
 * engine (at $10 per million tokens, or gpt-4o-mini's list price for agentRun's LLM planner).
 */
const TENANT = 'parity-tenant';
const SPEND_LIMITS: SpendLimits = { [TENANT]: { maxUsd: 0.00001, windowMs: 3_600_000 } };

/** The read's gate: a `HOLD` call waits for {@link release}. */
const holding = { open: false, waiters: [] as Array<() => void>, executions: 0 };
const released = () => (holding.open ? Promise.resolve() : new Promise<void>((r) => holding.waiters.push(r)));
function release(): void {
  holding.open = true;
  for (const w of holding.waiters.splice(0)) w();
}
async function read(query: string): Promise<{ query: string; rows: string[] }> {
  holding.executions += 1;
  if (query === HOLD) await released();
  return { query, rows: [`row for ${query.slice(0, 20)}`] };
}

const operators = () =>
  OperatorRegistry.fromFile({
    operators: { alice: { publicKey: alice.publicKey, roles: ['approver'] } },
    roles: { approver: { lift: ['*'], approve: true, stop: true } },
  });

/** AgentState as the UI and `agentctl list` read it. */
async function agentState(h: WorkflowHandle): Promise<string | undefined> {
  return (await h.describe()).typedSearchAttributes.get(AGENT_STATE);
}

/** Waits for the held read, stops the run as `agentctl stop` does, then releases the read. */
async function stopWhileHeld(client: Client, h: WorkflowHandle, signed: boolean): Promise<void> {
  await waitFor(
    async () => holding.waiters.length,
    (n) => n > 0,
  );
  const answer = await stopAgentRun(client, h.workflowId, {
    actor: 'alice',
    reason: 'runaway',
    ...(signed ? { key: alice.keyFile } : {}),
  });
  expect(answer).toMatchObject({ accepted: true });
  release();
}

/** Waits for the run's stop, resumes it, waits until the resumed run holds its read, reads AgentState. */
async function resumeAndRead(
  client: Client,
  h: WorkflowHandle,
  signed: boolean,
): Promise<string | undefined> {
  await waitFor(
    () => h.query(statusQuery),
    (s) => s.waitingForResume,
  );
  const answer = await resumeAgentRun(client, h.workflowId, {
    actor: 'alice',
    reason: 'new rows arrived',
    ...(signed ? { key: alice.keyFile } : {}),
  });
  expect(answer).toMatchObject({ accepted: true });
  await waitFor(
    async () => holding.waiters.length,
    (n) => n > 0,
  );
  const state = await agentState(h);
  release();
  return state;
}

/** Payee and amount of a pending call (the framework agents' `pay` carries an order and request id too). */
const payee = (args: unknown) => {
  const { to, amount } = args as { to: string; amount: number };
  return { to, amount };
};

/**
 * Waits for the first gated call, approves its exact args (signed by alice) and resumes; waits
 * for the twin's own stop, reads what an operator sees, then approves the twin the same way.
 */
async function approveTwin(client: Client, h: WorkflowHandle, ledger: Ledger): Promise<TwinSeen> {
  const pending = () => getPendingApproval(client, h.workflowId).catch(() => null);
  const store = { ledger, operators: operators(), env: {}, key: alice.keyFile };
  const first = (await waitFor(pending, (p) => p !== null))!;
  const paidAtFirst = [...paid];
  const ok = await approveRun(client, h.workflowId, { ...store, reason: 'alice 10 checked', resume: true });
  expect(ok.resume).toMatchObject({ accepted: true });
  const twin = (await waitFor(pending, (p) => p !== null && p.stopRef !== first.stopRef))!;
  const paidAtTwin = [...paid];
  const { terminalState, guardReason } = await h.query(statusQuery);
  const own = await approveRun(client, h.workflowId, {
    ...store,
    reason: 'mallory 5000 checked',
    resume: true,
  });
  expect(own.resume).toMatchObject({ accepted: true });
  return {
    pending: [payee(first.args), payee(twin.args)],
    paidAtFirst,
    paidAtTwin,
    whileTwinWaits: { terminalState, guardReason },
    ownDigest: twin.argsDigest !== first.argsDigest,
  };
}

describe('one situation, one answer, on every engine', () => {
  const aiSdk = aiSdkTestBed('parity-ai-sdk-', require.resolve('../ai-sdk/workflows/approval-agent'));
  let harness: Harness;
  /** The agentRun of the twin and spend rows: alice's operators, the tenant's cap, a priced LLM planner. */
  let gated: Harness;
  /** The LLM planner's Chat Completions server (the spend row: never asked). */
  let agentModel: OpenAIServer;
  let openAIBundle: { code: string };
  let strandsBundle: { code: string };
  let dir: string;
  const pluginOf = (baseURL: string) =>
    new OpenAIAgentsPlugin({ modelProvider: new OpenAIProvider({ baseURL, apiKey: 'test-key' }) });
  const strandsPluginOf = (baseURL: string) =>
    new StrandsPlugin({
      models: {
        openai: () =>
          new OpenAIModel({ modelId: 'gpt-scripted', apiKey: 'test-key', clientConfig: { baseURL } }),
      },
    });

  beforeAll(async () => {
    const lookup = defineTool({
      name: 'lookup',
      description: 'Look rows up.',
      effect: 'read',
      schema: z.object({ query: z.string() }).strict(),
      // What a resume re-verifies: new rows arrived (the verifier of the framework workers agrees).
      checkPrecondition: () => Promise.resolve(null),
      async execute(a) {
        return { data: await read(a.query) };
      },
    });
    harness = await startHarness({ tools: [lookup] });
    const pay = defineTool({
      name: 'pay',
      description: 'Pay someone; a person approves each payment.',
      effect: 'write',
      schema: z.object({ to: z.string(), amount: z.number() }).strict(),
      operationKey: (a) => `pay:${a.to}:${a.amount}`,
      requiresApproval: true,
      execute: async (a) => ({ data: recordPayment(a) }),
    });
    agentModel = await startOpenAIServer(() => ({ content: DONE }));
    process.env.AGENT_MODEL_ENDPOINTS = JSON.stringify({
      'parity-llm': { provider: 'openai', baseURL: agentModel.baseURL, apiKeyEnv: 'PARITY_LLM_KEY' },
    });
    process.env.PARITY_LLM_KEY = 'sk-test-parity';
    gated = await startHarness({
      tools: [pay],
      operators: operators(),
      deps: (d) => ({ spend: SpendStore.over(d.ledger, SPEND_LIMITS) }),
    });
    dir = mkdtempSync(join(tmpdir(), 'parity-'));
    openAIBundle = await bundleWorkflowCode({
      workflowsPath: require.resolve('../openai-agents/workflows/payments-agent'),
      plugins: [
        pluginOf('http://127.0.0.1:1/v1'),
        new OpenAIAgentsGuardPlugin({ ledger: bundleLedger(), spendLimits: null, operators: operators() }),
      ],
      logger: new DefaultLogger('WARN'),
    });
    strandsBundle = await bundleWorkflowCode({
      workflowsPath: require.resolve('../strands-agents/workflows/strands-agent'),
      plugins: [
        strandsPluginOf('http://127.0.0.1:1/v1'),
        new StrandsGuardPlugin({ ledger: bundleLedger(), spendLimits: null, operators: operators() }),
      ],
      logger: new DefaultLogger('WARN'),
    });
  });
  afterAll(async () => {
    await harness?.close();
    await gated?.close();
    await agentModel?.close();
    delete process.env.AGENT_MODEL_ENDPOINTS;
    delete process.env.PARITY_LLM_KEY;
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  beforeEach(() => {
    holding.open = false;
    holding.waiters = [];
    holding.executions = 0;
    paid.length = 0;
  });

  /** The twin in one Responses reply: `pay` twice under one call id (each engine its own order). */
  const twinCalls = (orderId: string): Step =>
    TWIN.map((a, k) => ({ call: 'pay', args: { orderId, ...a, requestId: `req-${k}` }, callId: 'call_pay' }));
  /** The framework agents' `pay` activity: the ledger-wrapped payment, verifying alice's approvals. */
  const payActivity = () =>
    ledgerWrites(
      aiSdk.ledger,
      { pay: async (i: { to: string; amount: number }) => recordPayment(i) },
      { operators: operators() },
    );

  async function onAgentRun(s: Scenario): Promise<Outcome> {
    const h = s.twin || s.spend ? gated : harness;
    const requestsBefore = agentModel.completionRequests().length;
    const run = await h.start(
      s.spend
        ? // The scripted planner sends no model request: the LLM planner's is what the cap gates.
          {
            goal: 'look the rows up',
            planner: { kind: 'openai', model: 'gpt-4o-mini', maxTokens: 256, endpoint: 'parity-llm' },
            tenant: TENANT,
            resumeWindowMs: 300,
          }
        : live(
            [
              ...(s.twin
                ? TWIN.map((args) => ({ tool: 'pay', args }))
                : (s.agentRunReads ?? s.reads).map((query) => ({ tool: 'lookup', args: { query } }))),
              { tool: 'complete_task', args: { summary: DONE } },
            ],
            s.resume || s.twin ? { resumeWindowMs: 60_000 } : {},
          ),
    );
    const stateWhileResumed = s.resume ? await resumeAndRead(h.env.client, run.handle, false) : undefined;
    if (s.operatorStop) await stopWhileHeld(h.env.client, run.handle, false);
    const twin = s.twin ? await approveTwin(h.env.client, run.handle, h.deps.ledger) : undefined;
    const result = await runResult(run);
    return {
      run: result,
      stateAtEnd: await agentState(run.handle),
      executions: holding.executions,
      modelRequests: s.spend ? agentModel.completionRequests().length - requestsBefore : null,
      ...(s.resume ? { stateWhileResumed } : {}),
      ...(twin ? { twin } : {}),
    };
  }

  async function onAiSdk(s: Scenario): Promise<Outcome> {
    const usage = { prompt_tokens: 100, completion_tokens: 10 };
    const server = await aiSdk.serve([
      ...(s.twin
        ? [
            {
              // Two call ids: Chat Completions pairs each tool result with its call's id, so the
              // next model request would be refused with one id for both (the Responses engines
              // below send the twin under the approved call's id).
              tool_calls: TWIN.map((a, k) => ({
                id: `call_pay_${k}`,
                name: 'transfer_funds',
                arguments: JSON.stringify(a),
              })),
              usage,
            },
          ]
        : s.reads.map((query) => ({
            tool_calls: [{ name: 'search_tickets', arguments: JSON.stringify({ query }) }],
            usage,
          }))),
      { content: DONE, usage },
    ]);
    // The twin row's worker trusts alice's operators file (its approvals are signed); the other
    // rows stop and resume unsigned, in open mode.
    const signed = s.twin ? { operators: operators() } : {};
    const taskQueue = uniqueTaskQueue('parity-ai-sdk');
    const worker = await Worker.create({
      connection: aiSdk.env.nativeConnection,
      namespace: 'default',
      taskQueue,
      dataConverter: testDataConverter(),
      workflowBundle: aiSdk.workflowBundle,
      sinks: agentSinks(),
      activities: {
        searchTickets: async (query: string) => read(query),
        ...ledgerWrites(
          aiSdk.ledger,
          { transferFunds: async (i: { to: string; amount: number }) => recordPayment(i) },
          signed,
        ),
        ...guardActivities(aiSdk.ledger, {
          ...signed,
          spendLimits: s.spend ? SPEND_LIMITS : null,
          verifyPrecondition: () => Promise.resolve({ changed: true, detail: 'new rows arrived' }),
        }),
      },
      plugins: [
        new AiSdkPlugin({
          modelProvider: createOpenAICompatible({ name: 'local', baseURL: server.baseURL }),
        }),
      ],
    });
    return worker.runUntil(async () => {
      const handle = await aiSdk.env.client.workflow.start('approvalAgent', {
        taskQueue,
        workflowId: uniqueId('parity-ai-sdk'),
        args: [
          {
            prompt: 'Look the rows up.',
            searchAttributes: true,
            ...(s.resume ? { resumes: 1 } : {}),
            ...(s.tokenBudget ? { tokenBudget: s.tokenBudget } : {}),
            ...(s.spend ? { tenant: TENANT } : {}),
          },
        ],
      });
      const stateWhileResumed = s.resume ? await resumeAndRead(aiSdk.env.client, handle, false) : undefined;
      if (s.operatorStop) await stopWhileHeld(aiSdk.env.client, handle, false);
      const twin = s.twin ? await approveTwin(aiSdk.env.client, handle, aiSdk.ledger) : undefined;
      const out = (await handle.result()) as { run: RunResult };
      return {
        run: out.run,
        stateAtEnd: await agentState(handle),
        executions: holding.executions,
        modelRequests: server.completionRequests().length,
        ...(s.resume ? { stateWhileResumed } : {}),
        ...(twin ? { twin } : {}),
      };
    });
  }

  async function onOpenAI(s: Scenario): Promise<Outcome> {
    // The twin's response holds two calls: the Strands model server speaks the same Responses API.
    const server = s.twin
      ? await startModelServer([twinCalls('T-openai'), { text: DONE }])
      : await startResponsesServer([
          ...s.reads.map((orderId): ResponsesStep => ({ call: 'lookup_order', args: { orderId } })),
          { text: DONE },
        ]);
    try {
      const taskQueue = uniqueTaskQueue('parity-openai');
      const worker = await Worker.create({
        connection: aiSdk.env.nativeConnection,
        namespace: 'default',
        taskQueue,
        workflowBundle: openAIBundle,
        activities: { lookup_order: async (i: { orderId: string }) => read(i.orderId), ...payActivity() },
        plugins: [
          pluginOf(server.baseURL),
          new OpenAIAgentsGuardPlugin({
            ledger: aiSdk.ledger,
            operators: operators(),
            spendLimits: s.spend ? SPEND_LIMITS : null,
            verifyPrecondition: () => Promise.resolve({ changed: true, detail: 'new rows arrived' }),
            dataConverter: testDataConverter(),
          }),
        ],
      });
      return await worker.runUntil(async () => {
        const handle = await aiSdk.env.client.workflow.start('paymentsAgent', {
          taskQueue,
          workflowId: uniqueId('parity-openai'),
          args: [
            {
              prompt: 'Look the rows up.',
              searchAttributes: true,
              ...(s.resume ? { resumeAfterStop: true } : {}),
              ...(s.tokenBudget ? { tokenBudget: s.tokenBudget } : {}),
              ...(s.twin ? { approval: true } : {}),
              ...(s.spend ? { spendTenant: TENANT } : {}),
            },
          ],
        });
        const stateWhileResumed = s.resume ? await resumeAndRead(aiSdk.env.client, handle, true) : undefined;
        if (s.operatorStop) await stopWhileHeld(aiSdk.env.client, handle, true);
        const twin = s.twin ? await approveTwin(aiSdk.env.client, handle, aiSdk.ledger) : undefined;
        const out = (await handle.result()) as { run: RunResult };
        return {
          run: out.run,
          stateAtEnd: await agentState(handle),
          executions: holding.executions,
          modelRequests: server.requests().length,
          ...(s.resume ? { stateWhileResumed } : {}),
          ...(twin ? { twin } : {}),
        };
      });
    } finally {
      await server.close();
    }
  }

  async function onStrands(s: Scenario): Promise<Outcome> {
    const server = await startModelServer([
      ...(s.twin
        ? [twinCalls('T-strands')]
        : s.reads.map((orderId): Step => ({ call: 'lookup_order', args: { orderId } }))),
      { text: DONE },
    ]);
    try {
      const taskQueue = uniqueTaskQueue('parity-strands');
      const worker = await Worker.create({
        connection: aiSdk.env.nativeConnection,
        namespace: 'default',
        taskQueue,
        workflowBundle: strandsBundle,
        activities: { lookup_order: async (i: { orderId: string }) => read(i.orderId), ...payActivity() },
        plugins: [
          strandsPluginOf(server.baseURL),
          new StrandsGuardPlugin({
            ledger: aiSdk.ledger,
            operators: operators(),
            spendLimits: s.spend ? SPEND_LIMITS : null,
            verifyPrecondition: () => Promise.resolve({ changed: true, detail: 'new rows arrived' }),
            dataConverter: testDataConverter(),
          }),
        ],
      });
      return await worker.runUntil(async () => {
        const handle = await aiSdk.env.client.workflow.start('strandsAgent', {
          taskQueue,
          workflowId: uniqueId('parity-strands'),
          args: [
            {
              prompt: 'Look the rows up.',
              searchAttributes: true,
              ...(s.resume ? { resumeAfterStop: true } : {}),
              ...(s.tokenBudget ? { tokenBudget: s.tokenBudget } : {}),
              ...(s.twin ? { approval: true } : {}),
              ...(s.spend ? { spendTenant: TENANT } : {}),
            },
          ],
        });
        const stateWhileResumed = s.resume ? await resumeAndRead(aiSdk.env.client, handle, true) : undefined;
        if (s.operatorStop) await stopWhileHeld(aiSdk.env.client, handle, true);
        const twin = s.twin ? await approveTwin(aiSdk.env.client, handle, aiSdk.ledger) : undefined;
        const out = (await handle.result()) as { run: RunResult };
        return {
          run: out.run,
          stateAtEnd: await agentState(handle),
          executions: holding.executions,
          modelRequests: server.requests().length,
          ...(s.resume ? { stateWhileResumed } : {}),
          ...(twin ? { twin } : {}),
        };
      });
    } finally {
      await server.close();
    }
  }

  /** The scenario on every engine, one after the other (they share the read's counter). */
  async function onEvery(
    s: Scenario,
    engines: readonly Engine[] = ENGINES,
  ): Promise<Record<Engine, Outcome>> {
    const out = {} as Record<Engine, Outcome>;
    for (const e of engines) {
      holding.open = false;
      holding.waiters = [];
      holding.executions = 0;
      paid.length = 0;
      out[e] =
        e === 'agentRun'
          ? await onAgentRun(s)
          : e === 'aiSdk'
            ? await onAiSdk(s)
            : e === 'openAI'
              ? await onOpenAI(s)
              : await onStrands(s);
      out[e].paid = [...paid];
    }
    return out;
  }

  /** What an operator compares across engines: the StopReport's fields and the counters. */
  const stopShape = (o: Outcome) => ({
    terminal_state: o.run.terminal_state,
    reason: o.run.reason,
    executed: o.run.executed,
    cached: o.run.cached,
    stopped_at: o.run.stopped_at,
    decisions: o.run.decisions.map((d) => d.decision),
    executions: o.executions,
    agentState: o.stateAtEnd,
    report: o.run.report && {
      terminal_state: o.run.report.terminal_state,
      guard_reason: o.run.report.guard_reason,
      steps: o.run.report.steps,
      resume_condition: o.run.report.resume_condition,
      next_allowed_action: o.run.report.next_allowed_action,
      blocked: o.run.report.blocked_call !== null,
    },
  });

  it('a runaway read: the same StopReport and counters on every engine', async () => {
    const out = await onEvery({ reads: ['a', 'a', 'a', 'a'] });
    const shapes = ENGINES.map((e) => stopShape(out[e]));
    expect(shapes[0]).toMatchObject({
      terminal_state: 'STOPPED_LOOP_GUARD',
      reason: 'same_call_repeat',
      executed: 2,
      executions: 2,
    });
    expect(shapes[1]).toEqual(shapes[0]);
    expect(shapes[2]).toEqual(shapes[0]);
    expect(shapes[3]).toEqual(shapes[0]);
  });

  it('a checkpoint past its bytes: every engine carries long args as previews within 64 KB', async () => {
    // Three reads of 3 KB each, then the runaway stop: its checkpoint keeps the trace.
    const long = 'q'.repeat(3 * 1024);
    const out = await onEvery({ reads: [long, long, long] });
    for (const e of ENGINES) {
      const cp = out[e].run.checkpoint;
      expect({ e, reason: out[e].run.reason }).toEqual({ e, reason: 'same_call_repeat' });
      expect(cp).not.toBeNull();
      const withArgs = cp!.trace.filter((r) => r.args !== null && r.args !== undefined);
      expect(withArgs.length).toBeGreaterThan(0);
      for (const r of withArgs) {
        expect({ e, bytes: jsonBytes(r.args) <= CHECKPOINT_ARGS_BYTES }).toEqual({ e, bytes: true });
      }
      expect(jsonBytes(cp!.trace)).toBeLessThanOrEqual(CHECKPOINT_TRACE_BYTES);
      expect(withArgs.some((r) => (r.args as { args_truncated?: boolean }).args_truncated === true)).toBe(
        true,
      );
    }
  });

  it('a resume: the resumed run shows AgentState RUNNING until it ends, then COMPLETED, on every engine', async () => {
    const out = await onEvery({
      reads: ['a', 'a', 'a', 'a', HOLD],
      agentRunReads: ['a', 'a', 'a', HOLD],
      resume: true,
    });
    for (const e of ENGINES) {
      expect({ e, state: out[e].stateWhileResumed }).toEqual({ e, state: 'RUNNING' });
      expect({ e, end: out[e].run.terminal_state, state: out[e].stateAtEnd }).toEqual({
        e,
        end: 'COMPLETED',
        state: 'COMPLETED',
      });
    }
    // The same counters: two reads before the stop, the blocked one and the held one after the
    // resume. An agentRun ends by its finishing tool (`complete_task`, one more executed step);
    // a framework agent ends by its model's text: that step is left out of the agentRun's.
    const counters = ENGINES.map((e) => {
      const finishing = e === 'agentRun' ? 1 : 0;
      const { decisions } = out[e].run;
      return {
        executed: out[e].run.executed - finishing,
        executions: out[e].executions,
        decisions: decisions.slice(0, decisions.length - finishing).map((d) => d.decision),
      };
    });
    expect(out.agentRun.run.decisions.at(-1)?.tool).toBe('complete_task');
    expect(counters[1]).toEqual(counters[0]);
    expect(counters[2]).toEqual(counters[0]);
    expect(counters[3]).toEqual(counters[0]);
  });

  it('an operator stop while a read runs: the same StopReport and counters on every engine', async () => {
    const out = await onEvery({ reads: [HOLD, 'b', 'c'], operatorStop: true });
    const shapes = ENGINES.map((e) => stopShape(out[e]));
    expect(shapes[0]).toMatchObject({ reason: 'operator_stop', executions: 1 });
    expect(shapes[1]).toEqual(shapes[0]);
    expect(shapes[2]).toEqual(shapes[0]);
    expect(shapes[3]).toEqual(shapes[0]);
  });

  it('a run at its token budget sends no further model request (the framework engines)', async () => {
    // Each reply uses 110 tokens: after the first the run sits exactly at its budget. The
    // scripted agentRun sends no model request at all; its LLM planner's requests pass the
    // ceiling gate, which reserves each request's worst case (test/planners/call-ceiling.test.ts).
    const out = await onEvery({ reads: ['a', 'b'], tokenBudget: 110 }, ['aiSdk', 'openAI', 'strands']);
    for (const e of ['aiSdk', 'openAI', 'strands'] as const) {
      expect({ e, requests: out[e].modelRequests }).toEqual({ e, requests: 1 });
      expect({ e, end: out[e].run.terminal_state, reason: out[e].run.reason }).toEqual({
        e,
        end: 'STOPPED_LOOP_GUARD',
        reason: 'token_budget',
      });
      expect({ e, executions: out[e].executions }).toEqual({ e, executions: 1 });
    }
    expect(stopShape(out.openAI)).toEqual(stopShape(out.aiSdk));
    expect(stopShape(out.strands)).toEqual(stopShape(out.aiSdk));
  });

  it('a twin of an approved call: it does not run on that approval and waits NEEDS_HUMAN for its own, on every engine', async () => {
    const out = await onEvery({ reads: [], twin: true });
    for (const e of ENGINES) {
      // alice approved alice 10's exact args: it ran once; mallory 5000 (the same tool, and on
      // the framework engines the same call id in the same model response) ran 0 times and
      // stopped the run approval_required with its own digest, until its own approval ran it once.
      expect({ e, twin: out[e].twin }).toEqual({
        e,
        twin: {
          pending: [TWIN[0], TWIN[1]],
          paidAtFirst: [],
          paidAtTwin: ['alice:10'],
          whileTwinWaits: { terminalState: 'NEEDS_HUMAN', guardReason: 'approval_required' },
          ownDigest: true,
        },
      });
      expect({ e, paid: out[e].paid, end: out[e].run.terminal_state }).toEqual({
        e,
        paid: ['alice:10', 'mallory:5000'],
        end: 'COMPLETED',
      });
    }
    // The same counters (the agentRun's finishing `complete_task` step left out, as in the resume row).
    const counters = ENGINES.map((e) => {
      const finishing = e === 'agentRun' ? 1 : 0;
      const { decisions } = out[e].run;
      return {
        executed: out[e].run.executed - finishing,
        cached: out[e].run.cached,
        decisions: decisions.slice(0, decisions.length - finishing).map((d) => d.decision),
      };
    });
    expect(counters[0]).toEqual({
      executed: 2,
      cached: 0,
      decisions: ['stop', 'execute', 'stop', 'execute'],
    });
    // The framework models were asked twice: the response with both calls, then for the answer.
    for (const e of ['aiSdk', 'openAI', 'strands'] as const)
      expect({ e, requests: out[e].modelRequests }).toEqual({ e, requests: 2 });
    expect(counters[1]).toEqual(counters[0]);
    expect(counters[2]).toEqual(counters[0]);
    expect(counters[3]).toEqual(counters[0]);
  });

  it("a tenant's spend cap below one call's worst case: no model request, NEEDS_HUMAN spend_limit, on every engine", async () => {
    // agentRun's scripted planner sends no model request: its row runs the LLM planner (priced
    // gpt-4o-mini against a local server), whose request the same tenant cap gates.
    const out = await onEvery({ reads: ['a'], spend: true });
    for (const e of ENGINES) {
      expect({ e, requests: out[e].modelRequests, executions: out[e].executions }).toEqual({
        e,
        requests: 0,
        executions: 0,
      });
    }
    const shapes = ENGINES.map((e) => stopShape(out[e]));
    expect(shapes[0]).toMatchObject({
      terminal_state: 'NEEDS_HUMAN',
      reason: 'spend_limit',
      executed: 0,
      agentState: 'NEEDS_HUMAN',
    });
    expect(shapes[1]).toEqual(shapes[0]);
    expect(shapes[2]).toEqual(shapes[0]);
    expect(shapes[3]).toEqual(shapes[0]);
  });
});
