/**
 * agent-loop-guard/ai-sdk (issue 34): the kill switch, `agentctl stop`, on a user's
 * `@temporalio/ai-sdk` agent (test/ai-sdk/workflows/approval-agent.ts) whose handlers are
 * installed, against the real dev server and a local OpenAI-compatible server. The stop arrives
 * while a search runs: a stop signed with the wrong key is refused, alice's is accepted, the
 * model's next search does not run (the tool's own counter does not move), the run stops
 * `operator_stop` like an agentRun, and `agentctl resume` lets it go on.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { AiSdkPlugin } from '@temporalio/ai-sdk';
import { Worker } from '@temporalio/worker';
import { aiSdkTestBed } from './bundle';
import { reportQuery, statusQuery, stopSignal, type RunResult } from '../../common/contracts';
import { signRequest } from '../../operators/sign';
import { resumeAgentRun, stopAgentRun } from '../../client/api';
import { sendStop } from '../../client/stop';
import { guardActivities } from '../../ai-sdk/worker';
import { OperatorRegistry } from '../../operators/registry';
import { alice, mallory } from '../approvals/signing';
import { waitFor } from '../helpers/run-inputs';
import { agentctl } from '../client/cli-helpers';
import { ApprovalStore } from '../../storage/approvals/approval-store';
import { testDataConverter, uniqueId, uniqueTaskQueue } from '../helpers/temporal-env';
import { agentSinks } from '../../worker/create-worker';

const operatorsOf = () =>
  OperatorRegistry.fromFile({
    operators: { alice: { publicKey: alice.publicKey, roles: ['oncall'] } },
    roles: { oncall: { lift: ['*'], stop: true } },
  });

describe('guardAgent kill switch on @temporalio/ai-sdk', () => {
  const bed = aiSdkTestBed('ai-sdk-stop-', require.resolve('./workflows/approval-agent'));

  // One step with two searches (the guard runs them one at a time): the stop lands during the
  // first, held open until the test releases it; the second must not run.
  const twoSearches = {
    tool_calls: [
      { name: 'search_tickets', arguments: JSON.stringify({ query: 'disk full' }) },
      { name: 'search_tickets', arguments: JSON.stringify({ query: 'db-1' }) },
    ],
    usage: { prompt_tokens: 100, completion_tokens: 10 },
  };

  /** A worker with alice's operators whose first search waits for `release()`. */
  async function setup() {
    const server = await bed.serve([twoSearches, { content: 'found INC-0' }]);
    const counts = { search_tickets: 0 };
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const taskQueue = uniqueTaskQueue('ai-sdk-stop');
    const worker = await Worker.create({
      connection: bed.env.nativeConnection,
      namespace: 'default',
      taskQueue,
      dataConverter: testDataConverter(),
      workflowBundle: bed.workflowBundle,
      // The agentTelemetry sink the guarded core reports to (the plugin registers it in a user's worker).
      sinks: agentSinks(),
      activities: {
        searchTickets: async (query: string) => {
          counts.search_tickets += 1;
          if (counts.search_tickets === 1) await released;
          return [`INC-0: ${query} (closed)`];
        },
        ...guardActivities(bed.ledger, { spendLimits: null, operators: operatorsOf() }),
        // The gate's refusal audit (core/gate.ts, issue 37), next to guardActivities.
      },
      plugins: [
        new AiSdkPlugin({
          modelProvider: createOpenAICompatible({ name: 'local', baseURL: server.baseURL }),
        }),
      ],
    });
    return { server, counts, release, taskQueue, worker };
  }

  it('agentctl stop: accepted only for an authorised operator; the next tool call does not run; resumable', async () => {
    const { server, counts, release, taskQueue, worker } = await setup();
    const workflowId = uniqueId('ai-sdk-stop');
    const result = await worker.runUntil(async () => {
      const h = await bed.env.client.workflow.start('approvalAgent', {
        taskQueue,
        workflowId,
        args: [{ prompt: 'Look for disk tickets.', resumes: 1, resumeWaitMs: 30_000 }],
      });
      await waitFor(
        async () => counts.search_tickets,
        (n) => n === 1,
      );
      // Signed by a key that is not alice's: the worker refuses it, the run goes on.
      const forged = await stopAgentRun(bed.env.client, workflowId, { actor: 'alice', key: mallory.keyFile });
      expect(forged).toMatchObject({ outcome: 'refused', answer: expect.stringMatching(/not authorised/) });
      expect((await h.query(statusQuery)).phase).toBe('RUNNING');
      // The real agentctl, signed with alice's key file: accepted by the worker.
      const keyFile = join(bed.dir, 'alice.key.json');
      writeFileSync(keyFile, JSON.stringify(alice.keyFile), { mode: 0o600 });
      const env2 = {
        TEMPORAL_ADDRESS: process.env.TEMPORAL_TEST_ADDRESS as string,
        TEMPORAL_NAMESPACE: 'default',
      };
      const cli = await agentctl(
        ['stop', workflowId, '--key', keyFile, '--reason', 'runaway', '--json'],
        env2,
      );
      expect(cli.code).toBe(0);
      expect(JSON.parse(cli.stdout)).toMatchObject({ outcome: 'accepted', accepted: true, actor: 'alice' });
      release();
      const status = await waitFor(
        () => h.query(statusQuery),
        (s) => s.waitingForResume,
      );
      expect(status).toMatchObject({ terminalState: 'STOPPED_LOOP_GUARD', guardReason: 'operator_stop' });
      expect(await h.query(reportQuery)).toMatchObject({
        guard_reason: 'operator_stop',
        terminal_state: 'STOPPED_LOOP_GUARD',
        unmet_precondition: 'operator alice: runaway',
      });
      // The step's second search did not run (its tool's counter did not move), and the model
      // was not asked again (the loop ended at stopWhen).
      expect(counts.search_tickets).toBe(1);
      // The trace's last word, as an agentRun's status shows it (issue 37: one core).
      expect((await h.query(statusQuery)).lastDecision).toBe('stop (operator_stop)');
      expect(server.completionRequests()).toHaveLength(1);
      // A stopped run has no running step to stop: the workflow itself says so.
      const again = await sendStop(h, { actor: 'alice', reason: 'again', requestId: 'again-1' });
      expect(again).toMatchObject({ outcome: 'refused', answer: expect.stringMatching(/no running step/) });
      // An operator stop is lifted by a signed resume, as an agentRun's.
      const ok = await resumeAgentRun(bed.env.client, workflowId, { actor: 'alice', key: alice.keyFile });
      expect(ok).toMatchObject({ accepted: true });
      return (await h.result()) as { run: RunResult; rounds: number };
    });
    expect(counts.search_tickets).toBe(1);
    expect(result.rounds).toBe(2);
    expect(result.run).toMatchObject({ terminal_state: 'COMPLETED', summary: 'found INC-0' });
    // Each refused stop left one audit row with its reason, in the gate (issue 37 item 3).
    const refused = (await ApprovalStore.over(bed.ledger).audit({ runId: workflowId })).filter(
      (a) => a.action === 'refused',
    );
    expect(refused.map((a) => a.detail)).toEqual([
      expect.stringMatching(/^stop \S+ refused: not authorised/),
      'stop again-1 refused: run is WAITING: there is no running step to stop',
    ]);
  });

  it('the stop signal (an older client): a signed stop ends the loop before the next call; unresumed, the result keeps it', async () => {
    const { counts, release, taskQueue, worker } = await setup();
    const workflowId = uniqueId('ai-sdk-stop');
    const result = await worker.runUntil(async () => {
      const h = await bed.env.client.workflow.start('approvalAgent', {
        taskQueue,
        workflowId,
        args: [{ prompt: 'Look for disk tickets.' }],
      });
      await waitFor(
        async () => counts.search_tickets,
        (n) => n === 1,
      );
      const fields = { actor: 'alice', reason: 'runaway', requestId: 'signal-1' };
      await h.signal(stopSignal, { ...fields, auth: signRequest(alice.keyFile, 'stop', workflowId, fields) });
      // The signal carries no answer: the step's second call waits for the verdict, then stops.
      release();
      return (await h.result()) as { run: RunResult; rounds: number };
    });
    expect(counts.search_tickets).toBe(1);
    expect(result.rounds).toBe(1);
    expect(result.run).toMatchObject({
      terminal_state: 'STOPPED_LOOP_GUARD',
      reason: 'operator_stop',
      report: { guard_reason: 'operator_stop', unmet_precondition: 'operator alice: runaway' },
    });
  });
});
