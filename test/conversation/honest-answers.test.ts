/**
 * What the person is told is true (issue 41), against the dev server and a local
 * Chat Completions server, counting what reached the model:
 *  - a message queued while a tool runs reaches the model before `complete_task` runs (the
 *    finishing call waits for it), exactly once, and complete_task runs once;
 *  - messages sent while a finishing tool runs are answered without a promise of a read, never
 *    reach the model when the run completes, and `replies`, `status` and the view say `not read`;
 *  - a conversation that ended idle or closed refuses in the run's own words (exact text);
 *  - a burst from several clients (each its own connection, through `connectClient` of
 *    `agent-loop-guard/client`) is answered message by message: accepted, queued or refused
 *    with a reason, none thrown, none applied twice, each accepted one read by the model once.
 */
import { z } from 'zod';
import type { Client } from '@temporalio/client';
import type { RunResult } from '../../common/contracts';
import { defineTool } from '../../tools/define-tool';
import { connectClient, readConversation, sendMessage, waitForReply } from '../../client/api';
import type { Connected } from '../../client/connect';
import { startOpenAIServer, type OpenAIServer, type OpenAIStep } from '../../testing/openai-server';
import type { RecordedRequest } from '../../testing/http-script';
import { startHarness, type Harness } from '../helpers/run-harness';
import { TEST_ADDRESS_ENV, TEST_NAMESPACE } from '../helpers/temporal-env';
import { agentctl, cliEnv } from '../client/cli-helpers';
import { burst, followHints, timesSeen } from '../../bench/burst-core';
import { runResult } from '../helpers/run-result';

const KEY_ENV = 'CONVERSATION_HONEST_KEY';
const PLANNER = { kind: 'openai', model: 'gpt-4o-mini', maxTokens: 256, endpoint: 'conv-honest' } as const;

type Message = { role: string; content?: unknown };
const messagesOf = (req: RecordedRequest): Message[] => (req.body as { messages?: Message[] }).messages ?? [];
const text = (m: Message | undefined): string => (typeof m?.content === 'string' ? m.content : '');
const call = (name: string, args: unknown): OpenAIStep => ({
  tool_calls: [{ name, arguments: JSON.stringify(args) }],
});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Asks first; WRAP-UP → a slow lookup, then complete_task; CLOSE-TICKET → the slow finishing
 * tool close_ticket; the finishing call answered `person_wrote` → complete_task again; else "ok".
 */
function agent(_i: number, req: RecordedRequest): OpenAIStep {
  const msgs = messagesOf(req);
  const last = msgs[msgs.length - 1];
  const said = text(last);
  if (msgs.filter((m) => m.role !== 'system').length === 1)
    return call('ask_human', { question: 'How can I help?' });
  if (last?.role === 'tool' && said.includes('person_wrote'))
    return call('complete_task', { summary: 'finished after reading the late message' });
  if (last?.role === 'tool' && said.includes('looked_up'))
    return call('complete_task', { summary: 'wrapped up' });
  if (said.includes('WRAP-UP')) return call('slow_lookup', {});
  if (said.includes('CLOSE-TICKET')) return call('close_ticket', {});
  return { content: `ok (${msgs.length})` };
}

/** Every user and tool text of every request the server got (what reached the model). */
const modelText = (server: OpenAIServer): string =>
  server.requests
    .map((r) =>
      messagesOf(r)
        .filter((m) => m.role === 'user' || m.role === 'tool')
        .map(text)
        .join('\n'),
    )
    .join('\n');
/** The user and tool texts of the server's last request (the whole conversation so far). */
const lastRequestText = (server: OpenAIServer): string =>
  messagesOf(server.requests[server.requests.length - 1]!)
    .filter((m) => m.role === 'user' || m.role === 'tool')
    .map(text)
    .join('\n');
const occurrences = (hay: string, needle: string) => hay.split(needle).length - 1;

/** A tool call the test holds open: `running` resolves when it starts, `release()` lets it end. */
function holdable() {
  let started!: () => void;
  let release!: () => void;
  const state = {
    running: new Promise<void>((r) => (started = r)),
    released: new Promise<void>((r) => (release = r)),
  };
  return { state, started: () => started(), release: () => release() };
}

