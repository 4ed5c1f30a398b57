/**
 * Every LLM run can finish (issue 38 item 1): a worker with only the user's two tools
 * (`get_balance`, `send_email`) offers the model the built-in `complete_task`, and a model
 * that calls it completes the run. A run stopped on a tool the worker did not have is resumed
 * with `agentctl resume` once the worker is restarted with that tool: the resume is verified
 * against the worker's tool set, and the tool's counter moves only after the change. Real dev
 * server, real SQLite, the official OpenAI SDK against a local Chat Completions server.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import type { Worker } from '@temporalio/worker';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { reportQuery, statusQuery, type RunInput, type RunResult } from '../../common/contracts';
import { TerminalState } from '../../guard';
import { defineTool, type AnyTool } from '../../tools/define-tool';
import { finishingTool } from '../../tools/finish';
import { agentRun } from '../../workflows';
import { createAgentWorker, openWorkerDeps, type WorkerDeps } from '../../worker/create-worker';
import { workflowBundle } from '../helpers/run-harness';
import { waitFor } from '../helpers/run-inputs';
import { createTestEnv, testDataConverter, uniqueId, uniqueTaskQueue } from '../helpers/temporal-env';
import { agentctl } from '../client/cli-helpers';
import { startOpenAIServer, type OpenAIServer } from '../../testing/openai-server';
import { runResult } from '../helpers/run-result';

const KEY_ENV = 'FINISH_LLM_KEY';

/** The user's two tools, counting their real executions. */
function bank() {
  const calls = { get_balance: 0, send_email: 0 };
  const getBalance = defineTool({
    name: 'get_balance',
    description: 'The balance of an account, in cents.',
    effect: 'read',
    schema: z.object({ account: z.string().min(1) }).strict(),
    execute: (a) => {
      calls.get_balance += 1;
      return { data: { account: a.account, cents: 12_345 } };
    },
  });
  const sendEmail = defineTool({
    name: 'send_email',
    description: 'Send an email.',
    effect: 'write',
    schema: z.object({ to: z.string().min(1), body: z.string().min(1) }).strict(),
    operationKey: (a) => `email:${a.to}`,
    execute: (a) => {
      calls.send_email += 1;
      return { data: { sent: a.to } };
    },
  });
  return { calls, getBalance, sendEmail };
}

/** A model that reads the balance, emails it, then finishes with `complete_task`. */
function model(): Promise<OpenAIServer> {
  return startOpenAIServer((_i, req) => {
    const body = JSON.stringify(req.body);
    if (!body.includes('12345'))
      return { tool_calls: [{ name: 'get_balance', arguments: '{"account":"acc-1"}' }] };
    if (!/sent.{0,6}ann@example/.test(body))
      return { tool_calls: [{ name: 'send_email', arguments: '{"to":"ann@example.com","body":"12345"}' }] };
    return { tool_calls: [{ name: 'complete_task', arguments: '{"summary":"emailed the balance"}' }] };
  });
}

const offered = (server: OpenAIServer): string[][] =>
  server
    .completionRequests()
    .map((r) =>
      ((r.tools as { function: { name: string } }[] | undefined) ?? []).map((t) => t.function.name),
    );

