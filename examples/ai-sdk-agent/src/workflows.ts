/**
 * The user's agent: `generateText` with tools on `@temporalio/ai-sdk` (each model call an
 * activity), as they wrote it, plus agent-loop-guard's few lines (marked "guard").
 */
import { temporalProvider } from '@temporalio/ai-sdk/workflow';
import { proxyActivities } from '@temporalio/workflow';
import { generateText, stepCountIs, tool } from 'ai';
import { z } from 'zod';
import { guardAgent } from 'agent-loop-guard/ai-sdk'; // guard

const { searchTickets } = proxyActivities<{ searchTickets(query: string): Promise<string[]> }>({
  startToCloseTimeout: '10 seconds',
});

export async function triageAgent(prompt: string): Promise<unknown> {
  const tools = {
    search_tickets: tool({
      description: 'Search the ticket store.',
      inputSchema: z.object({ query: z.string() }),
      execute: async ({ query }) => searchTickets(query),
    }),
    file_ticket: tool({
      description: 'File a new ticket.',
      inputSchema: z.object({ title: z.string() }),
      // Runs as the worker's `fileTicket` activity, through the ledger (see worker.ts).
    }),
  };
  // guard: every call passes the loop guard; the write runs once per operation key.
  const guard = guardAgent(tools, {
    reads: ['search_tickets'],
    writes: {
      file_ticket: {
        activity: 'fileTicket',
        operationKey: (i: { title: string }) => `ticket:${i.title}`,
      },
    },
    guard: { noProgressLimit: 4 },
    // A killed worker's write is retried elsewhere after this long.
    writeActivity: { startToCloseTimeout: '3 seconds' },
  });
  guard.installHandlers(); // guard: agentctl status / report
  const result = await generateText({
    model: guard.model(temporalProvider.languageModel('triage-model')), // guard: usage counts
    tools: guard.tools, // guard
    stopWhen: [stepCountIs(12), guard.stopWhen], // guard
    prompt,
  });
  return { run: guard.result(result.text || null), executions: guard.executions }; // guard
}
