/**
 * agent-loop-guard/openai-agents bad input (issue 39): each wrong use is refused before anything
 * runs, with a message naming the cause (a non-retryable failure, so a workflow fails with it
 * instead of retrying its task). In a workflow on the dev server, the model is never called.
 */
import { bundleLedger } from '../helpers/bundle-ledger';
import { Agent, tool, type FunctionTool } from '@openai/agents-core';
import { OpenAIProvider } from '@openai/agents-openai';
import { OpenAIAgentsPlugin } from '@temporalio/openai-agents';
import { activityAsTool } from '@temporalio/openai-agents/workflow';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, DefaultLogger, Worker, type WorkerOptions } from '@temporalio/worker';
import { guardOpenAIAgent } from '../../openai-agents';
import { checkOpenAIAgentsVersions, ledgerWrites, OpenAIAgentsGuardPlugin } from '../../openai-agents/worker';
import { GUARDED } from '../../ai-sdk/types';
import { createTestEnv, testDataConverter, uniqueId, uniqueTaskQueue } from '../helpers/temporal-env';
import { startResponsesServer } from './responses-server';

const params = {
  type: 'object' as const,
  properties: { orderId: { type: 'string' } },
  required: ['orderId'],
  additionalProperties: false,
};
const lookup = () => activityAsTool({ name: 'lookup_order', description: 'Look up.', parameters: params });
const pay = () => activityAsTool({ name: 'pay', description: 'Pay.', parameters: params });
const agentWith = (...tools: FunctionTool[]) => new Agent({ name: 'A', model: 'm', tools });

function refusal(fn: () => unknown): ApplicationFailure {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ApplicationFailure);
    expect((err as ApplicationFailure).nonRetryable).toBe(true);
    return err as ApplicationFailure;
  }
  throw new Error('not refused');
}

describe('guardOpenAIAgent refuses', () => {
  it('a write without an operation-key rule, naming the tool', () => {
    const err = refusal(() =>
      guardOpenAIAgent(agentWith(lookup(), pay()), { reads: ['lookup_order'], writes: { pay: {} as never } }),
    );
    expect(err.type).toBe('write_without_operation_key');
    expect(err.message).toMatch(/^write tool "pay" has no operation-key rule/);
  });

  it('a tool without a parameters schema', () => {
    const bare = { ...lookup(), name: 'bare', parameters: undefined } as unknown as FunctionTool;
    const err = refusal(() => guardOpenAIAgent(agentWith(bare), { reads: ['bare'] }));
    expect(err.type).toBe('no_parameters_schema');
    expect(err.message).toMatch(/tool "bare" of agent "A" has no parameters schema/);
  });

  it('an agent whose tools are already wrapped (by this adapter or the AI SDK one)', () => {
    const wrapped = lookup();
    Object.defineProperty(wrapped, GUARDED, { value: true });
    const err = refusal(() => guardOpenAIAgent(agentWith(wrapped), { reads: ['lookup_order'] }));
    expect(err.type).toBe('already_guarded');
    expect(err.message).toMatch(/tool "lookup_order" of agent "A" is already guarded/);
  });

  it('a tool neither read nor write, a declared tool no agent has, a tool in a handoff agent', () => {
    expect(
      refusal(() => guardOpenAIAgent(agentWith(lookup(), pay()), { reads: ['lookup_order'] })).type,
    ).toBe('undeclared_tool');
    expect(
      refusal(() => guardOpenAIAgent(agentWith(lookup()), { reads: ['lookup_order', 'refund'] })).message,
    ).toMatch(/"refund" is declared but the agent has no such tool/);
    // A handoff's agent shares the run's guard: its tools must be declared too.
    const child = new Agent({ name: 'Billing', model: 'm', tools: [pay()] });
    const parent = new Agent({ name: 'Front', model: 'm', tools: [lookup()], handoffs: [child] });
    expect(refusal(() => guardOpenAIAgent(parent, { reads: ['lookup_order'] })).message).toMatch(
      /tool "pay" is neither in reads nor in writes/,
    );
  });

  it('a hosted (non-function) tool, naming it', () => {
    const hosted = { type: 'hosted_tool', name: 'web_search', providerData: {} } as never;
    const err = refusal(() => guardOpenAIAgent(agentWith(hosted), {}));
    expect(err.type).toBe('unsupported_tool');
    expect(err.message).toMatch(/tool "web_search" of agent "A" is a hosted_tool tool/);
  });

  it('a malformed spend option (the tenant, the output bound), before anything runs', () => {
    const tenant = refusal(() =>
      guardOpenAIAgent(agentWith(lookup()), { reads: ['lookup_order'], spend: { tenant: 'a b' } }),
    );
    expect(tenant.type).toBe('invalid_option');
    expect(tenant.message).toMatch(/^spend.tenant must be 1-64 letters/);
    const max = refusal(() =>
      guardOpenAIAgent(agentWith(lookup()), {
        reads: ['lookup_order'],
        spend: { tenant: 'acme', maxOutputTokens: 0 },
      }),
    );
    expect(max.message).toMatch(/^spend.maxOutputTokens must be an integer > 0, got 0/);
  });

  it('a traceLimit or approvalWaitMs out of range, refused as the AI SDK path refuses it', () => {
    for (const [options, message] of [
      [{ traceLimit: 0 }, 'traceLimit must be an integer > 0, got 0'],
      [{ traceLimit: 1.5 }, 'traceLimit must be an integer > 0, got 1.5'],
      [{ approvalWaitMs: -1 }, 'approvalWaitMs must be a number of ms > 0, got -1'],
    ] as const) {
      const err = refusal(() =>
        guardOpenAIAgent(agentWith(lookup()), { reads: ['lookup_order'], ...options }),
      );
      expect({ type: err.type, message: err.message }).toEqual({ type: 'invalid_option', message });
    }
  });

  it('the API used outside workflow code', () => {
    const t = tool({
      name: 'lookup_order',
      description: 'x',
      parameters: params as never,
      execute: async () => 'x',
    });
    const err = refusal(() => guardOpenAIAgent(agentWith(t as FunctionTool), { reads: ['lookup_order'] }));
    expect(err.type).toBe('not_in_workflow');
    expect(err.message).toMatch(/guardOpenAIAgent runs in workflow code/);
  });

  it('an SDK version outside the tested range (the worker plugin is not created)', () => {
    const versions: Record<string, string | null> = {
      '@temporalio/openai-agents': '1.23.0',
      '@openai/agents-core': '0.12.0',
    };
    const err = refusal(() => checkOpenAIAgentsVersions((n) => versions[n] ?? null));
    expect(err.type).toBe('unsupported_version');
    expect(err.message).toBe(
      '@openai/agents-core 0.12.0 is not a version agent-loop-guard/openai-agents is tested with (0.11.x): install @openai/agents-core@0.11.x',
    );
    versions['@openai/agents-core'] = null;
    expect(refusal(() => checkOpenAIAgentsVersions((n) => versions[n] ?? null)).message).toMatch(
      /@openai\/agents-core is not installed/,
    );
    // The installed ones are the tested ones.
    expect(() => checkOpenAIAgentsVersions()).not.toThrow();
    expect(() => new OpenAIAgentsGuardPlugin({ ledger: bundleLedger(), spendLimits: null })).not.toThrow();
  });

  it("a write's ledger lease (leaseMs) that is not a positive number of ms: the worker plugin is not created", () => {
    for (const leaseMs of [0, -5, Number.NaN, Infinity])
      expect(
        () => new OpenAIAgentsGuardPlugin({ ledger: bundleLedger(), spendLimits: null, leaseMs }),
      ).toThrow(`leaseMs: ledger lease must be a positive number of milliseconds, got ${leaseMs}`);
    expect(
      () => new OpenAIAgentsGuardPlugin({ ledger: bundleLedger(), spendLimits: null, leaseMs: 60_000 }),
    ).not.toThrow();
  });
  it("a write wrapped twice (by the plugin and in the worker's own activities): the worker is not configured", async () => {
    let paid = 0;
    const pay = async () => (paid += 1);
    const ledger = bundleLedger();
    const plugin = new OpenAIAgentsGuardPlugin({ ledger, spendLimits: null, writes: { pay } });
    const own = ledgerWrites(ledger, { pay });
    await expect(
      plugin.configureWorker({ taskQueue: 'never-polled', activities: own } as WorkerOptions),
    ).rejects.toThrow(
      /activity pay is also in the worker's own activities — it is wrapped by ledgerWrites there and by the plugin's writes: wrap each write once/,
    );
    // A guard activity shadowed by one of the worker's own is refused the same way.
    await expect(
      plugin.configureWorker({
        taskQueue: 'never-polled',
        activities: { agentLoopGuardVerifyResume: pay },
      } as WorkerOptions),
    ).rejects.toThrow(
      /activity agentLoopGuardVerifyResume is also in the worker's own activities — the plugin registers it/,
    );
    expect(paid).toBe(0);
  });
});

