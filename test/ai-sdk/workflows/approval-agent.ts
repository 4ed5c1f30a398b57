/**
 * A user's `@temporalio/ai-sdk` agent whose write needs a person's signed approval, with the
 * guard's handlers installed (test/ai-sdk/approvals.test.ts, resume.test.ts): `generateText`
 * in the loop a user writes to go on after a verified `agentctl resume` (docs/ai-sdk.md).
 * Workflow code, bundled with `AiSdkPlugin`.
 */
import { temporalProvider } from '@temporalio/ai-sdk/workflow';
import { proxyActivities } from '@temporalio/workflow';
import { generateText, stepCountIs, tool, type ModelMessage } from 'ai';
import { z } from 'zod';
import { guardAgent } from '../../../ai-sdk';

const { searchTickets } = proxyActivities<{ searchTickets(query: string): Promise<string[]> }>({
  startToCloseTimeout: '10 seconds',
});

export interface ApprovalAgentInput {
  readonly prompt: string;
  /** How long a gated call waits for its approval. */
  readonly approvalWaitMs?: number;
  /** The guard's token budget. */
  readonly tokenBudget?: number;
  /** How many times the loop may go on after a verified resume (0: end at the first stop). */
  readonly resumes?: number;
  /** How long the loop waits for a resume after a stop (default 60 s). */
  readonly resumeWaitMs?: number;
  /** Charge this tenant's spend limit, at $10 per million tokens, with up to 2000 output tokens a call. */
  readonly tenant?: string;
  /** Upsert AgentState / AgentGuardReason / AgentSteps (so `agentctl approvals list` finds the run). */
  readonly searchAttributes?: boolean;
}

export async function approvalAgent(input: ApprovalAgentInput): Promise<unknown> {
  const tools = {
    search_tickets: tool({
      description: 'Search the tickets.',
      inputSchema: z.object({ query: z.string() }),
      execute: async ({ query }) => searchTickets(query),
    }),
    transfer_funds: tool({
      description: 'Move money.',
      inputSchema: z.object({ to: z.string(), amount: z.number() }),
    }),
  };
  const guard = guardAgent(tools, {
    reads: ['search_tickets'],
    writes: {
      transfer_funds: {
        activity: 'transferFunds',
        operationKey: (i: { to: string; amount: number }) => `transfer:${i.to}:${i.amount}`,
        requiresApproval: true,
      },
    },
    guard: { noProgressLimit: 6, ...(input.tokenBudget ? { maxTokens: input.tokenBudget } : {}) },
    ...(input.approvalWaitMs ? { approvalWaitMs: input.approvalWaitMs } : {}),
    ...(input.searchAttributes ? { searchAttributes: true } : {}),
    ...(input.tenant
      ? {
          spend: { tenant: input.tenant, maxOutputTokens: 2000 },
          prices: { inputPerMillion: 10, outputPerMillion: 10 },
        }
      : {}),
  });
  guard.installHandlers();
  const model = guard.model(temporalProvider.languageModel('test-model'));
  // The loop a user writes to go on after a guard stop: the messages so far, then wait for a
  // verified resume and ask the model again.
  let messages: ModelMessage[] = [{ role: 'user', content: input.prompt }];
  for (let round = 0; ; round++) {
    const r = await generateText({
      model,
      tools: guard.tools,
      stopWhen: [stepCountIs(10), guard.stopWhen],
      messages,
    });
    // ai 7: `responseMessages` holds every step's messages (`response.messages` only the last step's).
    messages = [...messages, ...r.responseMessages];
    const done =
      !guard.stopped ||
      round >= (input.resumes ?? 0) ||
      !(await guard.untilResumed(input.resumeWaitMs ?? 60_000));
    if (done) return { run: guard.result(r.text || null), executions: guard.executions, rounds: round + 1 };
  }
}
