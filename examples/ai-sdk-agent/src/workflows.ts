/**
 * The user's agent: `generateText` with tools on `@temporalio/ai-sdk` (each model call an
 * activity), as they wrote it, plus agent-loop-guard's few lines (marked "guard").
 */
import { temporalProvider } from '@temporalio/ai-sdk/workflow';
import { proxyActivities } from '@temporalio/workflow';
import { generateText, stepCountIs, tool, type ModelMessage } from 'ai';
import { z } from 'zod';
import { guardAgent } from 'agent-loop-guard/ai-sdk'; // guard

const { searchTickets } = proxyActivities<{ searchTickets(query: string): Promise<string[]> }>({
  startToCloseTimeout: '1 minute',
});

/**
 * `resumeWaitMs` > 0: after a guard or operator stop, wait that long for a verified `agentctl
 * resume` and go on with the conversation so far (docs/ai-sdk.md "agentctl resume after a guard stop").
 */
export async function triageAgent(prompt: string, resumeWaitMs = 0): Promise<unknown> {
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
  guard.installHandlers(); // guard: agentctl status / report / stop / resume
  const model = guard.model(temporalProvider.languageModel('triage-model')); // guard: usage counts
  let messages: ModelMessage[] = [{ role: 'user', content: prompt }];
  for (let round = 1; ; round++) {
    const result = await generateText({
      model,
      tools: guard.tools, // guard
      stopWhen: [stepCountIs(12), guard.stopWhen], // guard
      messages,
    });
    messages = [...messages, ...result.responseMessages];
    // guard: a stopped run waits for a verified resume, then asks the model again.
    if (!guard.stopped || resumeWaitMs <= 0 || !(await guard.untilResumed(resumeWaitMs)))
      // guard: returned when COMPLETED; any other end closes the workflow FAILED, its RunResult in the failure.
      return { run: guard.end(result.text || null), executions: guard.executions, rounds: round };
  }
}
