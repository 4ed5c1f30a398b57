/**
 * `agent-loop-guard/testing` as an app uses it: its own two tools (a read, a write) that count
 * their executions themselves, a scripted model, the shared dev server (TEMPORAL_TEST_ADDRESS,
 * which startAgentTest reads as an app's CI would). A loop stopped with the read's counter
 * unmoved, a write proposed twice and run once, a refused then an accepted resume, and a tool
 * that is not a defineTool refused before anything starts.
 */
import { z } from 'zod';
import { defineTool } from '../../tools/define-tool';
import { startAgentTest, type AgentTest, type ChatMessage } from '../../testing';
import '../helpers/temporal-env';

/** The app's tools; `calls` is their own count, beside the runtime's counters. */
function bank() {
  const calls = { get_balance: 0, send_email: 0 };
  const balances: Record<string, number> = { 'acc-1': 12_345 };
  const getBalance = defineTool({
    name: 'get_balance',
    description: 'The balance of an account, in cents.',
    effect: 'read',
    schema: z.object({ account: z.string().min(1) }).strict(),
    execute: (a) => {
      calls.get_balance += 1;
      return { data: { account: a.account, cents: balances[a.account] ?? 0 } };
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
  return { calls, balances, tools: [getBalance, sendEmail] };
}

const toolResults = (messages: readonly ChatMessage[]) =>
  messages.filter((m) => m.role === 'tool').map((m) => String(m.content));

describe('agent-loop-guard/testing: startAgentTest', () => {
  const app = bank();
  let agent: AgentTest;
  beforeAll(async () => {
    agent = await startAgentTest({ tools: app.tools });
  });
  afterAll(async () => {
    await agent?.close();
  });

  it('runs a model by turns to COMPLETED; a write proposed twice runs once', async () => {
    const before = app.calls.send_email;
    const end = await agent.run({
      goal: 'Email ann the balance of acc-1.',
      model: [
        { tool: 'get_balance', args: { account: 'acc-1' } },
        { tool: 'send_email', args: { to: 'ann@example.com', body: '12345' } },
        { tool: 'send_email', args: { to: 'ann@example.com', body: '12345' } },
        { tool: 'complete_task', args: { summary: 'emailed ann' } },
      ],
    });
    expect([end.terminalState, end.reason, end.summary, end.closed]).toEqual([
      'COMPLETED',
      null,
      'emailed ann',
      true,
    ]);
    expect(end.counters).toEqual({ get_balance: 1, send_email: 1, complete_task: 1 });
    expect(app.calls.send_email - before).toBe(1);
    // The model was asked four times, each time offered the app's tools and complete_task.
    expect(end.model.turns).toBe(4);
    expect(end.model.offeredTools()[0]?.sort()).toEqual(['complete_task', 'get_balance', 'send_email']);
  });

  it('stops a model stuck on a read (same_call_repeat) with the read counter unmoved by the refused call; a resume once the balance moved completes', async () => {
    // A function of the conversation: read until the new balance shows, then finish.
    const model = (messages: readonly ChatMessage[]) =>
      toolResults(messages).some((r) => r.includes('"cents":999'))
        ? { tool: 'complete_task', args: { summary: 'saw 999' } }
        : { tool: 'get_balance', args: { account: 'acc-1' } };
    app.balances['acc-1'] = 12_345;
    const readsBefore = app.calls.get_balance;
    const stopped = await agent.run({ goal: 'Watch acc-1.', model });
    expect([stopped.terminalState, stopped.reason, stopped.closed]).toEqual([
      'STOPPED_LOOP_GUARD',
      'same_call_repeat',
      false,
    ]);
    expect(stopped.report?.blocked_call?.tool).toBe('get_balance');
    // Run twice; every later proposal was refused before it ran (steered back to the model,
    // then the stop): the model was asked more often than the read ran.
    expect(stopped.counters.get_balance).toBe(2);
    expect(app.calls.get_balance - readsBefore).toBe(2);
    expect(stopped.model.turns).toBeGreaterThan(3);

    // Nothing changed: the resume is refused and the run stays stopped.
    const refused = await agent.resume(stopped.workflowId, { reason: 'try again' });
    expect(refused.resume.accepted).toBe(false);
    expect(refused.end).toBeNull();

    // The balance moves: the resume is verified and accepted, the model sees 999 and finishes.
    app.balances['acc-1'] = 999;
    const resumed = await agent.resume(stopped.workflowId, { reason: 'the balance moved' });
    expect(resumed.resume.accepted).toBe(true);
    expect([resumed.end?.terminalState, resumed.end?.summary]).toEqual(['COMPLETED', 'saw 999']);
    expect(await agent.counters(stopped.workflowId)).toMatchObject({ complete_task: 1 });
  });

  it('a script that runs out stops the run NEEDS_HUMAN planner_failed, naming the missing turn', async () => {
    const end = await agent.run({
      goal: 'Read acc-1.',
      model: [{ tool: 'get_balance', args: { account: 'acc-1' } }],
    });
    expect([end.terminalState, end.reason]).toEqual(['NEEDS_HUMAN', 'planner_failed']);
    expect(JSON.stringify(end.outcome)).toMatch(/the script has 1 turns and the model was asked for turn 2/);
    expect(end.counters).toEqual({ get_balance: 1 });
  });
});

describe('agent-loop-guard/testing: bad input', () => {
  it('refuses a tool that is not a defineTool tool, naming it, before anything starts', async () => {
    const { tools, calls } = bank();
    const aiSdkTool = { description: 'x', inputSchema: {}, execute: () => 1 };
    const noExecute = { name: 'lookup', effect: 'read', schema: z.object({}) };
    const writeWithoutKey = { ...tools[1]!, operationKey: undefined };
    // An unreachable server: had anything been started, the error would be a connection error.
    const started = startAgentTest({
      tools: [tools[0]!, aiSdkTool, noExecute, writeWithoutKey] as never,
      address: '127.0.0.1:1',
    });
    await expect(started).rejects.toThrow(TypeError);
    await expect(started).rejects.toThrow(
      /tools\[1\] is not a tool made with defineTool\(\): it has no name; tools\[2\] is not a tool made with defineTool\(\): it \("lookup"\) has no execute function; tools\[3\] is not a tool made with defineTool\(\): defineTool\(send_email\): a write tool needs operationKey.*nothing was started/,
    );
    await expect(startAgentTest({ tools: 'get_balance' as never, address: '127.0.0.1:1' })).rejects.toThrow(
      /`tools` must be a list of tools made with defineTool\(\)/,
    );
    expect(calls).toEqual({ get_balance: 0, send_email: 0 });
  });

  it('says how to get a Temporal CLI when the one named is not there (nothing downloaded)', async () => {
    const { tools } = bank();
    const saved = process.env.TEMPORAL_TEST_ADDRESS;
    delete process.env.TEMPORAL_TEST_ADDRESS;
    try {
      await expect(startAgentTest({ tools, temporalCli: '/nonexistent/temporal' })).rejects.toThrow(
        /temporalCli \/nonexistent\/temporal is not a file/,
      );
    } finally {
      process.env.TEMPORAL_TEST_ADDRESS = saved;
    }
  });
});