describe('what the person is told is true (issue 41)', () => {
  let h: Harness;
  let client: Client;
  let server: OpenAIServer;
  let burstServer: OpenAIServer;
  let hold = holdable();

  const slowLookup = defineTool({
    name: 'slow_lookup',
    description: 'Look something up (slow).',
    effect: 'read',
    schema: z.object({}).strict(),
    async execute() {
      hold.started();
      await hold.state.released;
      return { data: { looked_up: true } };
    },
  });
  const closeTicket = defineTool({
    name: 'close_ticket',
    description: 'Close the ticket: ends the conversation (slow).',
    effect: 'read',
    schema: z.object({}).strict(),
    async execute() {
      hold.started();
      await hold.state.released;
      return { data: { summary: 'ticket closed' }, terminal: true };
    },
  });

  beforeAll(async () => {
    process.env[KEY_ENV] = 'sk-test-conversation-honest';
    server = await startOpenAIServer(agent);
    burstServer = await startOpenAIServer(agent);
    process.env.AGENT_MODEL_ENDPOINTS = JSON.stringify({
      'conv-honest': { provider: 'openai', baseURL: server.baseURL, apiKeyEnv: KEY_ENV },
      'conv-burst': { provider: 'openai', baseURL: burstServer.baseURL, apiKeyEnv: KEY_ENV },
    });
    h = await startHarness({ tools: [slowLookup, closeTicket] });
    client = h.env.client;
  });
  afterAll(async () => {
    hold.release();
    await h?.close();
    await server?.close();
    await burstServer?.close();
    delete process.env[KEY_ENV];
    delete process.env.AGENT_MODEL_ENDPOINTS;
  });

  it('a message queued while the agent works reaches the model before complete_task runs, once', async () => {
    hold = holdable();
    const run = await h.start({ goal: 'help the person', planner: PLANNER, conversation: {} });
    const id = run.workflowId;
    await waitForReply(client, id, { timeoutMs: 60_000 });
    await expect(sendMessage(client, id, 'WRAP-UP please')).resolves.toMatchObject({ action: 'answer' });
    await hold.state.running;
    const late = await sendMessage(client, id, 'LATE-ONE: and the invoice too');
    expect(late).toMatchObject({ accepted: true, action: 'queued', position: 1 });
    expect(late.reason).toContain('slow_lookup is running');
    expect(late.reason).toContain('before it calls complete_task');
    hold.release();

    const result: RunResult = await runResult(run);
    expect(result).toMatchObject({
      terminal_state: 'COMPLETED',
      summary: 'finished after reading the late message',
    });
    // The first complete_task did not run: the person's message went to the model first, once.
    expect(await h.counters(id)).toEqual({ slow_lookup: 1, complete_task: 1 });
    expect(occurrences(modelText(server), 'LATE-ONE')).toBeGreaterThan(0);
    expect(occurrences(lastRequestText(server), 'LATE-ONE')).toBe(1);
    const view = await readConversation(client, id);
    expect(view).toMatchObject({ open: false, queued: 0, notRead: 0, ended: { as: 'COMPLETED' } });
    expect(view.entries.find((e) => e.text.includes('LATE-ONE'))).toMatchObject({ delivery: 'read' });
    expect(view.entries[view.entries.length - 1]).toMatchObject({
      from: 'agent',
      kind: 'end',
      text: 'the conversation ended: run COMPLETED',
    });
  }, 120_000);

  it('messages sent while a finishing tool runs: no promised read, never read, and said so afterwards', async () => {
    hold = holdable();
    const run = await h.start({ goal: 'help the person', planner: PLANNER, conversation: {} });
    const id = run.workflowId;
    await waitForReply(client, id, { timeoutMs: 60_000 });
    await expect(sendMessage(client, id, 'CLOSE-TICKET now')).resolves.toMatchObject({ action: 'answer' });
    await hold.state.running;
    const a = await sendMessage(client, id, 'LATE-TWO: wait');
    const b = await sendMessage(client, id, 'LATE-THREE: one more thing');
    for (const sent of [a, b]) {
      expect(sent).toMatchObject({ accepted: true, action: 'queued' });
      expect(sent.reason).toContain('close_ticket is running');
      expect(sent.reason).toContain('if the run ends first, replies and status show it not read');
    }
    const requestsBefore = server.requests.length;
    hold.release();
    const result: RunResult = await runResult(run);
    expect(result).toMatchObject({ terminal_state: 'COMPLETED', summary: 'ticket closed' });
    // Counted in what reached the model: neither message, in any request.
    expect(server.requests.length).toBe(requestsBefore);
    expect(occurrences(modelText(server), 'LATE-TWO')).toBe(0);
    expect(occurrences(modelText(server), 'LATE-THREE')).toBe(0);

    const view = await readConversation(client, id);
    expect(view).toMatchObject({
      open: false,
      queued: 0,
      notRead: 2,
      ended: { state: 'COMPLETED', reason: null },
    });
    const states = view.entries
      .filter((e) => e.from === 'person')
      .map((e) => [e.text.slice(0, 10), e.delivery]);
    expect(states).toEqual([
      ['CLOSE-TICK', 'read'],
      ['LATE-TWO: ', 'not_read'],
      ['LATE-THREE', 'not_read'],
    ]);
    const end = view.entries[view.entries.length - 1]!;
    expect(end.text).toBe(
      `the conversation ended: run COMPLETED (2 message(s) of the person not read: #${a.seq}, #${b.seq})`,
    );
    const replies = await agentctl(['replies', id, '--all'], cliEnv(h));
    expect(replies.code).toBe(0);
    expect(replies.stdout).toContain(
      `#${a.seq} person message [not read: the run ended before the model read it]: LATE-TWO`,
    );
    expect(replies.stdout).toContain('agent end: the conversation ended: run COMPLETED (2 message(s)');
    const status = await agentctl(['status', id], cliEnv(h));
    expect(status.stdout).toContain('2 not read (the run ended before the model read them)');
    expect(status.stdout).toMatch(/waiting for person\s+no \(the conversation is closed \(run COMPLETED\)\)/);
    // A message now: refused in the run's words.
    await expect(sendMessage(client, id, 'hello?')).resolves.toMatchObject({
      accepted: false,
      action: 'refused',
      reason: 'the conversation is closed (run COMPLETED): start a new conversation',
    });
  }, 120_000);

  it("an idle and a closed conversation refuse in the run's own words (exact text)", async () => {
    const idle = await h.start({ goal: 'chat', planner: PLANNER, conversation: { idleTimeoutMs: 1000 } });
    const closing = await h.start({ goal: 'chat', planner: PLANNER, conversation: {} });
    await waitForReply(client, closing.workflowId, { timeoutMs: 60_000 });
    await expect(sendMessage(client, closing.workflowId, 'bye', { close: true })).resolves.toMatchObject({
      action: 'closing',
    });
    await expect(runResult(idle)).resolves.toMatchObject({
      terminal_state: 'PARTIAL',
      reason: 'conversation_idle',
    });
    await expect(runResult(closing)).resolves.toMatchObject({
      terminal_state: 'PARTIAL',
      reason: 'conversation_closed',
    });
    for (const [run, reason] of [
      [idle, 'conversation_idle'],
      [closing, 'conversation_closed'],
    ] as const) {
      const refusal = `the conversation is closed (run PARTIAL ${reason}): start a new conversation`;
      await expect(sendMessage(client, run.workflowId, 'are you there?')).resolves.toMatchObject({
        accepted: false,
        action: 'refused',
        reason: refusal,
      });
      const cli = await agentctl(['send', run.workflowId, 'are you there?'], cliEnv(h));
      expect(cli.code).toBe(3);
      expect(cli.stderr.trim()).toBe(`agentctl: refused: ${refusal}`);
      const status = await agentctl(['status', run.workflowId], cliEnv(h));
      expect(status.stdout).toContain(`no (the conversation is closed (run PARTIAL ${reason}))`);
      expect(status.stdout).toMatch(new RegExp(`ended\\s+the person .*\\(PARTIAL ${reason}\\)`));
      const view = await readConversation(client, run.workflowId);
      expect(view.ended).toEqual({ state: 'PARTIAL', reason, as: `PARTIAL ${reason}` });
      expect(view.entries[view.entries.length - 1]!.text).toMatch(
        new RegExp(`^the conversation ended: run PARTIAL ${reason}: `),
      );
    }
  }, 120_000);

  it('a burst from several clients: every message answered, none thrown, none twice, none lost', async () => {
    const address = process.env[TEST_ADDRESS_ENV];
    if (!address) throw new Error(`${TEST_ADDRESS_ENV} is not set (jest globalSetup starts the dev server)`);
    const env = { ...process.env, TEMPORAL_ADDRESS: address, TEMPORAL_NAMESPACE: TEST_NAMESPACE };
    const CLIENTS = 10;
    const N = 150;
    const conns: Connected[] = [];
    try {
      for (let i = 0; i < CLIENTS; i++) conns.push(await connectClient(env));
      const run = await h.start({
        goal: 'chat',
        planner: { ...PLANNER, endpoint: 'conv-burst' },
        conversation: {},
        guard: { maxTokens: 10_000_000, maxCostUsd: 1000 },
      });
      const id = run.workflowId;
      await waitForReply(client, id, { timeoutMs: 60_000 });
      const { figures, outcomes, errors } = await burst(
        conns.map((c) => c.client),
        id,
        N,
        't',
      );
      console.log(`conversation burst test: ${JSON.stringify(figures)}`);
      expect(errors).toEqual([]);
      expect(figures).toMatchObject({ threw: 0, unconfirmed: 0, withoutReason: 0, refusedOther: 0 });
      expect(figures.answer + figures.queued + figures.refusedQueueFull + figures.refusedBusy).toBe(N);
      // A person told "busy, send it again in N s" does: same id, applied at most once.
      const clients = conns.map((c) => c.client);
      // Patience, not speed: how fast the server admits the resent ones is the bench's
      // (bench:burst); on a loaded 2-core CI machine it took longer than a minute.
      const followed = await followHints(clients, id, 't', outcomes, Date.now() + 150_000);
      expect(followed.stillBusy).toBe(0);
      const accepted = outcomes.filter((o) => o?.accepted);
      expect(accepted.length).toBeGreaterThan(0);
      // None applied twice: one transcript entry and one seq per accepted message.
      const seqs = new Set(accepted.map((o) => o!.seq));
      expect(seqs.size).toBe(accepted.length);
      // Each one again with its id: its first answer, nothing new taken.
      const again = await sendMessage(client, id, 'repeat', { messageId: accepted[0]!.messageId });
      expect(again.seq).toBe(accepted[0]!.seq);
      // None lost: once the agent turns to the person with nothing queued, each accepted one
      // reached the model exactly once (the last request holds the whole conversation).
      const deadline = Date.now() + 60_000;
      for (;;) {
        const v = await readConversation(client, id, { after: Number.MAX_SAFE_INTEGER });
        if (v.waiting && v.queued === 0 && v.received === accepted.length) break;
        if (Date.now() > deadline) throw new Error(`not settled: ${JSON.stringify(v)}`);
        await sleep(200);
      }
      await sleep(500);
      const seen = timesSeen(outcomes, 't', lastRequestText(burstServer));
      expect([...seen.values()].every((n) => n === 1)).toBe(true);
      expect(seen.size).toBe(accepted.length);
      // Refused ones never reached the model.
      const refused = outcomes.map((o, i) => (o?.accepted ? -1 : i)).filter((i) => i >= 0);
      const all = modelText(burstServer);
      expect(refused.filter((i) => new RegExp(`burst-t-${i}(?!\\d)`).test(all))).toEqual([]);
      await run.handle.terminate('test over');
    } finally {
      await Promise.all(conns.map((c) => c.close()));
    }
  }, 300_000);
});
