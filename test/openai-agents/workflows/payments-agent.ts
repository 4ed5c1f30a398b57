/**
 * A user's agent on `@temporalio/openai-agents` as Temporal's samples write one (an `Agent` of
 * `@openai/agents-core` with `activityAsTool` tools, run by `TemporalOpenAIRunner`), plus the
 * guard's few lines (marked "guard"). Workflow code, bundled with `OpenAIAgentsPlugin`.
 */
import { Agent, RunState, tool } from '@openai/agents-core';
import { activityAsTool, TemporalOpenAIRunner } from '@temporalio/openai-agents/workflow';
import { continueAsNew, proxyActivities } from '@temporalio/workflow';
import type { Checkpoint } from '../../../common/contracts';
import { guardOpenAIAgent } from '../../../openai-agents'; // guard

export interface PaymentsAgentInput {
  readonly prompt: string;
  /** The SDK's max turns (default 10). */
  readonly maxTurns?: number;
  /** `pay` waits for a signed approval of each exact call. */
  readonly approval?: boolean;
  /** How long a gated call waits for its approval. */
  readonly approvalWaitMs?: number;
  /** The write activity's attempts (each given 1 s). */
  readonly payAttempts?: number;
  /** The guard's token budget. */
  readonly tokenBudget?: number;
  /** `transfer` is a `tool()` whose own `needsApproval` is true (the SDK's approval flow). */
  readonly sdkApproval?: boolean;
  /** Declare a tool the agent does not have (bad input). */
  readonly declareUnknown?: boolean;
  /** After a guard stop, wait for a verified `agentctl resume` and run on with the history. */
  readonly resumeAfterStop?: boolean;
  /** Guard the already guarded agent again (bad input). */
  readonly doubleGuard?: boolean;
  /** `pay`'s operation key names the order and payee only (so another amount is the same key). */
  readonly keyByOrder?: boolean;
  /** The tenant whose spend limit each model call is charged to ($10 per million tokens). */
  readonly spendTenant?: string;
  /**
   * At each SDK interruption, continue as new with the SDK's run state (as a string), the
   * guard's checkpoint and the approvals so far; the next run approves and goes on.
   */
  readonly continueAtInterruption?: boolean;
  /** Set by that continue-as-new: the SDK's run state, the guard's checkpoint, the approvals. */
  readonly carried?: { state: string; checkpoint: Checkpoint; sdkApprovals: string[] };
  /** Upsert AgentState / AgentGuardReason / AgentSteps. */
  readonly searchAttributes?: boolean;
}

const { transfer } = proxyActivities<{ transfer(i: { to: string; amount: number }): Promise<string> }>({
  startToCloseTimeout: '10 seconds',
});

const orderSchema = {
  type: 'object' as const,
  properties: { orderId: { type: 'string' } },
  required: ['orderId'],
  additionalProperties: false,
};

