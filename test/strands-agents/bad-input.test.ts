/**
 * agent-loop-guard/strands-agents bad input: each wrong use is refused before anything runs,
 * with a message naming the fix (a non-retryable failure, so a workflow fails with it instead of
 * retrying its task). In a workflow on the dev server, the model is never called.
 */
import { bundleLedger } from '../helpers/bundle-ledger';
import { StrandsPlugin, TemporalAgent, workflow as strands } from '@temporalio/strands-agents';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, DefaultLogger, Worker } from '@temporalio/worker';
import { z } from 'zod';
import { guardStrandsAgent } from '../../strands-agents';
import { checkStrandsVersions, StrandsGuardPlugin } from '../../strands-agents/worker';
import { GUARDED } from '../../core/framework-types';
import { createTestEnv, testDataConverter, uniqueId, uniqueTaskQueue } from '../helpers/temporal-env';
import { OpenAIModel } from './openai-model';
import { startModelServer } from './model-server';

const lookup = () =>
  strands.activityAsTool('lookup_order', {
    description: 'Look up.',
    inputSchema: z.object({ orderId: z.string() }),
  });
const pay = () =>
  strands.activityAsTool('pay', { description: 'Pay.', inputSchema: z.object({ orderId: z.string() }) });
const agentWith = (...tools: ReturnType<typeof lookup>[]) =>
  new TemporalAgent({ model: 'openai', tools, printer: false });

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

