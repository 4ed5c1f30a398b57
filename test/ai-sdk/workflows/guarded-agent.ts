/**
 * A user's `@temporalio/ai-sdk` agent with agent-loop-guard added (test/ai-sdk/guarded-agent.test.ts):
 * `generateText` with a read tool that calls the user's activity and a write tool routed through
 * the ledger. Workflow code, bundled with `AiSdkPlugin`.
 */
import { temporalProvider } from '@temporalio/ai-sdk/workflow';
import { proxyActivities, sleep } from '@temporalio/workflow';
import { generateText, stepCountIs, tool } from 'ai';
import { z } from 'zod';
import { guardAgent } from '../../../ai-sdk';

const { searchTickets } = proxyActivities<{ searchTickets(query: string): Promise<string[]> }>({
  startToCloseTimeout: '10 seconds',
});

export interface GuardedAgentInput {
  readonly prompt: string;
  /** Wrap the guarded tools a second time (must be refused). */
  readonly wrapTwice?: boolean;
  /** The guard's token budget. */
  readonly tokenBudget?: number;
  /** Refusals steered back to the model before one stops the run. */
  readonly steerLimit?: number;
  /** Give generateText the model unwrapped (usage then counts in stopWhen). */
  readonly unwrappedModel?: boolean;
  /** Upsert AgentState / AgentGuardReason / AgentSteps. */
  readonly searchAttributes?: boolean;
  /** The search's `query` is free text: reworded repeats count as repeats. */
  readonly similarQuery?: boolean;
  /** The write activity's heartbeat timeout (a killed worker's write is retried after it). */
  readonly writeHeartbeatTimeoutMs?: number;
}

export async function guardedAgent(input: GuardedAgentInput): Promise<unknown> {
  const tools = {
    search_tickets: tool({
      description: 'Search the tickets.',
      inputSchema: z.object({ query: z.string() }),
      execute: async ({ query }) => searchTickets(query),
    }),
    file_ticket: tool({
      description: 'File a ticket.',
      inputSchema: z.object({ title: z.string() }),
    }),
  };
  const guard = guardAgent(tools, {
    reads: ['search_tickets'],
    writes: {
      file_ticket: { activity: 'fileTicket', operationKey: (i: { title: string }) => `ticket:${i.title}` },
    },
    guard: {
      noProgressLimit: 4,
      ...(input.tokenBudget ? { maxTokens: input.tokenBudget } : {}),
      ...(input.steerLimit ? { steerLimit: input.steerLimit } : {}),
    },
    searchAttributes: input.searchAttributes ?? false,
    ...(input.writeHeartbeatTimeoutMs
      ? {
          writeActivity: {
            startToCloseTimeout: '1 minute',
            heartbeatTimeout: input.writeHeartbeatTimeoutMs,
            retry: { maximumAttempts: 5, initialInterval: '200 milliseconds' },
          },
        }
      : {}),
    ...(input.similarQuery ? { args: { search_tickets: { similarArgs: ['query'] } } } : {}),
  });
  if (input.wrapTwice) guardAgent(guard.tools, { reads: ['search_tickets', 'file_ticket'] });
  guard.installHandlers();
  const result = await generateText({
    model: input.unwrappedModel
      ? temporalProvider.languageModel('test-model')
      : guard.model(temporalProvider.languageModel('test-model')),
    tools: guard.tools,
    stopWhen: [stepCountIs(10), guard.stopWhen],
    prompt: input.prompt,
  });
  return { run: guard.result(result.text || null), executions: guard.executions };
}

/** A workflow of no guard engine (no `installHandlers()`): operator actions on it are refused as bad input. */
export async function unguardedAgent(): Promise<string> {
  await sleep(60_000);
  return 'done';
}
