/**
 * agent-loop-guard/strands-agents: an agent on `@temporalio/strands-agents` (a `TemporalAgent`
 * with `activityAsTool` tools, each model call the `StrandsPlugin`'s activity running the SDK's
 * own `OpenAIModel` against a local streaming Responses server) with the guard added by
 * `guardStrandsAgent`, on the real dev server and a SQLite ledger. The counters are the tools'
 * own.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { StrandsPlugin } from '@temporalio/strands-agents';
import { Context } from '@temporalio/activity';
import type { WorkflowHandle } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, DefaultLogger, Worker } from '@temporalio/worker';
import { reportQuery, statusQuery, traceQuery, type RunResult } from '../../common/contracts';
import {
  approveRun,
  getPendingApproval,
  resumeAgentRun,
  stopAgentRun,
  type ApprovalStoreOptions,
} from '../../client/api';
import { ledgerWrites, StrandsGuardPlugin } from '../../strands-agents/worker';
import type { GuardedWriteMeta } from '../../core/framework-types';
import { openLedger, type Ledger } from '../../storage/ledger';
import { OperatorRegistry } from '../../operators/registry';
import { alice } from '../approvals/signing';
import { waitFor } from '../helpers/run-inputs';
import { createTestEnv, testDataConverter, uniqueId, uniqueTaskQueue } from '../helpers/temporal-env';
import { startModelServer, type ModelServer, type Step } from './model-server';
import type { StrandsAgentInput } from './workflows/strands-agent';

// The SDK's OpenAI provider (an ESM subpath export; this repository resolves types the node10 way).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { OpenAIModel } =
  require('@strands-agents/sdk/models/openai') as typeof import('@strands-agents/sdk/dist/src/models/openai/index.js');

const operatorsOf = () =>
  OperatorRegistry.fromFile({
    operators: { alice: { publicKey: alice.publicKey, roles: ['approver'] } },
    roles: {
      approver: { lift: ['*'], approve: true, stop: true, raise: { maxTokens: 5000 }, raiseSpendUsd: 5 },
    },
  });

/** The SDK's own OpenAI provider, exactly as documented (the guard keeps the cancel signal out). */
const strandsPluginOf = (baseURL: string) =>
  new StrandsPlugin({
    models: {
      openai: () =>
        new OpenAIModel({ modelId: 'gpt-scripted', apiKey: 'sk-local', clientConfig: { baseURL } }),
    },
  });

type Outcome = { run: RunResult; executions: Record<string, number>; stopReason: string };
type Counts = { lookup_order: number; pay: number; paidTo: string[]; payVia: string[] };

const lookup = (orderId: string): Step => ({ call: 'lookup_order', args: { orderId } });
const pay = (order: string, to: string, amount: number, requestId: string, callId?: string) => ({
  call: 'pay',
  args: { orderId: order, to, amount, requestId },
  ...(callId ? { callId } : {}),
});

