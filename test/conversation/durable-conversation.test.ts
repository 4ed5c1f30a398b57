/**
 * A conversation is one durable run (issue 33): against a local OpenAI-compatible server
 * scripted to act like a customer-service agent, the run asks for an id (`ask_human`), gets it
 * through the client's `sendMessage`, asks in plain text for the new address and gets it through
 * `agentctl send`, makes the write, asks for confirmation, gets it and completes — the write ran
 * once, and a wall clock shorter than the waits does not stop it. A model that retries the same
 * failing write after every message is steered, then stopped, across turns: the tool's counter
 * does not move past the first call. Bad input is refused with the reason; nothing is lost.
 */
import { z } from 'zod';
import type { Client } from '@temporalio/client';
import { statusQuery, type RunResult } from '../../common/contracts';
import { fixture, waitFor } from '../helpers/run-inputs';
import { defineTool } from '../../tools/define-tool';
import { readConversation, sendMessage, waitForReply } from '../../client/conversation';
import { startOpenAIServer, type OpenAIServer, type OpenAIStep } from '../../testing/openai-server';
import type { RecordedRequest } from '../../testing/http-script';
import { startHarness, type Harness } from '../helpers/run-harness';
import { agentctl, cliEnv } from '../client/cli-helpers';
import type { TurnEvent } from '../../common/telemetry';
import { readInbox } from '../../client/console/inbox';
import { runResult } from '../helpers/run-result';

const KEY_ENV = 'CONVERSATION_LLM_KEY';
const PLANNER = { kind: 'openai', model: 'gpt-4o-mini', maxTokens: 256, endpoint: 'conv-agent' } as const;

type Message = { role: string; content?: unknown; tool_calls?: unknown };
const messagesOf = (req: RecordedRequest): Message[] => (req.body as { messages?: Message[] }).messages ?? [];
const text = (m: Message | undefined): string => (typeof m?.content === 'string' ? m.content : '');
const call = (name: string, args: unknown): OpenAIStep => ({
  tool_calls: [{ name, arguments: JSON.stringify(args) }],
});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The customer-service agent: asks, waits, writes once, confirms, finishes. */
function agent(_i: number, req: RecordedRequest): OpenAIStep {
  const msgs = messagesOf(req);
  const last = msgs[msgs.length - 1];
  const said = text(last);
  if (msgs.filter((m) => m.role !== 'system').length === 1)
    return call('ask_human', { question: 'What is your customer id?' });
  if (last?.role === 'tool' && said.includes('"answer":"C-42"'))
    return { content: 'Thanks. What is the new address?' };
  if (last?.role === 'user' && said.includes('Main St'))
    return call('update_address', { customer: 'C-42', address: said });
  if (last?.role === 'tool' && said.includes('"updated"'))
    return call('ask_human', { question: 'Updated. Anything else, or shall I close the ticket?' });
  if (last?.role === 'tool' && said.includes('close it'))
    return call('complete_task', { summary: 'address updated' });
  return { content: `I did not understand: ${said.slice(0, 80)}` };
}

/** A model that retries the same failing write after every message it gets. */
function stubborn(_i: number, req: RecordedRequest): OpenAIStep {
  const msgs = messagesOf(req);
  const last = msgs[msgs.length - 1];
  if (last?.role === 'tool') return { content: 'That did not work. Shall I try again?' };
  return call('update_address', { customer: 'C-13', address: '9 Elm St' });
}

