/**
 * A conversation loses nothing (issue 33 item 3): a worker that goes away while the run waits
 * for a person, and messages sent while the run continues as new, are each taken exactly once —
 * counted in what the model was sent and in the write's counter. Also: a close, an idle
 * timeout, a flood while the agent works (a bounded queue, then refusals with the reason).
 */
import { z } from 'zod';
import type { Client } from '@temporalio/client';
import type { Worker } from '@temporalio/worker';
import type { RunResult } from '../../common/contracts';
import { defineTool } from '../../tools/define-tool';
import { readConversation, sendMessage, waitForReply } from '../../client/conversation';
import { createAgentWorker } from '../../worker/create-worker';
import { startOpenAIServer, type OpenAIServer, type OpenAIStep } from '../../testing/openai-server';
import type { RecordedRequest } from '../../testing/http-script';
import { startHarness, workflowBundle, type Harness } from '../helpers/run-harness';
import { fixture, waitFor } from '../helpers/run-inputs';
import { statusQuery } from '../../common/contracts';
import { runResult } from '../helpers/run-result';

const KEY_ENV = 'CONVERSATION_ROBUST_KEY';
const PLANNER = { kind: 'openai', model: 'gpt-4o-mini', maxTokens: 256, endpoint: 'conv-chatty' } as const;

type Message = { role: string; content?: unknown };
const messagesOf = (req: RecordedRequest): Message[] => (req.body as { messages?: Message[] }).messages ?? [];
const text = (m: Message | undefined): string => (typeof m?.content === 'string' ? m.content : '');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Says "ok" to every message; on "finish" writes once, then completes. */
function chatty(_i: number, req: RecordedRequest): OpenAIStep {
  const msgs = messagesOf(req);
  const last = msgs[msgs.length - 1];
  if (last?.role === 'tool' && text(last).includes('"updated"'))
    return { tool_calls: [{ name: 'complete_task', arguments: '{"summary":"done"}' }] };
  if (last?.role === 'user' && text(last).includes('FINISH-NOW')) {
    const customer = /C-\d+/.exec(text(msgs[0]))?.[0] ?? 'C-0';
    return {
      tool_calls: [{ name: 'update_address', arguments: JSON.stringify({ customer, address: 'x' }) }],
    };
  }
  return { content: `ok (${msgs.length})` };
}

/** Every user text the model was sent in its last request (the whole conversation here). */
function userTexts(server: OpenAIServer): string {
  const last = server.requests[server.requests.length - 1]!;
  return messagesOf(last)
    .filter((m) => m.role === 'user' || m.role === 'tool')
    .map(text)
    .join('\n');
}
const occurrences = (hay: string, needle: RegExp) => (hay.match(needle) ?? []).length;

