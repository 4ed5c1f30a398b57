/**
 * The user's agent as Temporal's samples write one: an `Agent` of `@openai/agents-core` whose
 * tools are activities (`activityAsTool`), run by `TemporalOpenAIRunner` (each model call an
 * activity), plus agent-loop-guard's few lines (marked "guard").
 */
import { Agent } from '@openai/agents-core';
import { activityAsTool, TemporalOpenAIRunner } from '@temporalio/openai-agents/workflow';
import { guardOpenAIAgent } from 'agent-loop-guard/openai-agents'; // guard

export async function paymentsAgent(input: { prompt: string; model: string }): Promise<unknown> {
  const agent = new Agent({
    name: 'Payments',
    instructions: 'Look orders up and pay them.',
    model: input.model,
    tools: [
      activityAsTool<(i: { orderId: string }) => Promise<unknown>>({
        name: 'lookup_order',
        description: 'Look an order up.',
        parameters: {
          type: 'object',
          properties: { orderId: { type: 'string' } },
          required: ['orderId'],
          additionalProperties: false,
        },
      }),
      activityAsTool<
        (i: { orderId: string; to: string; amount: number; requestId: string }) => Promise<unknown>
      >({
        name: 'pay',
        description: 'Pay an order.',
        parameters: {
          type: 'object',
          properties: {
            orderId: { type: 'string' },
            to: { type: 'string' },
            amount: { type: 'number' },
            requestId: { type: 'string' },
          },
          required: ['orderId', 'to', 'amount', 'requestId'],
          additionalProperties: false,
        },
      }),
    ],
  });
  // guard: every tool call passes the loop guard; a payment runs once per order, payee and amount.
  const guard = guardOpenAIAgent(agent, {
    reads: ['lookup_order'],
    writes: {
      pay: {
        operationKey: (i: { orderId: string; to: string; amount: number }) =>
          `pay:${i.orderId}:${i.to}:${i.amount}`,
        // In the approval scenarios each payment waits for a person's approval of its exact args.
        requiresApproval: input.model.startsWith('approval-'),
      },
    },
    args: { pay: { nonSemantic: ['requestId'] } }, // the model's own request id is not the operation
    writeActivity: { startToCloseTimeout: '3 seconds' }, // a killed worker's write is retried after this
    approvalWaitMs: 120_000, // then the run stops NEEDS_HUMAN approval_required
    // In the spend scenario each model call is charged to the tenant's cap on the worker
    // (AGENT_SPEND_LIMITS) before it is sent; a call the cap has no room for is not sent.
    ...(input.model.startsWith('spend-')
      ? { spend: { tenant: 'example-tenant' }, prices: { inputPerMillion: 2.5, outputPerMillion: 10 } }
      : {}),
  });
  guard.installHandlers(); // guard: agentctl status / report / stop / resume / approvals
  const result = await guard.run(new TemporalOpenAIRunner(), input.prompt); // guard
  const text = typeof result?.finalOutput === 'string' ? result.finalOutput : null;
  // guard: a COMPLETED run returns its result; any other end closes the workflow FAILED with the
  // RunResult in its failure (the Temporal UI's list shows no stopped run as a success).
  return { run: guard.end(text), executions: guard.executions };
}
