/**
 * Issue 37 item 4, "one setup story that cannot half-work", against the real dev server and a
 * local OpenAI-compatible server: an AI SDK agent's worker set up as docs/ai-sdk.md shows it
 * (`AiSdkPlugin` + `AgentLoopGuardPlugin({ aiSdk })`, no data converter of its own) answers the
 * real `agentctl stop` and `resume` on their merits. A worker and a client that do not share a
 * payload codec — the worker without one (the old hand wiring), agentctl with AGENT_CODEC=off,
 * a key on one side the other lacks, in both directions — get exit 5 naming the fix, never a
 * refusal (exit 3), and the stop is not applied: the run goes on as before (the search tool's
 * own counter reaches the step's second call, which a stop would have kept from running) — or,
 * when the worker cannot decrypt it, the stop waits on the server for a worker with the key.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { AiSdkPlugin } from '@temporalio/ai-sdk';
import { Client } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import { Worker } from '@temporalio/worker';
import { aiSdkTestBed } from './bundle';
import { statusQuery, type RunResult } from '../../common/contracts';
import { stopAgentRun } from '../../client/api';
import { AgentLoopGuardPlugin, guardActivities, PayloadCodecMismatchError } from '../../ai-sdk/worker';
import { CodecConfigError, dataConverterOf, loadPayloadCodec } from '../../codec';
import { OperatorRegistry } from '../../operators/registry';
import { waitFor } from '../helpers/run-inputs';
import { agentctl } from '../client/cli-helpers';
import { uniqueId, uniqueTaskQueue } from '../helpers/temporal-env';
import { agentSinks } from '../../worker/create-worker';

const key = () => randomBytes(32).toString('base64');
/** The test key ring (AGENT_CODEC_KEYS of temporal-env.ts), agentctl's by default. */
const TEST_KEYS = () => process.env.AGENT_CODEC_KEYS as string;
const OTHER_KEYS = `other:${key()}`;
/** The test keys plus a newer active key a worker with only the test keys lacks. */
const ROTATED_KEYS = () => `${TEST_KEYS()},newer:${key()}`;
const converterOf = (env: NodeJS.ProcessEnv): DataConverter => dataConverterOf(loadPayloadCodec(env));

