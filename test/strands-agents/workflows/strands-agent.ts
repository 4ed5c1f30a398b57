/**
 * A user's agent on `@temporalio/strands-agents` as the integration's README writes one (a
 * `TemporalAgent` whose model is the plugin's activity, tools by `workflow.activityAsTool`),
 * plus the guard's few lines (marked "guard"). Workflow code, bundled with `StrandsPlugin`.
 */
import { TemporalAgent, workflow as strands } from '@temporalio/strands-agents';
import { z } from 'zod';
import { guardStrandsAgent } from '../../../strands-agents'; // guard

export interface StrandsAgentInput {
  readonly prompt: string;
  /** The SDK's own opt-in turn limit (`limits: { turns }` on invoke). */
  readonly turns?: number;
  /** `pay` waits for a signed approval of each exact call. */
  readonly approval?: boolean;
  /** The write activity's attempts (each given 1 s). */
  readonly payAttempts?: number;
  /** The guard's token budget. */
  readonly tokenBudget?: number;
  /** Upsert AgentState / AgentGuardReason / AgentSteps. */
  readonly searchAttributes?: boolean;
  /** After a guard stop, wait for a verified `agentctl resume` and run on with the conversation. */
  readonly resumeAfterStop?: boolean;
  /** The tenant whose spend limit each model call is charged to ($10 per million tokens). */
  readonly spendTenant?: string;
  /** The model activity's attempts (default 3). */
  readonly modelAttempts?: number;
  /** Bad input: declare a tool the agent does not have / guard twice / a write without a key / a tool without a schema. */
  readonly bad?: 'unknown' | 'twice' | 'no_key' | 'no_schema';
}

type PayInput = { orderId: string; to: string; amount: number; requestId: string };

export async function strandsAgent(input: StrandsAgentInput): Promise<unknown> {
  const agent = new TemporalAgent({
    model: 'openai',
    activityOptions: {
      startToCloseTimeout: '30 seconds',
      retry: { maximumAttempts: input.modelAttempts ?? 3, initialInterval: '100 milliseconds' },
    },
    printer: false,
    tools: [
      strands.activityAsTool('lookup_order', {
        description: 'Look an order up.',
        inputSchema: z.object({ orderId: z.string() }),
        activityOptions: { startToCloseTimeout: '30 seconds' },
      }),
      strands.activityAsTool('pay', {
        description: 'Pay an order.',
        ...(input.bad === 'no_schema'
          ? {}
          : {
              inputSchema: z.object({
                orderId: z.string(),
                to: z.string(),
                amount: z.number(),
                requestId: z.string(),
              }),
            }),
      }),
    ],
  });
  // guard: every tool call passes the loop guard; a payment runs once per order and payee.
  const guard = guardStrandsAgent(agent, {
    reads: ['lookup_order', ...(input.bad === 'unknown' ? ['refund'] : [])],
    writes: {
      pay: {
        operationKey:
          input.bad === 'no_key'
            ? (undefined as never)
            : (i: PayInput) => `pay:${i.orderId}:${i.to}:${i.amount}`,
        ...(input.approval ? { requiresApproval: true } : {}),
      },
    },
    // The request id is the model's own: a re-sent payment with a new one is the same call.
    args: { pay: { nonSemantic: ['requestId'] } },
    writeActivity: {
      startToCloseTimeout: '1 second',
      retry: { maximumAttempts: input.payAttempts ?? 3, initialInterval: '100 milliseconds' },
    },
    guard: { noProgressLimit: 6, ...(input.tokenBudget ? { maxTokens: input.tokenBudget } : {}) },
    ...(input.searchAttributes ? { searchAttributes: true } : {}),
    ...(input.spendTenant
      ? {
          spend: { tenant: input.spendTenant, maxOutputTokens: 100 },
          prices: { inputPerMillion: 10, outputPerMillion: 10 },
        }
      : {}),
  });
  if (input.bad === 'twice') guardStrandsAgent(agent, { reads: ['lookup_order'] });
  guard.installHandlers(); // guard: agentctl status / report / trace / stop / resume / approvals
  let result = await guard.run(input.prompt, input.turns ? { limits: { turns: input.turns } } : undefined);
  // After a guard stop: wait for a verified resume, then run on with the conversation so far.
  if (input.resumeAfterStop && guard.stopped && (await guard.untilResumed(60_000)))
    result = await guard.run([]);
  return {
    run: guard.result(result ? String(result) : null),
    executions: guard.executions,
    stopReason: result?.stopReason ?? null,
  };
}
