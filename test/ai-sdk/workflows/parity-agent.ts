/**
 * A user's `@temporalio/ai-sdk` agent for the parity checks of issue 37 (test/ai-sdk/parity.test.ts):
 * a read whose activity answers PRECONDITION, a poll whose activity answers PENDING until the job
 * is done, a plain search, a host lookup that answers a plain object; the guard's handlers installed; optionally one continue-as-new that
 * carries the guard's checkpoint, and a wait for a resume after a stop. Workflow code, bundled
 * with `AiSdkPlugin`.
 */
import { temporalProvider } from '@temporalio/ai-sdk/workflow';
import { continueAsNew, proxyActivities } from '@temporalio/workflow';
import { generateText, stepCountIs, tool } from 'ai';
import { z } from 'zod';
import type { Checkpoint } from '../../../common/contracts';
import { guardAgent } from '../../../ai-sdk';

const { readReport, pollJob, searchTickets, lookupHost } = proxyActivities<{
  readReport(name: string): Promise<string>;
  pollJob(id: string): Promise<string>;
  searchTickets(query: string): Promise<string[]>;
  lookupHost(host: string): Promise<{ host: string; up: boolean }>;
}>({ startToCloseTimeout: '10 seconds', retry: { maximumAttempts: 1 } });

export interface ParityAgentInput {
  readonly prompt: string;
  /** Continue as new once, after the first generateText, carrying the guard's checkpoint. */
  readonly continueOnce?: boolean;
  /** The guard's checkpoint from the run before (set by the continue-as-new). */
  readonly checkpoint?: Checkpoint;
  /** After a stop, wait this long for a verified resume and ask the model again once. */
  readonly resumeWaitMs?: number;
  /** The guard's config instead of the default below (e.g. `noProgressGrace`). */
  readonly guard?: Record<string, number>;
}

export async function parityAgent(input: ParityAgentInput): Promise<unknown> {
  const tools = {
    read_report: tool({
      description: 'Read a report.',
      inputSchema: z.object({ name: z.string() }),
      execute: async ({ name }) => readReport(name),
    }),
    poll_job: tool({
      description: 'Poll a job.',
      inputSchema: z.object({ id: z.string() }),
      execute: async ({ id }) => pollJob(id),
    }),
    search_tickets: tool({
      description: 'Search the tickets.',
      inputSchema: z.object({ query: z.string() }),
      execute: async ({ query }) => searchTickets(query),
    }),
    lookup_host: tool({
      description: 'Look a host up.',
      inputSchema: z.object({ host: z.string() }),
      execute: async ({ host }) => lookupHost(host),
    }),
  };
  const guard = guardAgent(tools, {
    reads: ['read_report', 'poll_job', 'search_tickets', 'lookup_host'],
    guard: input.guard ?? { noProgressLimit: 8, maxWaitPolls: 5 },
    ...(input.checkpoint ? { checkpoint: input.checkpoint } : {}),
  });
  guard.installHandlers();
  const model = guard.model(temporalProvider.languageModel('test-model'));
  const ask = (prompt: string) =>
    generateText({ model, tools: guard.tools, stopWhen: [stepCountIs(10), guard.stopWhen], prompt });
  let r = await ask(input.prompt);
  if (input.continueOnce && !input.checkpoint && !guard.stopped)
    return continueAsNew<typeof parityAgent>({ ...input, checkpoint: guard.checkpoint() });
  if (guard.stopped && input.resumeWaitMs && (await guard.untilResumed(input.resumeWaitMs)))
    r = await ask(input.prompt);
  return { run: guard.result(r.text || null), executions: guard.executions };
}