export async function paymentsAgent(input: PaymentsAgentInput): Promise<unknown> {
  const tools = [
    activityAsTool<(i: { orderId: string }) => Promise<unknown>>({
      name: 'lookup_order',
      description: 'Look an order up.',
      parameters: orderSchema,
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
  ];
  if (input.sdkApproval)
    tools.push(
      tool({
        name: 'transfer',
        description: 'Transfer money.',
        parameters: {
          type: 'object',
          properties: { to: { type: 'string' }, amount: { type: 'number' } },
          required: ['to', 'amount'],
          additionalProperties: false,
        },
        needsApproval: true,
        execute: async (args) => transfer(args as { to: string; amount: number }),
      }),
    );
  const agent = new Agent({
    name: 'Payments',
    instructions: 'Look orders up and pay them.',
    model: 'test-model',
    tools,
  });
  // guard: every tool call passes the loop guard; a payment runs once per order.
  const guard = guardOpenAIAgent(agent, {
    reads: ['lookup_order', ...(input.declareUnknown ? ['refund'] : [])],
    writes: {
      pay: {
        operationKey: (i: { orderId: string; to: string; amount: number }) =>
          input.keyByOrder ? `pay:${i.orderId}:${i.to}` : `pay:${i.orderId}:${i.to}:${i.amount}`,
        ...(input.approval ? { requiresApproval: true } : {}),
      },
      ...(input.sdkApproval
        ? {
            transfer: {
              activity: 'transfer',
              operationKey: (i: { to: string; amount: number }) => `transfer:${i.to}:${i.amount}`,
            },
          }
        : {}),
    },
    // The request id is the model's own: a re-sent payment with a new one is the same call.
    args: { pay: { nonSemantic: ['requestId'] } },
    writeActivity: {
      startToCloseTimeout: '1 second',
      retry: { maximumAttempts: input.payAttempts ?? 3, initialInterval: '100 milliseconds' },
    },
    guard: { noProgressLimit: 6, ...(input.tokenBudget ? { maxTokens: input.tokenBudget } : {}) },
    ...(input.approvalWaitMs ? { approvalWaitMs: input.approvalWaitMs } : {}),
    ...(input.searchAttributes ? { searchAttributes: true } : {}),
    ...(input.carried ? { checkpoint: input.carried.checkpoint } : {}),
    ...(input.spendTenant
      ? {
          spend: { tenant: input.spendTenant, maxOutputTokens: 100 },
          prices: { inputPerMillion: 10, outputPerMillion: 10 },
        }
      : {}),
  });
  if (input.doubleGuard) guardOpenAIAgent(guard.agent, { reads: ['lookup_order'] });
  guard.installHandlers(); // guard: agentctl status / report / stop / resume / approve
  const runner = new TemporalOpenAIRunner();
  // The SDK's own approval flow (its README's pattern): approve what it asks, run on.
  const sdkApprovals: string[] = [...(input.carried?.sdkApprovals ?? [])];
  const approveAll = (state: RunState<unknown, never>) => {
    for (const item of state.getInterruptions()) {
      sdkApprovals.push(String((item.rawItem as { arguments?: string }).arguments));
      state.approve(item);
    }
    return state;
  };
  let result = input.carried
    ? await guard.run(
        runner,
        approveAll((await RunState.fromString(guard.agent, input.carried.state)) as RunState<unknown, never>),
      )
    : await guard.run(runner, input.prompt, { maxTurns: input.maxTurns ?? 10 }); // guard
  for (let i = 0; result && result.interruptions.length > 0 && i < 3; i++) {
    if (input.continueAtInterruption)
      return continueAsNew<typeof paymentsAgent>({
        ...input,
        carried: { state: result.state.toString(), checkpoint: guard.checkpoint(), sdkApprovals },
      });
    result = await guard.run(runner, await approveAll(result.state));
  }
  // After a guard stop: wait for a verified resume, then run on with the conversation so far.
  if (input.resumeAfterStop && result && guard.stopped && (await guard.untilResumed(60_000)))
    result = await guard.run(runner, result.history);
  const text = typeof result?.finalOutput === 'string' ? result.finalOutput : null;
  return { run: guard.result(text), executions: guard.executions, sdkApprovals }; // guard
}

/** A front agent that hands off to a billing agent with the payment tool: one run, one guard. */
export async function handoffAgent(input: { prompt: string }): Promise<unknown> {
  const billing = new Agent({
    name: 'Billing',
    instructions: 'Pay orders.',
    model: 'test-model',
    tools: [
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
  const front = new Agent({
    name: 'Front',
    instructions: 'Look orders up; hand payments to Billing.',
    model: 'test-model',
    tools: [
      activityAsTool({ name: 'lookup_order', description: 'Look an order up.', parameters: orderSchema }),
    ],
    handoffs: [billing],
  });
  const guard = guardOpenAIAgent(front, {
    reads: ['lookup_order'],
    writes: { pay: { operationKey: (i: { orderId: string }) => `pay:${i.orderId}` } },
    args: { pay: { nonSemantic: ['requestId'] } },
  });
  guard.installHandlers();
  const result = await guard.run(new TemporalOpenAIRunner(), input.prompt);
  return {
    run: guard.result(typeof result?.finalOutput === 'string' ? result.finalOutput : null),
    executions: guard.executions,
    lastAgent: (result?.lastAgent as { name?: string } | undefined)?.name ?? null,
  };
}
