/**
 * Issue 41, for a renamed finishing tool (`finishingTool({ name: 'done' })`, issue 38): a
 * message queued while the agent works reaches the model before `done` runs, as it does before
 * `complete_task` (test/conversation/honest-answers.test.ts). The conversation holds back the
 * finishing tool the worker offers, which the plan activity names (PlanOutput `finishing`).
 * Against the dev server and a local Chat Completions server, counting what reached the model.
 */
import { z } from 'zod';
import type { RunResult } from '../../common/contracts';
import { defineTool } from '../../tools/define-tool';
import { finishingTool } from '../../tools/finish';
import { readConversation, sendMessage, waitForReply } from '../../client/api';
import { startOpenAIServer, type OpenAIServer, type OpenAIStep } from '../../testing/openai-server';
import type { RecordedRequest } from '../../testing/http-script';
import { startHarness, type Harness } from '../helpers/run-harness';
import { runResult } from '../helpers/run-result';

const KEY_ENV = 'CONVERSATION_RENAMED_FINISH_KEY';
const PLANNER = { kind: 'openai', model: 'gpt-4o-mini', maxTokens: 256, endpoint: 'conv-done' } as const;

type Message = { role: string; content?: unknown };
const messagesOf = (req: RecordedRequest): Message[] => (req.body as { messages?: Message[] }).messages ?? [];
const text = (m: Message | undefined): string => (typeof m?.content === 'string' ? m.content : '');
const call = (name: string, args: unknown): OpenAIStep => ({
  tool_calls: [{ name, arguments: JSON.stringify(args) }],
});

/** Asks first; WRAP-UP → a slow lookup, then `done`; `done` answered `person_wrote` → `done` again. */
function agent(_i: number, req: RecordedRequest): OpenAIStep {
  const msgs = messagesOf(req);
  const last = msgs[msgs.length - 1];
  const said = text(last);
  if (msgs.filter((m) => m.role !== 'system').length === 1)
    return call('ask_human', { question: 'How can I help?' });
  if (last?.role === 'tool' && said.includes('person_wrote'))
    return call('done', { summary: 'finished after reading the late message' });
  if (last?.role === 'tool' && said.includes('looked_up')) return call('done', { summary: 'wrapped up' });
  if (said.includes('WRAP-UP')) return call('slow_lookup', {});
  return { content: `ok (${msgs.length})` };
}

/** The tool messages of every request the server got, in order (what the model read as results). */
const toolTexts = (server: OpenAIServer): string[] =>
  server.requests.flatMap((r) =>
    messagesOf(r)
      .filter((m) => m.role === 'tool')
      .map(text),
  );

describe('a renamed finishing tool is held back while the person wrote (issue 41)', () => {
  let h: Harness;
  let server: OpenAIServer;
  let started!: () => void;
  let release!: () => void;
  const running = new Promise<void>((r) => (started = r));
  const released = new Promise<void>((r) => (release = r));

  const slowLookup = defineTool({
    name: 'slow_lookup',
    description: 'Look something up (slow).',
    effect: 'read',
    schema: z.object({}).strict(),
    async execute() {
      started();
      await released;
      return { data: { looked_up: true } };
    },
  });

  beforeAll(async () => {
    process.env[KEY_ENV] = 'sk-test-conversation-renamed-finish';
    server = await startOpenAIServer(agent);
    process.env.AGENT_MODEL_ENDPOINTS = JSON.stringify({
      'conv-done': { provider: 'openai', baseURL: server.baseURL, apiKeyEnv: KEY_ENV },
    });
    h = await startHarness({ tools: [slowLookup], finishingTool: finishingTool({ name: 'done' }) });
  });
  afterAll(async () => {
    release();
    await h?.close();
    await server?.close();
    delete process.env[KEY_ENV];
    delete process.env.AGENT_MODEL_ENDPOINTS;
  });

  it('a message queued while the agent works reaches the model before done runs; done runs once', async () => {
    const client = h.env.client;
    const run = await h.start({ goal: 'help the person', planner: PLANNER, conversation: {} });
    const id = run.workflowId;
    await waitForReply(client, id, { timeoutMs: 60_000 });
    await expect(sendMessage(client, id, 'WRAP-UP please')).resolves.toMatchObject({ action: 'answer' });
    await running;
    const late = await sendMessage(client, id, 'LATE-DONE: and the invoice too');
    expect(late).toMatchObject({ accepted: true, action: 'queued', position: 1 });
    // The answer names the worker's own finishing tool, not complete_task.
    expect(late.reason).toContain('slow_lookup is running');
    expect(late.reason).toContain('before it calls done');
    release();

    const result: RunResult = await runResult(run);
    expect(result).toMatchObject({
      terminal_state: 'COMPLETED',
      summary: 'finished after reading the late message',
    });
    // The first `done` did not run: the person's message was its result, read by the model once.
    expect(await h.counters(id)).toEqual({ slow_lookup: 1, done: 1 });
    const held = toolTexts(server).filter((t) => t.includes('person_wrote'));
    expect(held).toHaveLength(1);
    expect(held[0]).toContain('LATE-DONE');
    expect(held[0]).toContain('then call done again');
    const view = await readConversation(client, id);
    expect(view).toMatchObject({ open: false, queued: 0, notRead: 0, ended: { as: 'COMPLETED' } });
    expect(view.entries.find((e) => e.text.includes('LATE-DONE'))).toMatchObject({ delivery: 'read' });
  }, 120_000);
});
