/**
 * Issue 37 item 2: the AI SDK path at parity with `agentRun`, through the one guarded core
 * (core/): its decisions are in the trace `agentctl trace` reads; a tool's PRECONDITION and
 * PENDING are classified as such (precondition_unchanged fires, a PENDING re-poll is honoured);
 * the guard's state crosses a continue-as-new; a stop vetoes a resume being verified; every
 * refusal of the gate leaves one audit row (item 3). The `no_progress` note reaches the model
 * with the tool's result before the stop (issue 40), as an agentRun's observation carries it.
 * The counters are the tools' own.
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { AiSdkPlugin } from '@temporalio/ai-sdk';
import type { WorkflowHandle } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { ApplicationFailure } from '@temporalio/workflow';
import { resumeUpdate, statusQuery, stopUpdate, type RunResult } from '../../common/contracts';
import type { TracePage } from '../../guard';
import { guardActivities } from '../../ai-sdk/worker';
import { ApprovalStore } from '../../storage/approvals/approval-store';
import { waitFor } from '../helpers/run-inputs';
import { agentctl } from '../client/cli-helpers';
import { startOpenAIServer, type OpenAIServer } from '../../testing/openai-server';
import { testDataConverter, uniqueId, uniqueTaskQueue } from '../helpers/temporal-env';
import { aiSdkTestBed } from './bundle';
import { agentSinks } from '../../worker/create-worker';

const call = (name: string, args: unknown) => ({
  tool_calls: [{ name, arguments: JSON.stringify(args) }],
  usage: { prompt_tokens: 100, completion_tokens: 10 },
});

type Outcome = { run: RunResult; executions: Record<string, number> };

describe('the AI SDK path at parity (one guarded core)', () => {
  const bed = aiSdkTestBed('ai-sdk-parity-', require.resolve('./workflows/parity-agent'));

  /** Runs the agent; `drive` acts on the open run; `verify` is the worker's precondition check. */
  async function run(
    script: Parameters<typeof startOpenAIServer>[0],
    input: Record<string, unknown>,
    o: {
      drive?: (h: WorkflowHandle) => Promise<void>;
      /** After the run closed, while its worker still answers queries. */
      closed?: (h: WorkflowHandle) => Promise<void>;
      verify?: () => Promise<{ changed: boolean; detail: string }>;
      pendingPolls?: number;
    } = {},
  ) {
    const server = await bed.serve(script);
    const counts = { read_report: 0, poll_job: 0, search_tickets: 0, lookup_host: 0 };
    const taskQueue = uniqueTaskQueue('ai-sdk-parity');
    const worker = await Worker.create({
      connection: bed.env.nativeConnection,
      namespace: 'default',
      taskQueue,
      dataConverter: testDataConverter(),
      workflowBundle: bed.workflowBundle,
      // The agentTelemetry sink the guarded core reports to (the plugin registers it in a user's worker).
      sinks: agentSinks(),
      activities: {
        readReport: async () => {
          counts.read_report += 1;
          throw ApplicationFailure.create({
            type: 'PRECONDITION',
            nonRetryable: true,
            message: 'the q3 report is not shared with the agent',
            details: [{ code: 'permission_denied', unmet: 'the q3 report is not shared with the agent' }],
          });
        },
        pollJob: async () => {
          counts.poll_job += 1;
          if (counts.poll_job <= (o.pendingPolls ?? 2))
            throw ApplicationFailure.create({
              type: 'PENDING',
              nonRetryable: true,
              message: 'still running',
              details: [{ code: 'running', retryAfterMs: 50 }],
            });
          return 'job done';
        },
        searchTickets: async (query: string) => {
          counts.search_tickets += 1;
          return [`INC-0: ${query} (closed)`];
        },
        lookupHost: async (host: string) => {
          counts.lookup_host += 1;
          return { host, up: true };
        },
        ...guardActivities(bed.ledger, {
          spendLimits: null,
          ...(o.verify ? { verifyPrecondition: o.verify } : {}),
        }),
        // The gate's refusal audit (core/gate.ts), next to guardActivities.
      },
      plugins: [
        new AiSdkPlugin({
          modelProvider: createOpenAICompatible({ name: 'local', baseURL: server.baseURL }),
        }),
      ],
    });
    const workflowId = uniqueId('ai-sdk-parity');
    const outcome = await worker.runUntil(async () => {
      const handle = await bed.env.client.workflow.start('parityAgent', {
        taskQueue,
        workflowId,
        args: [{ prompt: 'Do the job.', ...input }],
      });
      await o.drive?.(handle);
      const result = (await handle.result()) as Outcome;
      await o.closed?.(handle);
      return result;
    });
    return { result: outcome, counts, workflowId, server };
  }

  const cliEnv = () => ({
    TEMPORAL_ADDRESS: process.env.TEMPORAL_TEST_ADDRESS as string,
    TEMPORAL_NAMESPACE: 'default',
  });

  it('a PRECONDITION answered twice stops precondition_unchanged with the tool run once; agentctl trace lists the decisions', async () => {
    let page: TracePage | null = null;
    const { result, counts } = await run(
      [call('read_report', { name: 'q3' }), call('read_report', { name: 'q3' }), { content: 'done' }],
      {},
      {
        // The trace, as an operator reads it: the real agentctl against the run's workflow.
        closed: async (h) => {
          const cli = await agentctl(['trace', h.workflowId, '--json'], cliEnv());
          expect(cli.code).toBe(0);
          page = JSON.parse(cli.stdout) as TracePage;
        },
      },
    );
    expect(counts.read_report).toBe(1);
    expect(result.run.terminal_state).toBe('STOPPED_LOOP_GUARD');
    expect(result.run.reason).toBe('precondition_unchanged');
    expect(result.run.report?.unmet_precondition).toMatch(/not shared/);
    const records = (page as TracePage | null)?.records ?? [];
    expect(records.map((r) => [r.phase, r.tool, r.decision, r.result_kind, r.reason])).toEqual([
      ['before', 'read_report', 'execute', null, null],
      ['after', 'read_report', 'needs_changed_precondition', 'PRECONDITION', null],
      ['before', 'read_report', 'stop', null, 'precondition_unchanged'],
    ]);
    expect(records[1]?.error_code).toBe('permission_denied');
    // The result's checkpoint carries the same trace (what `resume --from` and a closed run's reader get).
    expect(result.run.checkpoint?.trace.map((r) => r.decision)).toEqual(records.map((r) => r.decision));
  });

  it('a PENDING result is honoured: the guard waits and the model polls again until the job is done', async () => {
    const { result, counts } = await run(
      [
        call('poll_job', { id: 'j-1' }),
        call('poll_job', { id: 'j-1' }),
        call('poll_job', { id: 'j-1' }),
        { content: 'the job finished' },
      ],
      {},
    );
    expect(counts.poll_job).toBe(3);
    expect(result.run.terminal_state).toBe('COMPLETED');
    expect(result.run.decisions.map((d) => d.after)).toEqual(['wait_bounded', 'wait_bounded', 'continue']);
  });

  it("the guard's state crosses a continue-as-new: a repeat of the first run's search is stopped in the next", async () => {
    const { result, counts } = await run(
      [
        call('search_tickets', { query: 'disk full' }),
        call('search_tickets', { query: 'disk full' }),
        { content: 'first run done' },
        call('search_tickets', { query: 'disk full' }),
        { content: 'second run done' },
      ],
      { continueOnce: true },
    );
    // Without the checkpoint the third search would have run in a fresh guard.
    expect(counts.search_tickets).toBe(2);
    expect(result.run.reason).toBe('same_call_repeat');
    expect(result.run.decisions.map((d) => d.decision)).toEqual(['execute', 'execute', 'stop']);
  });

  it('a stop while a resume is being verified vetoes it: the run stays stopped, the refusal audited once', async () => {
    let release: (v: { changed: boolean; detail: string }) => void = () => undefined;
    let verifying = false;
    const verify = () =>
      new Promise<{ changed: boolean; detail: string }>((resolve) => {
        verifying = true;
        release = resolve;
      });
    let resumeAnswer: unknown = null;
    let stopAnswer: unknown = null;
    const { result, counts, workflowId } = await run(
      [
        call('search_tickets', { query: 'disk full' }),
        call('search_tickets', { query: 'disk full' }),
        call('search_tickets', { query: 'disk full' }),
        { content: 'not reached' },
      ],
      { resumeWaitMs: 10_000 },
      {
        verify,
        drive: async (h) => {
          await waitFor(
            () => h.query(statusQuery),
            (s) => s.waitingForResume,
          );
          const resume = h.executeUpdate(resumeUpdate, {
            args: [{ actor: 'oncall', reason: 'the index was rebuilt', requestId: 'r-veto' }],
          });
          await waitFor(
            () => Promise.resolve(verifying),
            (v) => v,
          );
          stopAnswer = await h.executeUpdate(stopUpdate, {
            args: [{ actor: 'lead', reason: 'hold everything', requestId: 's-veto' }],
          });
          release({ changed: true, detail: 'the index was rebuilt' });
          resumeAnswer = await resume;
        },
      },
    );
    expect(stopAnswer).toMatchObject({ accepted: true, reason: expect.stringMatching(/vetoed/) });
    expect(resumeAnswer).toMatchObject({
      accepted: false,
      reason: 'an operator stopped the run while this resume was being verified',
    });
    expect(counts.search_tickets).toBe(2);
    expect(result.run.terminal_state).toBe('STOPPED_LOOP_GUARD');
    expect(result.run.reason).toBe('same_call_repeat');
    const refused = (await ApprovalStore.over(bed.ledger).audit({ runId: workflowId })).filter(
      (a) => a.action === 'refused',
    );
    expect(refused.map((a) => a.detail)).toEqual([
      'resume r-veto refused: an operator stopped the run while this resume was being verified',
    ]);
  });

  /** The content of each tool message the model server received, by request (the newest last). */
  const toolMessages = (server: OpenAIServer): string[][] =>
    server
      .completionRequests()
      .map((r) =>
        ((r.messages ?? []) as Array<{ role: string; content?: unknown }>)
          .filter((m) => m.role === 'tool')
          .map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content))),
      );

  it('no_progress tells the model with the read it wrapped ({ result, guard }), then stops only after the grace', async () => {
    const { result, counts, server } = await run(
      [
        call('search_tickets', { query: 'disk full' }),
        call('search_tickets', { query: 'disk slow' }),
        call('search_tickets', { query: 'disk gone' }),
        call('search_tickets', { query: 'disk new' }),
        { content: 'not reached' },
      ],
      { guard: { noProgressLimit: 2, noProgressGrace: 2 } },
    );
    // The run went on after the note: all four reads ran, the stop came at the end of the grace.
    expect(counts.search_tickets).toBe(4);
    expect(result.executions).toEqual({ search_tickets: 4 });
    expect(result.run.terminal_state).toBe('STOPPED_LOOP_GUARD');
    expect(result.run.reason).toBe('no_progress');
    // What the model server received: the second read's tool message carries the note.
    const seen = toolMessages(server);
    expect(seen).toHaveLength(4);
    const last = seen[3]!;
    expect(last).toHaveLength(3);
    expect(last[0]).not.toContain('no_progress');
    const noted = JSON.parse(last[1]!) as { result: unknown; guard: string };
    expect(noted.result).toEqual(['INC-0: disk slow (closed)']);
    expect(noted.guard).toMatch(
      /^guard no_progress: your last 2 calls .*2 more call\(s\) without progress stop the run/,
    );
    expect(last[2]).not.toContain('no_progress');
    // The note is the second read's decision; the stop is the fourth's.
    expect(result.run.decisions.map((d) => d.reason ?? null)).toEqual([null, 'no_progress', null, null]);
    expect(result.run.decisions[3]?.after).toBe('stop');
  });

  it("no_progress's note on a plain-object result is a guard field beside the tool's own fields", async () => {
    const { result, counts, server } = await run(
      [
        call('lookup_host', { host: 'db-1' }),
        call('lookup_host', { host: 'db-2' }),
        { content: 'both hosts are up' },
      ],
      { guard: { noProgressLimit: 2, noProgressGrace: 2 } },
    );
    expect(counts.lookup_host).toBe(2);
    expect(result.run.terminal_state).toBe('COMPLETED');
    const seen = toolMessages(server);
    const noted = JSON.parse(seen[seen.length - 1]![1]!) as Record<string, unknown>;
    expect(noted).toEqual({ host: 'db-2', up: true, guard: expect.stringMatching(/^guard no_progress: /) });
  });
});