describe('@temporalio/ai-sdk worker setup: agentctl stop/resume reach it, a codec mismatch is exit 5', () => {
  const bed = aiSdkTestBed('ai-sdk-setup-', require.resolve('./workflows/approval-agent'));

  const cliEnv = (extra: Record<string, string> = {}) => ({
    TEMPORAL_ADDRESS: process.env.TEMPORAL_TEST_ADDRESS as string,
    TEMPORAL_NAMESPACE: 'default',
    ...extra,
  });

  /**
   * A run of approvalAgent whose first search is held until `release()`: one step with two
   * searches, so a stop taken during the first keeps the second from running.
   * `wiring`: `plugin` (the docs' setup; its codec from `codecEnv`, else the process's) or
   * `hand` (the pre-issue-37 wiring: activities by hand, no data converter).
   */
  async function start(wiring: 'plugin' | 'hand', codecEnv: NodeJS.ProcessEnv = process.env) {
    const server = await bed.serve([
      {
        tool_calls: [
          { name: 'search_tickets', arguments: JSON.stringify({ query: 'disk full' }) },
          { name: 'search_tickets', arguments: JSON.stringify({ query: 'db-1' }) },
        ],
        usage: { prompt_tokens: 100, completion_tokens: 10 },
      },
      { content: 'found INC-0' },
    ]);
    const counts = { search_tickets: 0 };
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const searchTickets = async (query: string) => {
      counts.search_tickets += 1;
      if (counts.search_tickets === 1) await released;
      return [`INC-0: ${query} (closed)`];
    };
    const operators = OperatorRegistry.open();
    const modelPlugin = new AiSdkPlugin({
      modelProvider: createOpenAICompatible({ name: 'local', baseURL: server.baseURL }),
    });
    const taskQueue = uniqueTaskQueue('ai-sdk-setup');
    const worker = await Worker.create({
      connection: bed.env.nativeConnection,
      namespace: 'default',
      taskQueue,
      workflowBundle: bed.workflowBundle,
      ...(wiring === 'plugin'
        ? {
            activities: { searchTickets },
            plugins: [
              modelPlugin,
              new AgentLoopGuardPlugin({
                aiSdk: { ledger: bed.ledger, operators, spendLimits: null },
                dataConverter: converterOf(codecEnv),
                searchAttributes: 'skip',
              }),
            ],
          }
        : {
            activities: { searchTickets, ...guardActivities(bed.ledger, { operators, spendLimits: null }) },
            // By hand, the agentTelemetry sink too (docs/ai-sdk.md): the plugin registers it.
            sinks: agentSinks(),
            plugins: [modelPlugin],
          }),
    });
    // Started by a client with the worker's own codec (what its deployment's starter has).
    const starter = new Client({
      connection: bed.env.client.connection,
      namespace: 'default',
      dataConverter: wiring === 'plugin' ? converterOf(codecEnv) : {},
    });
    const workflowId = uniqueId('ai-sdk-setup');
    const running = worker.run();
    const handle = await starter.workflow.start('approvalAgent', {
      taskQueue,
      workflowId,
      args: [{ prompt: 'Look for disk tickets.', resumes: 1, resumeWaitMs: 30_000 }],
    });
    await waitFor(
      async () => counts.search_tickets,
      (n) => n === 1,
    );
    const stopWorker = async () => {
      worker.shutdown();
      await running;
    };
    return { handle, counts, release, workflowId, stopWorker, server };
  }

  it('the worker as the docs show it: npx agentctl stop and resume are answered on their merits', async () => {
    const { handle, counts, release, workflowId, stopWorker } = await start('plugin');
    try {
      const stop = await agentctl(['stop', workflowId, '--reason', 'runaway', '--json'], cliEnv());
      expect(stop.stderr).toBe('');
      expect(stop.code).toBe(0);
      expect(JSON.parse(stop.stdout)).toMatchObject({ outcome: 'accepted', accepted: true });
      release();
      await waitFor(
        () => handle.query(statusQuery),
        (s) => s.waitingForResume,
      );
      // The step's second search did not run.
      expect(counts.search_tickets).toBe(1);
      const resume = await agentctl(['resume', workflowId, '--json'], cliEnv());
      expect(resume.code).toBe(0);
      expect(JSON.parse(resume.stdout)).toMatchObject({ accepted: true });
      const out = (await handle.result()) as { run: RunResult; rounds: number };
      expect(out.run).toMatchObject({ terminal_state: 'COMPLETED' });
      expect(out.rounds).toBe(2);
      expect(counts.search_tickets).toBe(1);
    } finally {
      release();
      await stopWorker();
    }
  });

  it('a worker without a codec (wired by hand) and agentctl with one: exit 5 naming the plugin, the stop not applied', async () => {
    const { handle, counts, release, workflowId, stopWorker } = await start('hand');
    try {
      const stop = await agentctl(['stop', workflowId, '--reason', 'runaway'], cliEnv());
      expect(stop.code).toBe(5);
      expect(stop.stderr).toMatch(/payload codec mismatch: the run's worker has no payload codec/);
      expect(stop.stderr).toMatch(/AgentLoopGuardPlugin/);
      expect(stop.stderr).not.toMatch(/refused/i);
      expect((await handle.query(statusQuery)).phase).toBe('RUNNING');
      // Nothing was stopped: the step's second search runs once the first returns.
      release();
      const out = (await handle.result()) as { run: RunResult };
      expect(out.run.terminal_state).toBe('COMPLETED');
      expect(counts.search_tickets).toBe(2);
    } finally {
      release();
      await stopWorker();
    }
  });

  it('agentctl with AGENT_CODEC=off and a worker that encrypts: exit 5 before anything is sent', async () => {
    const { handle, counts, release, workflowId, stopWorker } = await start('plugin');
    try {
      const stop = await agentctl(
        ['stop', workflowId, '--reason', 'runaway'],
        cliEnv({ AGENT_CODEC: 'off', AGENT_CODEC_KEYS: '' }),
      );
      expect(stop.code).toBe(5);
      expect(stop.stderr).toMatch(/this client has no payload codec \(AGENT_CODEC=off\?\)/);
      expect(stop.stderr).toMatch(/the stop was not sent/);
      release();
      const out = (await handle.result()) as { run: RunResult };
      expect(out.run.terminal_state).toBe('COMPLETED');
      expect(counts.search_tickets).toBe(2);
    } finally {
      release();
      await stopWorker();
    }
  });

  it("the worker's key is not the client's: PayloadCodecMismatchError (client side), nothing sent", async () => {
    const { handle, counts, release, workflowId, stopWorker } = await start('plugin', {
      AGENT_CODEC_KEYS: OTHER_KEYS,
    });
    try {
      const err = await stopAgentRun(bed.env.client, workflowId, { actor: 'alice' }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(PayloadCodecMismatchError);
      expect(err).toMatchObject({ side: 'client', code: 'payload_codec_mismatch' });
      expect((err as Error).message).toMatch(/a key this client does not hold/);
      release();
      const out = (await handle.result()) as { run: RunResult };
      expect(out.run.terminal_state).toBe('COMPLETED');
      expect(counts.search_tickets).toBe(2);
    } finally {
      release();
      await stopWorker();
    }
  });

  it("the client's active key is not the worker's: exit 5 from the worker's failed workflow task", async () => {
    const { handle, release, workflowId, stopWorker } = await start('plugin');
    try {
      const stop = await agentctl(
        ['stop', workflowId, '--reason', 'runaway', '--confirm-timeout', '20'],
        cliEnv({ AGENT_CODEC_KEYS: ROTATED_KEYS() }),
      );
      expect(stop.code).toBe(5);
      expect(stop.stderr).toMatch(
        /the run's worker cannot decrypt what this client sends \(key id "newer"\)/,
      );
      expect(stop.stderr).toMatch(/the stop is not applied; it waits on the server/);
      expect(stop.stderr).not.toMatch(/refused/i);
      // The request waits for a worker with the key (a deployment's fix); this one never gets it.
      await handle.terminate('test: the stop waits for a worker with the key');
    } finally {
      release();
      await stopWorker();
    }
  });

  it("on a fresh machine the docs' worker creates the local dev server's key file (and only there)", () => {
    const saved = { ...process.env };
    const home = mkdtempSync(join(tmpdir(), 'ai-sdk-setup-home-'));
    try {
      delete process.env.AGENT_CODEC_KEYS;
      delete process.env.AGENT_CODEC_KEY_FILE;
      process.env.XDG_CONFIG_HOME = home;
      process.env.TEMPORAL_ADDRESS = 'temporal.example.com:7233';
      expect(() => new AgentLoopGuardPlugin({ aiSdk: { ledger: bed.ledger } })).toThrow(CodecConfigError);
      expect(existsSync(join(home, 'agent-loop-guard', 'codec-keys.json'))).toBe(false);
      process.env.TEMPORAL_ADDRESS = process.env.TEMPORAL_TEST_ADDRESS as string;
      const plugin = new AgentLoopGuardPlugin({ aiSdk: { ledger: bed.ledger } });
      expect(plugin.dataConverter.payloadCodecs).toHaveLength(1);
      expect(existsSync(join(home, 'agent-loop-guard', 'codec-keys.json'))).toBe(true);
    } finally {
      for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
      Object.assign(process.env, saved);
      rmSync(home, { recursive: true, force: true });
    }
  });
});
