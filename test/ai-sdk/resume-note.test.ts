/**
 * A resumed AI SDK agent is told what changed (core/resume-note.ts), against the real dev
 * server and a local OpenAI-compatible server: the model repeats a search and the guard stops
 * it; a resume with nothing changed is refused by the worker's own `verifyPrecondition`; a new
 * ticket arrives; the accepted resume's fresh reading (`observed`) and the operator's note are
 * in the model's first request after it, so the model answers from them without searching again.
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { AiSdkPlugin } from '@temporalio/ai-sdk';
import { Worker } from '@temporalio/worker';
import { aiSdkTestBed } from './bundle';
import { statusQuery, type RunResult } from '../../common/contracts';
import { resumeAgentRun } from '../../client/api';
import { guardActivities } from '../../ai-sdk/worker';
import { waitFor } from '../helpers/run-inputs';
import { testDataConverter, uniqueId, uniqueTaskQueue } from '../helpers/temporal-env';
import { agentSinks } from '../../worker/create-worker';

type Message = { role: string; content?: unknown };
const messagesOf = (body: Record<string, unknown>): Message[] => (body.messages as Message[]) ?? [];

describe('guardAgent: a resumed AI SDK agent reads what changed first', () => {
  const bed = aiSdkTestBed('ai-sdk-resume-note-', require.resolve('./workflows/approval-agent'));

  it("the first model request after an accepted resume ends with the note and the verifier's fresh reading", async () => {
    const tickets = ['INC-0: disk full (closed)'];
    let searches = 0;
    // A model that searches again whatever it is told, until it reads of INC-9.
    const server = await bed.serve((_i, req) =>
      JSON.stringify(messagesOf(req.body as Record<string, unknown>)).includes('INC-9')
        ? { content: 'INC-9 is open: disk full on db-2' }
        : { tool_calls: [{ name: 'search_tickets', arguments: JSON.stringify({ query: 'disk full' }) }] },
    );
    const taskQueue = uniqueTaskQueue('ai-sdk-resume-note');
    const worker = await Worker.create({
      connection: bed.env.nativeConnection,
      namespace: 'default',
      taskQueue,
      dataConverter: testDataConverter(),
      workflowBundle: bed.workflowBundle,
      sinks: agentSinks(),
      activities: {
        searchTickets: (query: string) => {
          searches += 1;
          return Promise.resolve(tickets.filter((t) => t.includes(query)));
        },
        ...guardActivities(bed.ledger, {
          spendLimits: null,
          // The user's own check of the world: the tickets as they are now.
          verifyPrecondition: () => {
            const now = tickets.filter((t) => t.includes('disk full'));
            return Promise.resolve({
              changed: now.length > 1,
              detail: `${now.length} ticket(s) match "disk full" now`,
              observed: { tickets: now },
            });
          },
        }),
      },
      plugins: [
        new AiSdkPlugin({
          modelProvider: createOpenAICompatible({ name: 'local', baseURL: server.baseURL }),
        }),
      ],
    });
    const workflowId = uniqueId('ai-sdk-resume-note');
    const result = await worker.runUntil(async () => {
      const h = await bed.env.client.workflow.start('approvalAgent', {
        taskQueue,
        workflowId,
        args: [{ prompt: 'Find the open disk tickets.', resumes: 2, resumeWaitMs: 30_000 }],
      });
      const stopped = await waitFor(
        () => h.query(statusQuery),
        (s) => s.waitingForResume,
      );
      expect(stopped.guardReason).toBe('same_call_repeat');
      const searched = searches;
      const asked = server.completionRequests().length;
      // Nothing changed: the worker's check refuses it; the model is not asked.
      const refused = await resumeAgentRun(bed.env.client, workflowId, { actor: 'ops' });
      expect(refused).toMatchObject({ accepted: false, reason: '1 ticket(s) match "disk full" now' });
      tickets.push('INC-9: disk full on db-2 (open)');
      const ok = await resumeAgentRun(bed.env.client, workflowId, {
        actor: 'ops',
        reason: 'new ticket filed',
        note: 'INC-9 was filed after your last search.',
      });
      expect(ok).toMatchObject({ accepted: true, reason: '2 ticket(s) match "disk full" now' });
      const out = (await h.result()) as { run: RunResult; rounds: number };
      // The model answered from the note: no search ran after the resume.
      expect(searches).toBe(searched);
      const first = messagesOf(server.completionRequests()[asked]!);
      const last = first[first.length - 1]!;
      expect(last.role).toBe('user');
      const told = JSON.stringify(last.content);
      expect(told).toContain('resumed by ops: new ticket filed');
      expect(told).toContain("Operator's note: INC-9 was filed after your last search.");
      expect(told).toContain('Verified before resuming: 2 ticket(s) match');
      expect(told).toContain('INC-9: disk full on db-2 (open)');
      return out;
    });
    expect(result.run).toMatchObject({
      terminal_state: 'COMPLETED',
      summary: 'INC-9 is open: disk full on db-2',
    });
    expect(result.rounds).toBe(2);
  });
});