describe('guardStrandsAgent refuses', () => {
  it('a write without an operation-key rule, naming the tool', () => {
    const err = refusal(() =>
      guardStrandsAgent(agentWith(lookup(), pay()), {
        reads: ['lookup_order'],
        writes: { pay: {} as never },
      }),
    );
    expect(err.type).toBe('write_without_operation_key');
    expect(err.message).toMatch(
      /^write tool "pay" has no operation-key rule: give writes.pay = \{ operationKey/,
    );
  });

  it('a tool without an input schema (activityAsTool without inputSchema), naming the fix', () => {
    const bare = strands.activityAsTool('bare', { description: 'No schema.' });
    const err = refusal(() => guardStrandsAgent(agentWith(bare), { reads: ['bare'] }));
    expect(err.type).toBe('no_input_schema');
    expect(err.message).toMatch(
      /tool "bare" has no input schema: give it one \(activityAsTool\(name, \{ inputSchema/,
    );
  });

  it('a tool without arguments (inputSchema z.object({})) is not taken for a tool without a schema', () => {
    const now = strands.activityAsTool('now', { description: 'The time.', inputSchema: z.object({}) });
    // Outside a workflow the last check refuses it: every check before, the schema's included, passed.
    expect(refusal(() => guardStrandsAgent(agentWith(now), { reads: ['now'] })).type).toBe('not_in_workflow');
  });

  it('a tool already guarded (by this adapter or another)', () => {
    const wrapped = lookup();
    Object.defineProperty(wrapped, GUARDED, { value: true });
    const err = refusal(() => guardStrandsAgent(agentWith(wrapped), { reads: ['lookup_order'] }));
    expect(err.type).toBe('already_guarded');
    expect(err.message).toMatch(/tool "lookup_order" is already guarded by agent-loop-guard/);
  });

  it('a tool neither read nor write, a declared tool the agent has not, something that is not an agent', () => {
    expect(
      refusal(() => guardStrandsAgent(agentWith(lookup(), pay()), { reads: ['lookup_order'] })).type,
    ).toBe('undeclared_tool');
    expect(
      refusal(() => guardStrandsAgent(agentWith(lookup()), { reads: ['lookup_order', 'refund'] })).message,
    ).toMatch(/"refund" is declared but the agent has no such tool/);
    expect(refusal(() => guardStrandsAgent({}, {})).type).toBe('invalid_option');
  });

  it('an agent with MCP clients (their tools join it after the guard, unwrapped)', () => {
    const agent = Object.assign(agentWith(lookup()), { _mcpClients: [{}] });
    const err = refusal(() => guardStrandsAgent(agent, { reads: ['lookup_order'] }));
    expect(err.type).toBe('unsupported_tool');
    expect(err.message).toMatch(/has MCP clients: .* give those tools as activityAsTool tools instead/);
  });

  it('a malformed spend option, before anything runs', () => {
    const tenant = refusal(() =>
      guardStrandsAgent(agentWith(lookup()), { reads: ['lookup_order'], spend: { tenant: 'a b' } }),
    );
    expect(tenant.type).toBe('invalid_option');
    expect(tenant.message).toMatch(/^spend.tenant must be 1-64 letters/);
  });

  it('the API used outside workflow code', () => {
    const err = refusal(() => guardStrandsAgent(agentWith(lookup()), { reads: ['lookup_order'] }));
    expect(err.type).toBe('not_in_workflow');
    expect(err.message).toMatch(/guardStrandsAgent runs in workflow code/);
  });

  it('an SDK version outside the tested range (the worker plugin is not created)', () => {
    const versions: Record<string, string | null> = {
      '@temporalio/strands-agents': '1.23.0',
      '@strands-agents/sdk': '1.20.0',
    };
    const err = refusal(() => checkStrandsVersions((n) => versions[n] ?? null));
    expect(err.type).toBe('unsupported_version');
    expect(err.message).toBe(
      '@strands-agents/sdk 1.20.0 is not a version agent-loop-guard/strands-agents is tested with (1.19.x): install @strands-agents/sdk@1.19.x',
    );
    versions['@strands-agents/sdk'] = null;
    expect(refusal(() => checkStrandsVersions((n) => versions[n] ?? null)).message).toMatch(
      /@strands-agents\/sdk is not installed: install @strands-agents\/sdk@1.19.x/,
    );
    // The installed ones are the tested ones.
    expect(() => checkStrandsVersions()).not.toThrow();
    expect(() => new StrandsGuardPlugin({ ledger: bundleLedger(), spendLimits: null })).not.toThrow();
  });
});

describe('in a workflow on the dev server', () => {
  let env: TestWorkflowEnvironment;
  let workflowBundle: { code: string };
  const strandsPluginOf = (baseURL: string) =>
    new StrandsPlugin({
      models: { openai: () => new OpenAIModel({ modelId: 'm', apiKey: 'k', clientConfig: { baseURL } }) },
    });
  beforeAll(async () => {
    env = await createTestEnv();
    workflowBundle = await bundleWorkflowCode({
      workflowsPath: require.resolve('./workflows/strands-agent'),
      plugins: [
        strandsPluginOf('http://127.0.0.1:1/v1'),
        new StrandsGuardPlugin({ ledger: bundleLedger(), spendLimits: null }),
      ],
      logger: new DefaultLogger('WARN'),
    });
  }, 120_000);
  afterAll(async () => {
    await env?.teardown();
  });

  it.each([
    ['twice', 'already_guarded'],
    ['unknown', 'unknown_tool'],
    ['no_key', 'write_without_operation_key'],
    ['no_schema', 'no_input_schema'],
  ])('%s: the workflow fails with %s, the model never called, no tool run', async (bad, type) => {
    const server = await startModelServer([{ call: 'lookup_order', args: { orderId: 'A-1' } }]);
    let lookups = 0;
    const taskQueue = uniqueTaskQueue('strands-bad');
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowBundle,
      activities: { lookup_order: async () => (lookups += 1) },
      plugins: [
        strandsPluginOf(server.baseURL),
        new StrandsGuardPlugin({
          ledger: bundleLedger(),
          spendLimits: null,
          dataConverter: testDataConverter(),
        }),
      ],
    });
    const err = await worker.runUntil(
      env.client.workflow
        .execute('strandsAgent', {
          taskQueue,
          workflowId: uniqueId('strands-bad'),
          args: [{ prompt: 'x', bad }],
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