describe('a conversation is one durable run (OpenAI protocol)', () => {
  let h: Harness;
  let client: Client;
  let server: OpenAIServer;
  let stubbornServer: OpenAIServer;
  const writes: string[] = [];
  /** What the worker's agentTelemetry sink was told of each turn (one OTel span each). */
  const turns: TurnEvent[] = [];

  const updateAddress = defineTool({
    name: 'update_address',
    description: "Change a customer's address.",
    effect: 'write',
    schema: z.object({ customer: z.string(), address: z.string() }).strict(),
    operationKey: (a) => `address:${a.customer}`,
    async execute(a, ctx) {
      if (a.customer === 'C-13') throw new Error('customer C-13 is locked');
      writes.push(`${a.customer}:${a.address}`);
      await h.deps.world.bump(ctx.tx);
      return { data: { updated: a.customer } };
    },
  });

  beforeAll(async () => {
    process.env[KEY_ENV] = 'sk-test-conversation';
    server = await startOpenAIServer(agent);
    stubbornServer = await startOpenAIServer(stubborn);
    process.env.AGENT_MODEL_ENDPOINTS = JSON.stringify({
      'conv-agent': { provider: 'openai', baseURL: server.baseURL, apiKeyEnv: KEY_ENV },
      'conv-stubborn': { provider: 'openai', baseURL: stubbornServer.baseURL, apiKeyEnv: KEY_ENV },
    });
    h = await startHarness({
      tools: [updateAddress],
      worker: () => ({
        telemetry: { decision: () => undefined, runEnd: () => undefined, turn: (e) => turns.push(e) },
      }),
    });
    client = h.env.client;
  });
  afterAll(async () => {
    await h?.close();
    await server?.close();
    await stubbornServer?.close();
    delete process.env[KEY_ENV];
    delete process.env.AGENT_MODEL_ENDPOINTS;
  });

  it('asks, waits, writes once, confirms and completes; the waits are not agent time', async () => {
    const run = await h.start({
      goal: "Update the customer's address",
      planner: PLANNER,
      conversation: {},
      // Far less than the conversation waits: only the agent's own time counts.
      guard: { maxMs: 4000 },
      resumeWindowMs: 1000,
    });
    const id = run.workflowId;
    const first = await waitForReply(client, id, { timeoutMs: 60_000 });
    expect(first.reply).toMatchObject({ from: 'agent', kind: 'question', text: 'What is your customer id?' });
    // The status shows the question waited on.
    const status = await run.handle.query('status');
    expect((status as { conversation?: unknown }).conversation).toMatchObject({
      open: true,
      waiting: { kind: 'question', text: 'What is your customer id?' },
    });
    // Bad input: refused with the reason, nothing recorded.
    await expect(sendMessage(client, id, '   ')).resolves.toMatchObject({
      accepted: false,
      reason: expect.stringContaining('empty message'),
    });
    await expect(sendMessage(client, id, 'x'.repeat(5000))).resolves.toMatchObject({
      accepted: false,
      reason: expect.stringContaining('the limit is 4000'),
    });
    // agentctl status shows the question waited on.
    const shown = await agentctl(['status', id], cliEnv(h));
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(
      /waiting for person\s+yes, since .* \(question\): What is your customer id\?/,
    );
    // The console lists it apart: waiting for its person, not running, not waiting for an operator.
    const t0 = Date.now();
    let inbox = await readInbox(client, { taskQueue: h.taskQueue, linkOf: (r) => r });
    while (!inbox.conversations.some((r) => r.runId === id) && Date.now() - t0 < 10_000) {
      await sleep(200);
      inbox = await readInbox(client, { taskQueue: h.taskQueue, linkOf: (r) => r });
    }
    expect(inbox.conversations.map((r) => r.runId)).toContain(id);
    expect(inbox.running.map((r) => r.runId)).not.toContain(id);
    expect(inbox.waiting.map((r) => r.runId)).not.toContain(id);
    await sleep(Math.max(0, 2500 - (Date.now() - t0)));
    const sent = await sendMessage(client, id, 'C-42', { messageId: 'm-1', from: 'dana' });
    expect(sent).toMatchObject({ accepted: true, action: 'answer' });
    expect(sent.reason).toContain('What is your customer id?');
    // The same message again (a retry): the first answer, applied once.
    await expect(sendMessage(client, id, 'C-42', { messageId: 'm-1' })).resolves.toMatchObject({
      accepted: true,
      seq: sent.seq,
    });

    const second = await waitForReply(client, id, { after: sent.seq!, timeoutMs: 60_000 });
    expect(second.reply).toMatchObject({ kind: 'reply', text: 'Thanks. What is the new address?' });
    await sleep(2500);
    const cli = await agentctl(['send', id, '1 Main St'], cliEnv(h));
    expect(cli.stderr).toBe('');
    expect(cli.code).toBe(0);
    expect(cli.stdout).toContain('answer (#');

    const third = await waitForReply(client, id, { after: second.reply!.seq + 1, timeoutMs: 60_000 });
    expect(third.reply).toMatchObject({ kind: 'question' });
    expect(third.reply!.text).toContain('shall I close the ticket');
    // A person's "approve" / "resume" is text for the model, never an operator action.
    await sleep(2500);
    await expect(sendMessage(client, id, 'approve and resume. yes, close it')).resolves.toMatchObject({
      accepted: true,
      action: 'answer',
    });

    const result: RunResult = await runResult(run);
    expect(result.terminal_state).toBe('COMPLETED');
    expect(result.summary).toBe('address updated');
    expect(writes).toEqual(['C-42:1 Main St']);
    expect(await h.counters(id)).toEqual({ update_address: 1, complete_task: 1 });
    const view = await readConversation(client, id);
    expect(view).toMatchObject({ open: false, turns: 3, received: 3 });
    expect(view.entries.map((e) => `${e.from}:${e.kind}`)).toEqual([
      'agent:question',
      'person:message',
      'agent:reply',
      'person:message',
      'agent:question',
      'person:message',
      // The run's own ending (issue 41): the finishing tool's COMPLETED, said as the last entry.
      'agent:end',
    ]);
    expect(view.entries[view.entries.length - 1]!.text).toBe('the conversation ended: run COMPLETED');
    // One telemetry turn per hand-over, each as long as the person took.
    const mine = turns.filter((t) => t.runId === id);
    expect(mine.map((t) => [t.turn, t.kind, t.outcome, t.messages])).toEqual([
      [1, 'question', 'answered', 1],
      [2, 'reply', 'answered', 1],
      [3, 'question', 'answered', 1],
    ]);
    for (const t of mine) expect(t.endedAtMs - t.startedAtMs).toBeGreaterThanOrEqual(2000);
    // A closed conversation refuses a message with the reason.
    await expect(sendMessage(client, id, 'hello?')).resolves.toMatchObject({
      accepted: false,
      reason: 'the conversation is closed (run COMPLETED): start a new conversation',
    });
  }, 120_000);

  it('the same failing write after every message: steered, then stopped across turns, the tool run once', async () => {
    const run = await h.start({
      goal: 'Update the address of customer C-13',
      planner: { ...PLANNER, endpoint: 'conv-stubborn' },
      conversation: {},
      resumeWindowMs: 500,
    });
    const id = run.workflowId;
    let after = 0;
    let messages = 0;
    for (;;) {
      const { reply, view } = await waitForReply(client, id, { after, timeoutMs: 60_000 });
      if (!reply || !view.open || reply.kind === 'end') break;
      const status = await run.handle.query('status');
      if ((status as { phase: string }).phase !== 'RUNNING') break;
      const sent = await sendMessage(client, id, 'please try again');
      if (!sent.accepted) break; // the guard stopped the run meanwhile
      messages += 1;
      after = sent.seq!;
    }
    const result: RunResult = await runResult(run);
    expect(result).toMatchObject({ terminal_state: 'STOPPED_LOOP_GUARD', reason: 'precondition_unchanged' });
    expect(result.decisions.map((d) => d.decision)).toEqual(['execute', 'steer', 'steer', 'stop']);
    expect(messages).toBe(3);
    // The write ran once: the retries, one per message, never reached it.
    expect(await h.counters(id)).toEqual({ update_address: 1 });
  }, 120_000);

  it('a message to a run that is not a conversation is refused (agentctl send: exit 3); an unknown run is exit 1', async () => {
    // A job run that stays open (stopped NEEDS_HUMAN, waiting for an operator).
    const deny = { kind: 'FATAL', code: 'permission_denied', message: 'no' } as const;
    const run = await h.start(
      fixture([{ tool: 'deploy', args: {}, result: deny }], { resumeWindowMs: 60_000 }),
    );
    await waitFor(
      () => run.handle.query(statusQuery),
      (st) => st.phase === 'WAITING',
    );
    await expect(sendMessage(client, run.workflowId, 'hi')).resolves.toMatchObject({
      accepted: false,
      reason: expect.stringContaining('this run is not a conversation'),
    });
    await expect(sendMessage(client, 'no-such-run-xyz', 'hi')).rejects.toMatchObject({ exitCode: 1 });
    const cli = await agentctl(['send', run.workflowId, 'hi'], cliEnv(h));
    expect(cli.code).toBe(3);
    expect(cli.stderr).toContain('refused: this run is not a conversation');
    await run.handle.terminate('test over');
  }, 60_000);
});
