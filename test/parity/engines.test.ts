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
import { resumeAgentRun, stopAgentRun } from '../../client/api';
import { statusQuery, type RunResult } from '../../common/contracts';
import { jsonBytes } from '../../common/payload-limits';
import { AGENT_STATE } from '../../common/search-attributes';
import { CHECKPOINT_ARGS_BYTES, CHECKPOINT_TRACE_BYTES } from '../../core/checkpoint-bounds';
import { guardActivities } from '../../ai-sdk/worker';
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
}

const HOLD = 'HOLD';
const DONE = 'done';

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

describe('one situation, one answer, on every engine', () => {
  const aiSdk = aiSdkTestBed('parity-ai-sdk-', require.resolve('../ai-sdk/workflows/approval-agent'));
  let harness: Harness;
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
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  beforeEach(() => {
    holding.open = false;
    holding.waiters = [];
    holding.executions = 0;
  });

  async function onAgentRun(s: Scenario): Promise<Outcome> {
    const run = await harness.start(
      live(
        [
          ...(s.agentRunReads ?? s.reads).map((query) => ({ tool: 'lookup', args: { query } })),
          { tool: 'complete_task', args: { summary: DONE } },
        ],
        s.resume ? { resumeWindowMs: 60_000 } : {},
      ),
    );
    const stateWhileResumed = s.resume
      ? await resumeAndRead(harness.env.client, run.handle, false)
      : undefined;
    if (s.operatorStop) await stopWhileHeld(harness.env.client, run.handle, false);
    const result = await runResult(run);
    return {
      run: result,
      stateAtEnd: await agentState(run.handle),
      executions: holding.executions,
      modelRequests: null,
      ...(s.resume ? { stateWhileResumed } : {}),
    };
  }

  async function onAiSdk(s: Scenario): Promise<Outcome> {
    const usage = { prompt_tokens: 100, completion_tokens: 10 };
    const server = await aiSdk.serve([
      ...s.reads.map((query) => ({
        tool_calls: [{ name: 'search_tickets', arguments: JSON.stringify({ query }) }],
        usage,
      })),
      { content: DONE, usage },
    ]);
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
        ...guardActivities(aiSdk.ledger, {
          spendLimits: null,
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
          },
        ],
      });
      const stateWhileResumed = s.resume ? await resumeAndRead(aiSdk.env.client, handle, false) : undefined;
      if (s.operatorStop) await stopWhileHeld(aiSdk.env.client, handle, false);
      const out = (await handle.result()) as { run: RunResult };
      return {
        run: out.run,
        stateAtEnd: await agentState(handle),
        executions: holding.executions,
        modelRequests: server.completionRequests().length,
        ...(s.resume ? { stateWhileResumed } : {}),
      };
    });
  }

  async function onOpenAI(s: Scenario): Promise<Outcome> {
    const server = await startResponsesServer([
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
        activities: { lookup_order: async (i: { orderId: string }) => read(i.orderId) },
        plugins: [
          pluginOf(server.baseURL),
          new OpenAIAgentsGuardPlugin({
            ledger: aiSdk.ledger,
            operators: operators(),
            spendLimits: null,
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
            },
          ],
        });
        const stateWhileResumed = s.resume ? await resumeAndRead(aiSdk.env.client, handle, true) : undefined;
        if (s.operatorStop) await stopWhileHeld(aiSdk.env.client, handle, true);
        const out = (await handle.result()) as { run: RunResult };
        return {
          run: out.run,
          stateAtEnd: await agentState(handle),
          executions: holding.executions,
          modelRequests: server.requests().length,
          ...(s.resume ? { stateWhileResumed } : {}),
        };
      });
    } finally {
      await server.close();
    }
  }

  async function onStrands(s: Scenario): Promise<Outcome> {
    const server = await startModelServer([
      ...s.reads.map((orderId): Step => ({ call: 'lookup_order', args: { orderId } })),
      { text: DONE },
    ]);
    try {
      const taskQueue = uniqueTaskQueue('parity-strands');
      const worker = await Worker.create({
        connection: aiSdk.env.nativeConnection,
        namespace: 'default',
        taskQueue,
        workflowBundle: strandsBundle,
        activities: { lookup_order: async (i: { orderId: string }) => read(i.orderId) },
        plugins: [
          strandsPluginOf(server.baseURL),
          new StrandsGuardPlugin({
            ledger: aiSdk.ledger,
            operators: operators(),
            spendLimits: null,
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
            },
          ],
        });
        const stateWhileResumed = s.resume ? await resumeAndRead(aiSdk.env.client, handle, true) : undefined;
        if (s.operatorStop) await stopWhileHeld(aiSdk.env.client, handle, true);
        const out = (await handle.result()) as { run: RunResult };
        return {
          run: out.run,
          stateAtEnd: await agentState(handle),
          executions: holding.executions,
          modelRequests: server.requests().length,
          ...(s.resume ? { stateWhileResumed } : {}),
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
      out[e] =
        e === 'agentRun'
          ? await onAgentRun(s)
          : e === 'aiSdk'
            ? await onAiSdk(s)
            : e === 'openAI'
              ? await onOpenAI(s)
              : await onStrands(s);
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
});
