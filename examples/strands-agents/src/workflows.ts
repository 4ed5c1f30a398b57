/**
 * The user's agent as the integration's README writes one: a `TemporalAgent` (each model call an
 * activity of `StrandsPlugin`, the model chosen by its factory name) whose tools are activities
 * (`workflow.activityAsTool`), plus agent-loop-guard's few lines (marked "guard").
 */
import { TemporalAgent, workflow as strands } from '@temporalio/strands-agents';
import { z } from 'zod';
import { guardStrandsAgent } from 'agent-loop-guard/strands-agents'; // guard

export async function paymentsAgent(input: { prompt: string; model: string }): Promise<unknown> {
  const agent = new TemporalAgent({
    model: input.model, // a factory of the worker's StrandsPlugin
    activityOptions: { startToCloseTimeout: '60 seconds', retry: { maximumAttempts: 3 } },
    printer: false,
    tools: [
      strands.activityAsTool('lookup_order', {
        description: 'Look an order up.',
        inputSchema: z.object({ orderId: z.string() }),
        activityOptions: { startToCloseTimeout: '30 seconds' },
      }),
      strands.activityAsTool('pay', {
        description: 'Pay an order.',
        inputSchema: z.object({
          orderId: z.string(),
          to: z.string(),
          amount: z.number(),
          requestId: z.string(),
        }),
      }),
    ],
  });
  // guard: every tool call passes the loop guard; a payment runs once per order, payee and amount.
  const guard = guardStrandsAgent(agent, {
    reads: ['lookup_order'],
    writes: {
      pay: {
        operationKey: (i: { orderId: string; to: string; amount: number }) =>
          `pay:${i.orderId}:${i.to}:${i.amount}`,
        // In the approval scenario each payment waits for a person's approval of its exact args.
        requiresApproval: input.model.startsWith('approval-'),
      },
    },
    args: { pay: { nonSemantic: ['requestId'] } }, // the model's own request id is not the operation
    // A killed worker's write is retried after 3 s; a write that times out on both attempts goes
    // to the model as an error, and the ledger answers its re-planned twin.
    writeActivity: { startToCloseTimeout: '3 seconds', retry: { maximumAttempts: 2 } },
    approvalWaitMs: 120_000, // then the run stops NEEDS_HUMAN approval_required
  });
  guard.installHandlers(); // guard: agentctl status / report / trace / stop / resume / approvals
  let result = await guard.run(input.prompt); // guard
  // guard: after a stop (agentctl stop), wait for a verified agentctl resume and run on.
  if (guard.stopped && input.model.startsWith('stop-') && (await guard.untilResumed(120_000)))
    result = await guard.run([]);
  // guard: a COMPLETED run returns its result; any other end closes the workflow FAILED with the
  // RunResult in its failure (the Temporal UI's list shows no stopped run as a success).
  return { run: guard.end(result ? String(result) : null), executions: guard.executions };
}