describe('the built-in finishing tool', () => {
  let env: TestWorkflowEnvironment;
  let server: OpenAIServer;
  let dir: string;
  const running = new Set<{ worker: Worker; done: Promise<void>; deps: WorkerDeps }>();

  beforeAll(async () => {
    env = await createTestEnv();
    server = await model();
    process.env[KEY_ENV] = 'sk-test-finish';
    process.env.AGENT_MODEL_ENDPOINTS = JSON.stringify({
      'finish-llm': { provider: 'openai', baseURL: server.baseURL, apiKeyEnv: KEY_ENV },
    });
    dir = mkdtempSync(join(tmpdir(), 'alg-finish-'));
  });
  afterAll(async () => {
    for (const w of running) await stop(w);
    await server?.close();
    await env?.teardown();
    delete process.env[KEY_ENV];
    delete process.env.AGENT_MODEL_ENDPOINTS;
  });

  async function stop(w: { worker: Worker; done: Promise<void>; deps: WorkerDeps }) {
    running.delete(w);
    w.worker.shutdown();
    await w.done;
    await w.deps.close();
  }

  /** A user's worker: `openWorkerDeps({ ledgerUrl, tools })`, nothing else. */
  async function userWorker(tools: AnyTool[], taskQueue: string, ledgerUrl: string) {
    const deps = await openWorkerDeps({ ledgerUrl, tools, configPath: null });
    const worker = await createAgentWorker({
      connection: env.nativeConnection,
      namespace: 'default',
      taskQueue,
      deps,
      dataConverter: testDataConverter(),
      workflowBundle: await workflowBundle(),
    });
    const w = { worker, done: worker.run(), deps };
    running.add(w);
    return w;
  }

  const llmRun: RunInput = {
    goal: 'Email ann@example.com the balance of acc-1.',
    planner: { kind: 'openai', model: 'gpt-4o-mini', maxTokens: 256, endpoint: 'finish-llm' },
    resumeWindowMs: 120_000,
  };

  it('a worker with only get_balance and send_email: the model calls complete_task and the run COMPLETES', async () => {
    const b = bank();
    const taskQueue = uniqueTaskQueue('finish');
    const w = await userWorker([b.getBalance, b.sendEmail], taskQueue, `sqlite:${join(dir, 'a.db')}`);
    expect(w.deps.registry.names()).toEqual(['get_balance', 'send_email', 'complete_task']);
    const before = server.completionRequests().length;
    const handle = await env.client.workflow.start(agentRun, {
      taskQueue,
      workflowId: uniqueId('finish'),
      args: [llmRun],
    });
    const result: RunResult = await runResult(handle);
    expect(result).toMatchObject({ terminal_state: TerminalState.COMPLETED, reason: null });
    expect(result.summary).toBe('emailed the balance');
    expect(b.calls).toEqual({ get_balance: 1, send_email: 1 });
    // Every request offered the user's two tools and the finishing tool, nothing else.
    const asked = offered(server).slice(before);
    expect(asked).toHaveLength(3);
    for (const tools of asked) expect(tools.sort()).toEqual(['complete_task', 'get_balance', 'send_email']);
    await stop(w);
  });

  it('renamed, replaced or turned off: finishingTool({ name }), a tool of the same name, null', async () => {
    const b = bank();
    const ledgerUrl = `sqlite:${join(dir, 'names.db')}`;
    const renamed = await openWorkerDeps({
      ledgerUrl,
      tools: [b.getBalance],
      configPath: null,
      finishingTool: finishingTool({ name: 'done' }),
    });
    expect(renamed.registry.names()).toEqual(['get_balance', 'done']);
    await renamed.close();
    const own = defineTool({
      name: 'complete_task',
      description: 'mine',
      effect: 'read',
      schema: z.object({}).strict(),
      execute: () => ({ data: null, terminal: true }),
    });
    const replaced = await openWorkerDeps({ ledgerUrl, tools: [own], configPath: null });
    expect(replaced.registry.descriptors().map((d) => [d.name, d.description])).toEqual([
      ['complete_task', 'mine'],
    ]);
    await replaced.close();
    const none = await openWorkerDeps({
      ledgerUrl,
      tools: [b.getBalance],
      configPath: null,
      finishingTool: null,
    });
    expect(none.registry.names()).toEqual(['get_balance']);
    await none.close();
  });

  it('a stop on a tool the worker lacked resumes with agentctl once the worker has it; send_email runs only after', async () => {
    const b = bank();
    const taskQueue = uniqueTaskQueue('finish-resume');
    const ledgerUrl = `sqlite:${join(dir, 'b.db')}`;
    const cli = {
      TEMPORAL_ADDRESS: process.env.TEMPORAL_TEST_ADDRESS as string,
      TEMPORAL_NAMESPACE: 'default',
      TEMPORAL_TASK_QUEUE: taskQueue,
      LEDGER_URL: ledgerUrl,
    };
    // Version 1 of the worker forgot send_email.
    const v1 = await userWorker([b.getBalance], taskQueue, ledgerUrl);
    const id = uniqueId('finish-resume');
    const handle = await env.client.workflow.start(agentRun, { taskQueue, workflowId: id, args: [llmRun] });
    await waitFor(
      () => handle.query(statusQuery),
      (s) => s.waitingForResume,
    );
    const report = await handle.query(reportQuery);
    expect(report).toMatchObject({
      guard_reason: 'precondition_unchanged',
      blocked_call: { tool: 'send_email' },
    });
    expect(report?.unmet_precondition).toMatch(/no tool named "send_email"/);
    expect(b.calls.send_email).toBe(0);

    // The report says what lifts the stop, and who stopped the run.
    const shown = await agentctl(['report', id], cli);
    expect(shown.stdout).toMatch(/stopped by\s+the loop guard \(precondition_unchanged\)/);
    expect(shown.stdout).toMatch(/resume when\s+the worker has a tool named "send_email"/);

    // Nothing changed on the worker: refused, naming the missing tool.
    const refused = await agentctl(['resume', id, '--actor', 'dev', '--reason', 'try again'], cli);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toMatch(/still has no tool named "send_email"/);
    expect(b.calls.send_email).toBe(0);

    // Version 2: the same task queue, with the tool.
    await stop(v1);
    await userWorker([b.getBalance, b.sendEmail], taskQueue, ledgerUrl);
    const accepted = await agentctl(['resume', id, '--actor', 'dev', '--reason', 'send_email added'], cli);
    expect(accepted.code).toBe(0);
    expect(accepted.stdout).toMatch(/tool send_email is registered on this worker now/);
    const result: RunResult = await runResult(handle);
    expect(result).toMatchObject({ terminal_state: TerminalState.COMPLETED, summary: 'emailed the balance' });
    expect(b.calls.send_email).toBe(1);
  });
});