describe('in a workflow on the dev server', () => {
  let env: TestWorkflowEnvironment;
  let workflowBundle: { code: string };
  const bundlePlugins = () => [
    new OpenAIAgentsPlugin({
      modelProvider: new OpenAIProvider({ baseURL: 'http://127.0.0.1:1/v1', apiKey: 'k' }),
    }),
    new OpenAIAgentsGuardPlugin({ ledger: bundleLedger(), spendLimits: null }),
  ];
  beforeAll(async () => {
    env = await createTestEnv();
    workflowBundle = await bundleWorkflowCode({
      workflowsPath: require.resolve('./workflows/payments-agent'),
      plugins: bundlePlugins(),
      logger: new DefaultLogger('WARN'),
    });
  });
  afterAll(async () => {
    await env?.teardown();
  });

  it.each([
    ['doubleGuard', 'already_guarded'],
    ['declareUnknown', 'unknown_tool'],
  ])('%s: the workflow fails with %s, the model never called, no tool run', async (flag, type) => {
    const server = await startResponsesServer([{ call: 'lookup_order', args: { orderId: 'A-1' } }]);
    let lookups = 0;
    const plugins = [
      new OpenAIAgentsPlugin({ modelProvider: new OpenAIProvider({ baseURL: server.baseURL, apiKey: 'k' }) }),
      new OpenAIAgentsGuardPlugin({
        ledger: bundleLedger(),
        spendLimits: null,
        dataConverter: testDataConverter(),
      }),
    ];
    const taskQueue = uniqueTaskQueue('openai-agents-bad');
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowBundle,
      activities: { lookup_order: async () => (lookups += 1) },
      plugins,
    });
    const err = await worker.runUntil(
      env.client.workflow
        .execute('paymentsAgent', {
          taskQueue,
          workflowId: uniqueId('openai-agents-bad'),
          args: [{ prompt: 'x', [flag]: true }],
        })
        .catch((e: unknown) => e),
    );
    await server.close();
    expect(err).toBeInstanceOf(WorkflowFailedError);
    expect(((err as WorkflowFailedError).cause as ApplicationFailure).type).toBe(type);
    expect(server.requests()).toHaveLength(0);
    expect(lookups).toBe(0);
  });
});
