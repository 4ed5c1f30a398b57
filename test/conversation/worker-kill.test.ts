/**
 * A SIGKILL of the worker process while a conversation waits for its person loses nothing
 * (issue 33): the person's message, sent while no worker is up, is taken once by the worker that
 * comes back, and the write runs once (the world's and the runtime's counters).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { RunInput, RunResult } from '../../common/contracts';
import { agentRun } from '../../workflows';
import { sendMessage, waitForReply } from '../../client/conversation';
import { runCounters } from '../../client/counters';
import { startOpenAIServer, type OpenAIServer, type OpenAIStep } from '../../testing/openai-server';
import type { RecordedRequest } from '../../testing/http-script';
import { createTestEnv, uniqueId, uniqueTaskQueue } from '../helpers/temporal-env';
import { ROOT } from '../client/cli-helpers';
import { runResult } from '../helpers/run-result';

const KEY_ENV = 'CONVERSATION_KILL_KEY';

type Message = { role: string; content?: unknown };
const messagesOf = (req: RecordedRequest): Message[] => (req.body as { messages?: Message[] }).messages ?? [];
const text = (m: Message | undefined): string => (typeof m?.content === 'string' ? m.content : '');

/** Asks for the go-ahead in text; on "go ahead" writes once, then completes. */
function model(_i: number, req: RecordedRequest): OpenAIStep {
  const msgs = messagesOf(req);
  const last = msgs[msgs.length - 1];
  if (last?.role === 'tool' && text(last).includes('"SUCCESS"') && !text(last).includes('complete'))
    return { tool_calls: [{ name: 'complete_task', arguments: '{"summary":"written"}' }] };
  if (last?.role === 'user' && text(last).includes('go ahead'))
    return { tool_calls: [{ name: 'write_record', arguments: '{"id":"kill-1","body":"kept"}' }] };
  return { content: 'Shall I write the record? Say "go ahead".' };
}

/** Starts the worker process; resolves once it polls. */
function startWorker(env: Record<string, string>): Promise<ChildProcess> {
  // `node --import tsx`, not the tsx CLI: the SIGKILL must hit the worker itself, not a wrapper.
  const proc = spawn(process.execPath, ['--import', 'tsx', 'test/helpers/conversation-worker.ts'], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  proc.stderr!.on('data', (c: Buffer) => (err += c.toString('utf8')));
  return new Promise((resolve, reject) => {
    proc.stdout!.on('data', (c: Buffer) => {
      if (c.toString('utf8').includes('ready')) resolve(proc);
    });
    proc.once('exit', (code) => reject(new Error(`worker exited ${code}: ${err}`)));
  });
}

describe('a worker killed while a conversation waits for its person', () => {
  let env: TestWorkflowEnvironment;
  let server: OpenAIServer;
  let worker: ChildProcess | null = null;

  beforeAll(async () => {
    process.env[KEY_ENV] = 'sk-test-conversation-kill';
    server = await startOpenAIServer(model);
    env = await createTestEnv();
  });
  afterAll(async () => {
    if (worker && worker.exitCode === null) {
      const gone = new Promise((r) => worker!.once('exit', r));
      worker.kill('SIGKILL');
      await gone;
    }
    await env?.teardown();
    await server?.close();
    delete process.env[KEY_ENV];
  });

  it('SIGKILL, a message while no worker is up, a new worker: the message taken once, the write once', async () => {
    const dbUrl = `sqlite:${join(mkdtempSync(join(tmpdir(), 'alg-conv-kill-')), 'agent.db')}`;
    const taskQueue = uniqueTaskQueue('conv-kill');
    const workerEnv = {
      CONV_DB_URL: dbUrl,
      CONV_TASK_QUEUE: taskQueue,
      AGENT_MODEL_ENDPOINTS: JSON.stringify({
        'conv-kill': { provider: 'openai', baseURL: server.baseURL, apiKeyEnv: KEY_ENV },
      }),
    };
    worker = await startWorker(workerEnv);
    const input: RunInput = {
      goal: 'write record kill-1 once the person agrees',
      planner: { kind: 'openai', model: 'gpt-4o-mini', maxTokens: 256, endpoint: 'conv-kill' },
      conversation: {},
      resumeWindowMs: 1000,
    };
    const workflowId = uniqueId('conv-kill');
    const handle = await env.client.workflow.start(agentRun, { taskQueue, workflowId, args: [input] });
    const first = await waitForReply(env.client, workflowId, { timeoutMs: 60_000 });
    expect(first.reply).toMatchObject({ kind: 'reply' });

    // The worker dies while the run waits for its person.
    const dead = new Promise((r) => worker!.once('exit', r));
    worker.kill('SIGKILL');
    await dead;
    const pending = sendMessage(env.client, workflowId, 'yes, go ahead', {
      messageId: 'go-1',
      confirmMs: 120_000,
    });
    await new Promise((r) => setTimeout(r, 1000));
    worker = await startWorker(workerEnv);
    await expect(pending).resolves.toMatchObject({ accepted: true, action: 'answer' });
    const result: RunResult = await runResult(handle);
    expect(result.terminal_state).toBe('COMPLETED');
    expect(await runCounters(workflowId, { ledgerUrl: dbUrl })).toEqual({
      write_record: 1,
      complete_task: 1,
    });
    const sent = server.requests.map(
      (r) => messagesOf(r).filter((m) => m.role === 'user' && text(m).includes('go ahead')).length,
    );
    expect(Math.max(...sent)).toBe(1);
  }, 150_000);
});
