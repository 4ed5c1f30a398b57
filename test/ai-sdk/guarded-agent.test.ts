/**
 * agent-loop-guard/ai-sdk (issue 34): a `generateText` agent on `@temporalio/ai-sdk` (each model
 * call an activity of its plugin, against a local OpenAI-compatible server) with the guard added
 * by `guardAgent`. The model files a ticket, re-sends it, then repeats a search: the re-sent write
 * is answered without running, the search is stopped before its third run, and the write's
 * activity, whose first completion is lost after the side effect (a worker dying after the write),
 * runs once. The counters are the tools' own.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { AiSdkPlugin } from '@temporalio/ai-sdk';
import { Context } from '@temporalio/activity';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { bundleAiSdkWorkflows } from './bundle';
import { WorkflowFailedError } from '@temporalio/client';
import type { RunResult, RunStatus } from '../../common/contracts';
import { reportQuery, statusQuery } from '../../common/contracts';
import { ledgerWrites } from '../../ai-sdk/worker';
import { openLedger, type Ledger } from '../../storage/ledger';
import { startOpenAIServer, type OpenAIServer } from '../../testing/openai-server';
import { createTestEnv, testDataConverter, uniqueId, uniqueTaskQueue } from '../helpers/temporal-env';
import { agentSinks } from '../../worker/create-worker';

const call = (name: string, args: unknown) => ({
  tool_calls: [{ name, arguments: JSON.stringify(args) }],
  usage: { prompt_tokens: 100, completion_tokens: 10 },
});

describe('guardAgent on @temporalio/ai-sdk', () => {
  let env: TestWorkflowEnvironment;
  let dir: string;
  let ledger: Ledger;
  let workflowBundle: { code: string };
  const servers: OpenAIServer[] = [];
  const workflowsPath = require.resolve('./workflows/guarded-agent');

  beforeAll(async () => {
    env = await createTestEnv();
    dir = mkdtempSync(join(tmpdir(), 'ai-sdk-guard-'));
    ledger = await openLedger(`sqlite:${join(dir, 'ledger.db')}`);
    // Bundled once, through the plugin (its polyfills first), for every worker of the file.
    workflowBundle = await bundleAiSdkWorkflows(workflowsPath);
  });
  afterAll(async () => {
    await ledger?.close();
    for (const s of servers) await s.close();
    await env?.teardown();
    rmSync(dir, { recursive: true, force: true });
  });

  async function run(script: Parameters<typeof startOpenAIServer>[0], input: Record<string, unknown>) {
    const server = await startOpenAIServer(script);
    servers.push(server);
    const counts = { search_tickets: 0, file_ticket: 0 };
    const filed: string[] = [];
    const writes = ledgerWrites(ledger, {
      fileTicket: async (i: { title: string }) => {
        counts.file_ticket += 1;
        filed.push(i.title);
        return { id: `INC-${filed.length}` };
      },
    });
    const taskQueue = uniqueTaskQueue('ai-sdk-guard');
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
        // The first attempt's completion is lost after the write committed (the worker died):
        // the retry must get the ledger's answer, not run the write again.
        fileTicket: async (i: { title: string }, meta: Parameters<typeof writes.fileTicket>[1]) => {
          const out = await writes.fileTicket(i, meta);
          if (Context.current().info.attempt === 1) throw new Error('worker died before reporting');
          return out;
        },
      },
      plugins: [
        new AiSdkPlugin({
          modelProvider: createOpenAICompatible({ name: 'local', baseURL: server.baseURL }),
        }),
      ],
    });
    const workflowId = uniqueId('ai-sdk-guard');
    const outcome = await worker.runUntil(async () => {
      const handle = await env.client.workflow.start('guardedAgent', {
        taskQueue,
        workflowId,
        args: [{ prompt: 'File a ticket for the full disk, then look for related ones.', ...input }],
      });
      const result = (await handle.result().catch((e: unknown) => e)) as
        { run: RunResult; executions: Record<string, number> } | Error;
      const status = result instanceof Error ? null : await handle.query(statusQuery);
      const report = result instanceof Error ? null : await handle.query(reportQuery);
      const history = await handle.fetchHistory();
      return { result, status, report, history };
    });
    return { ...outcome, counts, filed, server };
  }

  it('stops the repeated search before its third run; the re-sent write runs once, across a lost completion', async () => {
    const { result, status, report, counts, filed, server, history } = await run(
      [
        call('file_ticket', { title: 'disk full on db-1' }),
        call('file_ticket', { title: 'disk full on db-1' }),
        call('search_tickets', { query: 'disk full' }),
        call('search_tickets', { query: 'disk full' }),
        call('search_tickets', { query: 'disk full' }),
        { content: 'done' },
      ],
      {},
    );
    if (result instanceof Error) throw result;
    expect(counts).toEqual({ search_tickets: 2, file_ticket: 1 });
    expect(filed).toEqual(['disk full on db-1']);
    expect(result.executions).toEqual({ search_tickets: 2, file_ticket: 1 });
    expect(result.run.terminal_state).toBe('STOPPED_LOOP_GUARD');
    expect(result.run.reason).toBe('same_call_repeat');
    expect(result.run.cached).toBe(1); // the re-sent write: answered, not run
    expect(result.run.report).toMatchObject({
      terminal_state: 'STOPPED_LOOP_GUARD',
      guard_reason: 'same_call_repeat',
      completed: ['ticket:disk full on db-1'],
      blocked_call: { tool: 'search_tickets' },
    });
    // The loop ended at the stop: five model calls, the sixth reply never asked for.
    expect(server.completionRequests()).toHaveLength(5);
    // Model usage counted: 5 responses of 110 tokens.
    expect(result.run.usage?.tokens).toBe(550);
    expect(status as RunStatus).toMatchObject({
      terminalState: 'STOPPED_LOOP_GUARD',
      guardReason: 'same_call_repeat',
      usage: { tokens: 550 },
    });
    expect(report).toEqual(result.run.report);
    // The workflow is deterministic: its history replays (guard decisions, Date.now, the model calls).
    await Worker.runReplayHistory(
      {
        workflowBundle,
        // The agentTelemetry sink the guarded core reports to (the plugin registers it in a user's worker).
        sinks: agentSinks(),
        dataConverter: testDataConverter(),
        plugins: [
          new AiSdkPlugin({
            modelProvider: createOpenAICompatible({ name: 'local', baseURL: server.baseURL }),
          }),
        ],
      },
      history,
    );
  });

  it('steers a repeat back to the model as the tool result, and the run goes on (steerLimit 1)', async () => {
    const { result, status, counts, server } = await run(
      [
        call('search_tickets', { query: 'disk full' }),
        call('search_tickets', { query: 'disk full' }),
        call('search_tickets', { query: 'disk full' }),
        { content: 'nothing new: INC-0' },
      ],
      { steerLimit: 1, searchAttributes: true },
    );
    if (result instanceof Error) throw result;
    expect(counts.search_tickets).toBe(2);
    expect(result.run.terminal_state).toBe('COMPLETED');
    expect(result.run.summary).toBe('nothing new: INC-0');
    expect(result.run.decisions.map((d) => d.decision)).toEqual(['execute', 'execute', 'steer']);
    expect(status?.steers).toBe(1);
    // The model read the guard's note as the refused call's result.
    const last = server.completionRequests()[3] as { messages: Array<{ role: string; content: unknown }> };
    const toolMessage = last.messages.filter((m) => m.role === 'tool').pop();
    expect(JSON.stringify(toolMessage?.content)).toMatch(/guard same_call_repeat/);
  });

  it('stops a reworded repeat (near_call_repeat) when the tool declares similarArgs', async () => {
    const { result, counts } = await run(
      [
        call('search_tickets', { query: 'disk full on db-1' }),
        call('search_tickets', { query: 'db-1: full disk' }),
        call('search_tickets', { query: 'Full disk, db-1' }),
        { content: 'done' },
      ],
      { similarQuery: true },
    );
    if (result instanceof Error) throw result;
    expect(counts.search_tickets).toBe(2);
    expect(result.run.reason).toBe('near_call_repeat');
  });

  it('counts usage in stopWhen when the model is not wrapped', async () => {
    const { result, counts } = await run(
      [call('search_tickets', { query: 'a' }), call('search_tickets', { query: 'b' }), { content: 'done' }],
      { tokenBudget: 150, unwrappedModel: true },
    );
    if (result instanceof Error) throw result;
    expect(result.run.reason).toBe('token_budget');
    // Counted after each step's tool calls: both searches ran, the third model call never came.
    expect(counts.search_tickets).toBe(2);
    expect(result.run.usage?.tokens).toBe(220);
  });

  it('stops on the token budget when the model usage passes it', async () => {
    const { result, counts } = await run(
      [call('search_tickets', { query: 'a' }), call('search_tickets', { query: 'b' }), { content: 'done' }],
      { tokenBudget: 150 },
    );
    if (result instanceof Error) throw result;
    expect(result.run.reason).toBe('token_budget');
    // 110 tokens, then 220 > 150: the second proposal is refused before its search runs.
    expect(counts.search_tickets).toBe(1);
  });

  it('refuses to wrap guarded tools again, saying so', async () => {
    const { result } = await run([{ content: 'done' }], { wrapTwice: true });
    expect(result).toBeInstanceOf(WorkflowFailedError);
    expect(String((result as WorkflowFailedError).cause?.message)).toMatch(
      /already guarded by agent-loop-guard/,
    );
  });
});