describe('guardStrandsAgent on @temporalio/strands-agents', () => {
  let env: TestWorkflowEnvironment;
  let dir: string;
  let ledger: Ledger;
  let store: ApprovalStoreOptions;
  let workflowBundle: { code: string };
  const servers: ModelServer[] = [];

  beforeAll(async () => {
    env = await createTestEnv();
    dir = mkdtempSync(join(tmpdir(), 'strands-guard-'));
    ledger = await openLedger(`sqlite:${join(dir, 'ledger.db')}`);
    store = { ledger, operators: operatorsOf(), env: {} };
    // Bundled once through the integration's plugin (its polyfills first), as a user's worker does.
    workflowBundle = await bundleWorkflowCode({
      workflowsPath: require.resolve('./workflows/strands-agent'),
      plugins: [
        strandsPluginOf('http://127.0.0.1:1/v1'),
        new StrandsGuardPlugin({ ledger: {} as Ledger, spendLimits: null, operators: operatorsOf() }),
      ],
      logger: new DefaultLogger('WARN'),
    });
  }, 120_000);
  afterAll(async () => {
    await ledger?.close();
    for (const s of servers) await s.close();
    await env?.teardown();
    rmSync(dir, { recursive: true, force: true });
  });

  async function run(
    script: Step[],
    input: Omit<StrandsAgentInput, 'prompt'>,
    drive: (h: WorkflowHandle, counts: Counts) => Promise<void> = async () => undefined,
    payBehaviour: 'hang_first' | 'hang_always' | 'ok' = 'ok',
    lookupGate: Promise<void> = Promise.resolve(),
  ) {
    const server = await startModelServer(script);
    servers.push(server);
    const counts: Counts = { lookup_order: 0, pay: 0, paidTo: [], payVia: [] };
    const operators = operatorsOf();
    const writes = ledgerWrites(
      ledger,
      {
        pay: async (i: { to: string; amount: number }) => {
          counts.pay += 1;
          counts.paidTo.push(`${i.to}:${i.amount}`);
          return { paid: i.amount, to: i.to };
        },
      },
      { operators },
    );
    const taskQueue = uniqueTaskQueue('strands-guard');
    const worker = await Worker.create({
      connection: env.nativeConnection,
      namespace: 'default',
      taskQueue,
      workflowBundle,
      activities: {
        lookup_order: async (i: { orderId: string }) => {
          counts.lookup_order += 1;
          await lookupGate;
          return { orderId: i.orderId, status: 'unpaid', amount: 100 };
        },
        // The write commits, then its activity times out (1 s) before it reports back: the
        // retry gets the ledger's answer; 'hang_always': every attempt times out.
        pay: async (i: { orderId: string; to: string; amount: number }, meta: GuardedWriteMeta) => {
          const out = await writes.pay(i, meta);
          counts.payVia.push(out.via);
          const attempt = Context.current().info.attempt;
          if (payBehaviour === 'hang_always' || (payBehaviour === 'hang_first' && attempt === 1))
            await sleep(1500);
          return out;
        },
      },
      plugins: [
        strandsPluginOf(server.baseURL),
        new StrandsGuardPlugin({
          ledger,
          operators,
          spendLimits: null,
          dataConverter: testDataConverter(),
          verifyPrecondition: () => Promise.resolve({ changed: true, detail: 'new rows arrived' }),
        }),
      ],
    });
    const outcome = await worker.runUntil(async () => {
      const handle = await env.client.workflow.start('strandsAgent', {
        taskQueue,
        workflowId: uniqueId('strands-guard'),
        args: [{ prompt: 'Pay order A-1.', ...input }],
      });
      await drive(handle, counts);
      const result = (await handle.result()) as Outcome;
      const report = await handle.query(reportQuery);
      const trace = await handle.query(traceQuery);
      return { result, report, trace, history: await handle.fetchHistory() };
    });
    return { ...outcome, counts, server };
  }

  const replays = (history: Parameters<typeof Worker.runReplayHistory>[1]) =>
    Worker.runReplayHistory(
      {
        workflowBundle,
        dataConverter: testDataConverter(),
        plugins: [
          strandsPluginOf('http://127.0.0.1:1/v1'),
          new StrandsGuardPlugin({ ledger: {} as Ledger, spendLimits: null, operators: operatorsOf() }),
        ],
      },
      history,
    );

  it('stops a runaway read before its third run (counter 2) with the StopReport; the model is not asked again', async () => {
    const { result, report, counts, server, history } = await run([lookup('A-1')], {});
    expect(counts.lookup_order).toBe(2);
    expect(result.executions).toEqual({ lookup_order: 2 });
    expect(result.run).toMatchObject({
      terminal_state: 'STOPPED_LOOP_GUARD',
      reason: 'same_call_repeat',
      report: { guard_reason: 'same_call_repeat', blocked_call: { tool: 'lookup_order' } },
    });
    // Three model calls (the third proposed the blocked call); the fourth was not sent.
    expect(server.requests()).toHaveLength(3);
    expect(result.run.usage?.tokens).toBe(330);
    expect(report).toEqual(result.run.report);
    await replays(history);
  });
});
