/**
 * A resumed agent is told what changed (core/resume-note.ts), on an `agentRun` with a real
 * LLM SDK (`openai`) against a local Chat Completions server: a model that loops on a read is
 * stopped `same_call_repeat`; a resume with nothing changed is refused; the user's store
 * changes; the accepted resume re-runs the read to verify it, and the model's first request
 * after it ends with the runtime's note — who resumed, the operator's note, what was verified
 * and the fresh balance the re-run read — instead of the old refusal. The worker's progress
 * source is the default one (new read results are progress), as in an `agentctl init` app.
 */
import { z } from 'zod';
import { resumeAgentRun } from '../../client/api';
import { resumeUpdate, statusQuery } from '../../common/contracts';
import { defineTool } from '../../tools/define-tool';
import { startOpenAIServer, type OpenAIServer } from '../../testing/openai-server';
import { startHarness, type Harness } from '../helpers/run-harness';
import { waitFor } from '../helpers/run-inputs';
import { runResult } from '../helpers/run-result';

const KEY_ENV = 'RESUME_NOTE_LLM_KEY';
const PLANNER = { kind: 'openai', model: 'gpt-4o-mini', maxTokens: 256, endpoint: 'resume-note' } as const;

type Message = { role: string; content?: unknown };
const messagesOf = (body: Record<string, unknown>): Message[] => (body.messages as Message[]) ?? [];

describe('a resumed agentRun is told what changed before its next turn', () => {
  let h: Harness;
  let server: OpenAIServer;
  /** The user's store: the balance the read returns. */
  let balance = 120;
  let reads = 0;

  const getBalance = defineTool({
    name: 'get_balance',
    description: 'Read the balance of an account.',
    effect: 'read',
    schema: z.object({ account: z.string() }).strict(),
    execute(a) {
      reads += 1;
      return Promise.resolve({ data: { account: a.account, balance } });
    },
  });

  beforeAll(async () => {
    process.env[KEY_ENV] = 'sk-test-resume-note';
    // A model that reads the balance again whatever it is told, until it is told the new one.
    server = await startOpenAIServer((_i, req) => {
      const said = JSON.stringify(messagesOf(req.body as Record<string, unknown>));
      if (said.includes('"balance\\":450') || said.includes('balance\\\\\\":450'))
        return { tool_calls: [{ name: 'complete_task', arguments: '{"summary":"balance is 450"}' }] };
      return { tool_calls: [{ name: 'get_balance', arguments: '{"account":"acme"}' }] };
    });
    process.env.AGENT_MODEL_ENDPOINTS = JSON.stringify({
      'resume-note': { provider: 'openai', baseURL: server.baseURL, apiKeyEnv: KEY_ENV },
    });
    // The default progress source (observed reads and writes), not the demo world's version.
    h = await startHarness({ tools: [getBalance], deps: () => ({ progress: undefined }) });
  });
  afterAll(async () => {
    await h?.close();
    await server?.close();
    delete process.env[KEY_ENV];
    delete process.env.AGENT_MODEL_ENDPOINTS;
  });

  it('the first request after an accepted resume holds the fresh balance the verification read, and the run completes', async () => {
    const run = await h.start({
      goal: 'report the balance of account acme',
      planner: PLANNER,
      guard: { steerLimit: 0 },
      resumeWindowMs: 60_000,
    });
    await waitFor(
      () => run.handle.query(statusQuery),
      (s) => s.waitingForResume,
    );
    const status = await run.handle.query(statusQuery);
    expect(status.guardReason).toBe('same_call_repeat');
    expect(reads).toBe(2);

    // Nothing changed: the re-run read returns the same balance, refused; the model not asked.
    const asked = server.completionRequests().length;
    const refused = await run.handle.executeUpdate(resumeUpdate, {
      args: [{ actor: 'ops', reason: 'try again', requestId: 'note-0' }],
    });
    expect(refused).toMatchObject({ accepted: false });
    expect(refused.reason).toMatch(/unchanged .*re-ran get_balance/);
    expect(reads).toBe(3);
    expect(server.completionRequests().length).toBe(asked);

    balance = 450;
    const answer = await run.handle.executeUpdate(resumeUpdate, {
      args: [
        {
          actor: 'ops',
          reason: 'payment received',
          requestId: 'note-1',
          note: 'The customer paid; report the new balance.',
        },
      ],
    });
    expect(answer.accepted).toBe(true);
    expect(answer.reason).toMatch(/moved .*re-ran get_balance/);
    const result = await runResult(run);
    expect(result.terminal_state).toBe('COMPLETED');
    // The re-run that verified the resume is the last read: the model did not read again.
    expect(reads).toBe(4);
    expect(await h.counters(run.workflowId)).toEqual({ get_balance: 4, complete_task: 1 });

    const after = server.completionRequests().slice(asked);
    const first = messagesOf(after[0]!);
    const last = first[first.length - 1]!;
    expect(last.role).toBe('user');
    const told = String(last.content);
    expect(told).toContain('[agent-loop-guard] The run was stopped (same_call_repeat on get_balance)');
    expect(told).toContain('resumed by ops: payment received');
    expect(told).toContain("Operator's note: The customer paid; report the new balance.");
    expect(told).toContain('Verified before resuming: external state moved');
    expect(told).toContain('get_balance {"account":"acme"} was run again for this check and returned');
    expect(told).toContain('"balance":450');
    expect(result.summary).toBe('balance is 450');
  });

  it('a note with control characters or over the limit is refused by the update, nothing recorded', async () => {
    balance = 120;
    const run = await h.start({
      goal: 'report the balance of account zeta',
      planner: PLANNER,
      guard: { steerLimit: 0 },
      resumeWindowMs: 60_000,
    });
    await waitFor(
      () => run.handle.query(statusQuery),
      (s) => s.waitingForResume,
    );
    const readsBefore = reads;
    await expect(
      run.handle.executeUpdate(resumeUpdate, {
        args: [{ actor: 'ops', reason: 'r', requestId: 'bad-1', note: 'hidden\u001b[8mtext' }],
      }),
    ).rejects.toMatchObject({
      cause: { message: expect.stringMatching(/note: note has control characters/) },
    });
    await expect(
      run.handle.executeUpdate(resumeUpdate, {
        args: [{ actor: 'ops', reason: 'r', requestId: 'bad-2', note: 'x'.repeat(2001) }],
      }),
    ).rejects.toMatchObject({
      cause: { message: expect.stringMatching(/note: note is longer than 2000 characters/) },
    });
    // The client API checks it the same way before it sends anything.
    await expect(
      resumeAgentRun(h.env.client, run.workflowId, { actor: 'ops', note: 'bell\u0007' }),
    ).rejects.toThrow(/resume note: note has control characters/);
    // Refused before anything ran: no verification read, the run still waits.
    expect(reads).toBe(readsBefore);
    expect((await run.handle.query(statusQuery)).waitingForResume).toBe(true);
    await run.handle.terminate('test done');
  });
});
