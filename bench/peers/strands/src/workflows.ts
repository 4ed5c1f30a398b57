/**
 * The measured workflows, written as the integration's README shows them: a TemporalAgent
 * (the plugin's model activity), tools wrapped with `workflow.activityAsTool`.
 */
import { condition, defineQuery, defineSignal, setHandler } from '@temporalio/workflow';
import { TemporalAgent, workflow as strands } from '@temporalio/strands-agents';
import { BeforeToolCallEvent, InterruptResponseContent } from '@strands-agents/sdk';
import { z } from 'zod';

export interface RunOptions {
  /** activityOptions of the pay tool (default: the README's `startToCloseTimeout: '30 seconds'`). */
  readonly payTimeout?: string;
  /** The README's retry setting on the tool's activity options. */
  readonly payMaxAttempts?: number;
  /** `limits: { turns }` on invoke (opt-in). */
  readonly turns?: number;
  /** The model activity's retry maximumAttempts (default: Temporal's, unlimited). */
  readonly modelMaxAttempts?: number;
}

const readDocTool = () =>
  strands.activityAsTool('readDoc', {
    description: 'Read a document by path',
    inputSchema: z.object({ path: z.string() }),
    activityOptions: { startToCloseTimeout: '30 seconds' },
  });

const payTool = (o: RunOptions) =>
  strands.activityAsTool('pay', {
    description: 'Pay an amount in cents to a payee',
    inputSchema: z.object({ to: z.string(), amountCents: z.number() }),
    activityOptions: {
      startToCloseTimeout: o.payTimeout ?? '30 seconds',
      ...(o.payMaxAttempts ? { retry: { maximumAttempts: o.payMaxAttempts } } : {}),
    },
  });

const agentOf = (o: RunOptions) =>
  new TemporalAgent({
    activityOptions: {
      startToCloseTimeout: '60 seconds',
      ...(o.modelMaxAttempts ? { retry: { maximumAttempts: o.modelMaxAttempts } } : {}),
    },
    tools: [readDocTool(), payTool(o)],
    printer: false,
  });

export interface Outcome {
  readonly stopReason: string;
  readonly text: string;
}

/** One invoke, as the README's quickstart; `turns` only when given. */
export async function agentWorkflow(prompt: string, o: RunOptions = {}): Promise<Outcome> {
  const agent = agentOf(o);
  const result = await agent.invoke(prompt, o.turns ? { limits: { turns: o.turns } } : undefined);
  return { stopReason: String(result.stopReason), text: String(result) };
}

export const approve = defineSignal<[Record<string, string>]>('approve');
export const pending = defineQuery<Array<{ id: string; name: string; reason: unknown }>>('pending');

/**
 * The README's human-in-the-loop pattern: a BeforeToolCallEvent hook raises an interrupt for
 * `pay`; the workflow waits for a signal with the responses (by interrupt id) and resumes.
 */
export async function approvalWorkflow(
  prompt: string,
  o: RunOptions = {},
): Promise<Outcome & { interrupts: number[] }> {
  const agent = agentOf(o);
  agent.addHook(BeforeToolCallEvent, (event) => {
    if (event.toolUse.name !== 'pay') return;
    const answer = event.interrupt<string>({ name: 'approve-payment', reason: event.toolUse.input as never });
    if (answer !== 'yes') event.cancel = 'payment not approved';
  });
  let open: Array<{ id: string; name: string; reason: unknown }> = [];
  let responses: Record<string, string> | undefined;
  setHandler(pending, () => open);
  setHandler(approve, (r) => void (responses = r));
  const counts: number[] = [];
  let result = await agent.invoke(prompt);
  while (result.stopReason === 'interrupt') {
    open = (result.interrupts ?? []).map((i) => ({ id: i.id, name: i.name, reason: i.reason }));
    counts.push(open.length);
    responses = undefined;
    await condition(() => responses !== undefined);
    const reply = Object.entries(responses!).map(
      ([interruptId, response]) => new InterruptResponseContent({ interruptId, response }),
    );
    open = [];
    result = await agent.invoke(reply as never);
  }
  return { stopReason: String(result.stopReason), text: String(result), interrupts: counts };
}