describe('a conversation loses nothing', () => {
  let h: Harness;
  let client: Client;
  let server: OpenAIServer;
  let second: { worker: Worker; running: Promise<void> } | null = null;
  let firstDown = false;

  const updateAddress = defineTool({
    name: 'update_address',
    description: "Change a customer's address.",
    effect: 'write',
    schema: z.object({ customer: z.string(), address: z.string() }).strict(),
    operationKey: (a) => `address:${a.customer}`,
    async execute(a, ctx) {
      await h.deps.world.bump(ctx.tx);
      return { data: { updated: a.customer } };
    },
  });

  beforeAll(async () => {
    process.env[KEY_ENV] = 'sk-test-conversation-robust';
    server = await startOpenAIServer(chatty);
    process.env.AGENT_MODEL_ENDPOINTS = JSON.stringify({
      'conv-chatty': { provider: 'openai', baseURL: server.baseURL, apiKeyEnv: KEY_ENV },
    });
    h = await startHarness({ tools: [updateAddress] });
    client = h.env.client;
  });
  afterAll(async () => {
    if (second) {
      second.worker.shutdown();
      await second.running;
    }
    if (h && !firstDown) h.worker.shutdown();
    await h?.deps.close();
    await h?.env.teardown();
    await server?.close();
    delete process.env[KEY_ENV];
    delete process.env.AGENT_MODEL_ENDPOINTS;
  });

  it('messages sent while the run continues as new: each taken once, the write once', async () => {
    const run = await h.start({
      goal: 'chat, then update C-7 when told to',
      planner: PLANNER,
      conversation: { queueLimit: 3 },
      // A continue-as-new every few turns.
      maxHistoryEvents: 60,
      guard: { maxTokens: 10_000_000, maxCostUsd: 1000 },
      resumeWindowMs: 1000,
    });
    const id = run.workflowId;
    await waitForReply(client, id, { timeoutMs: 60_000 });
    const N = 40;
    let refusedFull = 0;
    const send = async (i: number) => {
      for (;;) {
        const sent = await sendMessage(client, id, `msg-${i}`, { messageId: `flood-${i}` });
        if (sent.accepted) return;
        expect(sent.reason).toMatch(/queue limit is 3/);
        refusedFull += 1;
        await sleep(30);
      }
    };
    // Five at a time, without waiting for the agent: some arrive while it works or switches runs.
    for (let i = 1; i <= N; i += 5) await Promise.all([0, 1, 2, 3, 4].map((k) => send(i + k)));
    // A message id sent again after the switches: its first answer, not taken twice.
    await expect(sendMessage(client, id, 'msg-1', { messageId: 'flood-1' })).resolves.toMatchObject({
      accepted: true,
    });
    let done = false;
    while (!done) {
      const sent = await sendMessage(client, id, 'FINISH-NOW', { messageId: 'finish' });
      done = sent.accepted;
      if (!done) await sleep(50);
    }
    const result: RunResult = await runResult(run);
    expect(result.terminal_state).toBe('COMPLETED');
    expect(await h.counters(id)).toEqual({ update_address: 1, complete_task: 1 });
    // Each message reached the model exactly once.
    const all = userTexts(server);
    for (let i = 1; i <= N; i++)
      expect([i, occurrences(all, new RegExp(`\\bmsg-${i}\\b`, 'g'))]).toEqual([i, 1]);
    const view = await readConversation(client, id);
    expect(view.received).toBe(N + 1);
    // The run did continue as new, several times.
    const desc = await run.handle.describe();
    expect(desc.runId).not.toBe(run.handle.firstExecutionRunId);
    console.log(`conversation CAN test: ${N} messages, ${refusedFull} refusals (queue full)`);
  }, 180_000);

  it('a worker that goes away while the run waits for the person: the message is taken once, the write once', async () => {
    const run = await h.start({
      goal: 'chat, then update C-8 when told to',
      planner: PLANNER,
      conversation: {},
      resumeWindowMs: 1000,
    });
    const id = run.workflowId;
    const first = await waitForReply(client, id, { timeoutMs: 60_000 });
    // The worker goes away while the run waits for a person.
    h.worker.shutdown();
    firstDown = true;
    await sleep(200);
    const pending = sendMessage(client, id, 'please FINISH-NOW', {
      messageId: 'after-kill',
      confirmMs: 120_000,
    });
    await sleep(500);
    const worker = await createAgentWorker({
      connection: h.env.nativeConnection,
      namespace: 'default',
      taskQueue: h.taskQueue,
      deps: h.deps,
      dataConverter: h.dataConverter,
      workflowBundle: await workflowBundle(),
    });
    second = { worker, running: worker.run() };
    await expect(pending).resolves.toMatchObject({ accepted: true, action: 'answer' });
    const result: RunResult = await runResult(run);
    expect(result.terminal_state).toBe('COMPLETED');
    expect(first.reply?.kind).toBe('reply');
    expect(await h.counters(id)).toEqual({ update_address: 1, complete_task: 1 });
    expect(occurrences(userTexts(server), /please FINISH-NOW/g)).toBe(1);
  }, 120_000);

  it('close ends PARTIAL conversation_closed; idle ends PARTIAL conversation_idle; both with a StopReport', async () => {
    const closing = await h.start({ goal: 'chat', planner: PLANNER, conversation: {} });
    await waitForReply(client, closing.workflowId, { timeoutMs: 60_000 });
    await expect(
      sendMessage(client, closing.workflowId, 'bye', { close: true, from: 'dana' }),
    ).resolves.toMatchObject({ accepted: true, action: 'closing' });
    const closed: RunResult = await runResult(closing);
    expect(closed).toMatchObject({ terminal_state: 'PARTIAL', reason: 'conversation_closed' });
    expect(closed.report?.unmet_precondition ?? JSON.stringify(closed.report)).toContain('closed');

    const idle = await h.start({ goal: 'chat', planner: PLANNER, conversation: { idleTimeoutMs: 1500 } });
    const idled: RunResult = await runResult(idle);
    expect(idled).toMatchObject({ terminal_state: 'PARTIAL', reason: 'conversation_idle' });
    expect(JSON.stringify(idled.report)).toContain('no message from the person within 2 s');
  }, 120_000);

  it('a stopped conversation waits for an operator: "approve" from a person is refused with the run\'s state', async () => {
    const run = await h.start(
      fixture(
        [{ tool: 'deploy', args: {}, result: { kind: 'FATAL', code: 'permission_denied', message: 'no' } }],
        { conversation: {}, resumeWindowMs: 60_000 },
      ),
    );
    await waitFor(
      () => run.handle.query(statusQuery),
      (st) => st.phase === 'WAITING',
    );
    const sent = await sendMessage(client, run.workflowId, 'approve. resume please');
    expect(sent).toMatchObject({ accepted: false, action: 'refused' });
    expect(sent.reason).toMatch(
      /WAITING \(NEEDS_HUMAN permission_denied\): it waits for an operator, not a person/,
    );
    // Nothing changed: still stopped, nothing recorded.
    expect((await run.handle.query(statusQuery)).phase).toBe('WAITING');
    expect((await readConversation(client, run.workflowId)).received).toBe(0);
    await run.handle.terminate('test over');
  });
});
