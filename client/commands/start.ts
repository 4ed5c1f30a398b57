/** `agentctl start`: start an agent run (scripted, Anthropic, OpenAI or AI SDK planner). */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Command, Option } from 'commander';
import { runInputSchema, WORKFLOW_ID_PREFIX, type RunInput } from '../../common/contracts';
import { ReplayFormatError } from '../../guard';
import { loadReplayFile } from '../replay';
import { jsonBytes, MAX_PAYLOAD_BYTES } from '../../common/payload-limits';
import { ledgerUrlFromEnv, openLedger } from '../../storage/ledger';
import { PayloadStore } from '../../storage/payloads';
import { blockedCallText, CliError, Exit, formatCounters, json, keyValues } from '../format';
import { settledOutcome, startRun, type RunOutcome } from '../runs';
import type { Counters } from '../counters';
import type { Connected } from '../connect';
import { checkTaskQueueName, noWorkerMessage, placeOf, queueWorkers, watchForWorker } from '../workers';
import {
  budgetOption,
  nonNegativeInt,
  positiveInt,
  positiveNumber,
  runLink,
  countersOf,
  type Ctx,
} from './common';

interface StartOpts {
  planner: 'scripted' | 'anthropic' | 'openai' | 'ai-sdk';
  goal?: string;
  script?: string;
  live?: boolean;
  model?: string;
  endpoint?: string;
  system?: string;
  contextTokens?: number;
  plannerTimeout?: number;
  maxOutputTokens?: number;
  textReplyLimit?: number;
  maxSteps?: number;
  maxMs?: number;
  maxTokens?: number;
  maxCostUsd?: number;
  sameCallLimit?: number;
  steerLimit?: number;
  noProgressLimit?: number;
  maxWaitPolls?: number;
  resumeWindowMs?: number;
  tools?: string[];
  subAgents?: boolean;
  maxDepth?: number;
  maxChildren?: number;
  tenant?: string;
  conversation?: boolean;
  idleTimeout?: number;
  id?: string;
  taskQueue?: string;
  /** false with --no-worker-check. */
  workerCheck?: boolean;
  wait?: boolean;
  timeout: number;
  json?: boolean;
}

/**
 * Runs `start` with the worker's payload store (LEDGER_URL) when a scripted input is above the
 * payload limit (its calls go by reference), without one otherwise.
 */
async function withScriptStore<T>(
  input: RunInput,
  start: (payloads: PayloadStore | null) => Promise<T>,
): Promise<T> {
  if (input.planner.kind !== 'scripted' || jsonBytes(input) <= MAX_PAYLOAD_BYTES) return start(null);
  const ledger = await openLedger(ledgerUrlFromEnv());
  try {
    return await start(PayloadStore.over(ledger));
  } finally {
    await ledger.close();
  }
}

/** Builds the workflow input from the options (exit 2 on anything malformed). */
export function buildRunInput(o: StartOpts): RunInput {
  const guard: Record<string, number> = {};
  let input: Record<string, unknown>;
  if (o.planner === 'scripted') {
    if (!o.script)
      throw new CliError(
        Exit.USAGE,
        'start: --planner scripted needs --script FILE (a replay-format JSON file)',
      );
    if (o.contextTokens !== undefined)
      throw new CliError(
        Exit.USAGE,
        'start: --context-tokens is for the LLM planners, not --planner scripted',
      );
    if (o.plannerTimeout !== undefined || o.maxOutputTokens !== undefined || o.textReplyLimit !== undefined)
      throw new CliError(
        Exit.USAGE,
        'start: --planner-timeout, --max-output-tokens and --text-reply-limit are for the LLM planners, not --planner scripted',
      );
    let file;
    let raw: unknown;
    try {
      file = loadReplayFile(o.script);
      raw = JSON.parse(readFileSync(o.script, 'utf8')) as unknown;
    } catch (err) {
      if (err instanceof ReplayFormatError) throw new CliError(Exit.USAGE, `start: ${err.message}`);
      throw err;
    }
    // The workflow takes the file's own config, completed keys and initial version; flags win.
    input = {
      goal: o.goal ?? `scripted run of ${file.name ?? o.script}`,
      planner: { kind: 'scripted', script: raw, live: o.live === true },
    };
  } else {
    if (o.script)
      throw new CliError(Exit.USAGE, `start: --script is for --planner scripted, not ${o.planner}`);
    if (o.live)
      throw new CliError(
        Exit.USAGE,
        '--live is for --planner scripted (LLM planners always use the real tools)',
      );
    if (!o.goal) throw new CliError(Exit.USAGE, `start: --planner ${o.planner} needs --goal TEXT`);
    // The endpoint's provider (worker configuration) picks the AI SDK package: no default fits.
    if (o.planner === 'ai-sdk' && (!o.endpoint || !o.model))
      throw new CliError(
        Exit.USAGE,
        'start: --planner ai-sdk needs --endpoint NAME (a model endpoint configured on the worker) and --model NAME',
      );
    input = {
      goal: o.goal,
      planner: {
        kind: o.planner,
        ...(o.model ? { model: o.model } : {}),
        ...(o.endpoint ? { endpoint: o.endpoint } : {}),
        ...(o.system ? { system: o.system } : {}),
        ...(o.contextTokens !== undefined ? { contextTokens: o.contextTokens } : {}),
        ...(o.maxOutputTokens !== undefined ? { maxTokens: o.maxOutputTokens } : {}),
      },
    };
    // One request policy: the model's time per request, inside the plan activity's.
    if (o.plannerTimeout !== undefined) input.timeouts = { plannerRequestMs: o.plannerTimeout * 1000 };
    if (o.textReplyLimit !== undefined) input.textReplyLimit = o.textReplyLimit;
  }
  const flags: Record<string, number | undefined> = {
    maxSteps: o.maxSteps,
    maxMs: o.maxMs,
    maxTokens: o.maxTokens,
    maxCostUsd: o.maxCostUsd,
    sameCallLimit: o.sameCallLimit,
    steerLimit: o.steerLimit,
    noProgressLimit: o.noProgressLimit,
    maxWaitPolls: o.maxWaitPolls,
  };
  for (const [k, v] of Object.entries(flags)) if (v !== undefined) guard[k] = v;
  input.guard = guard;
  if (o.resumeWindowMs !== undefined) input.resumeWindowMs = o.resumeWindowMs;
  if (o.tools) input.tools = o.tools;
  if ((o.maxDepth !== undefined || o.maxChildren !== undefined) && !o.subAgents)
    throw new CliError(Exit.USAGE, 'start: --max-depth and --max-children go with --sub-agents');
  if (o.subAgents)
    input.subAgents = {
      ...(o.maxDepth !== undefined ? { maxDepth: o.maxDepth } : {}),
      ...(o.maxChildren !== undefined ? { maxChildren: o.maxChildren } : {}),
    };
  if (o.tenant !== undefined) input.tenant = o.tenant;
  if (o.idleTimeout !== undefined && !o.conversation)
    throw new CliError(Exit.USAGE, 'start: --idle-timeout goes with --conversation');
  if (o.conversation)
    input.conversation =
      o.idleTimeout !== undefined ? { idleTimeoutMs: Math.round(o.idleTimeout * 1000) } : {};
  const parsed = runInputSchema.safeParse(input);
  if (!parsed.success) {
    const problems = parsed.error.issues
      .map((i) => `${i.path.join('.') || '(input)'}: ${i.message}`)
      .join('; ');
    throw new CliError(Exit.USAGE, `start: invalid run input: ${problems}`);
  }
  return input as RunInput;
}

/** Human summary of a settled run. */
export function formatOutcome(
  id: string,
  outcome: RunOutcome,
  counters: Counters | null,
  link: string,
): string {
  const r = outcome.report;
  return keyValues([
    ['run', id],
    ['state', outcome.terminal_state],
    ['reason', outcome.reason],
    ['executed', outcome.executed],
    ['cached', outcome.cached],
    ['stopped at', outcome.stopped_at],
    ['ended', outcome.ended],
    ['summary', outcome.summary],
    ['final message', outcome.final_message],
    ['blocked call', blockedCallText(r)],
    ['unmet', r?.unmet_precondition],
    ['resume when', r?.resume_condition],
    ['next action', r?.next_allowed_action],
    ['counters', formatCounters(counters)],
    ['UI', link],
  ]);
}

/** `--no-progress-limit <n>` is a number, not commander's negation of `--progress-limit`. */
function noProgressLimitOption(): Option {
  const opt = new Option(
    '--no-progress-limit <n>',
    'calls without progress before a stop (default 3)',
  ).argParser(positiveInt);
  opt.negate = false;
  return opt;
}

/** Says on stderr, once, that no worker polls `taskQueue` and how to start one (a failed look says nothing). */
async function warnIfNoWorker(ctx: Ctx, c: Connected, taskQueue: string): Promise<void> {
  const workers = await queueWorkers(c, taskQueue).catch(() => null);
  if (workers && workers.live.length === 0)
    ctx.io.err(
      `agentctl: ${noWorkerMessage(placeOf(c, taskQueue), workers)}. The run waits until a worker polls it.\n`,
    );
}

/**
 * Runs `wait` while watching the run's queue: no worker there is said once on stderr (naming the
 * queue and how to start one), a worker that then appears too; the wait itself goes on.
 */
async function waitTellingWorkers<T>(
  ctx: Ctx,
  c: Connected,
  taskQueue: string,
  watch: boolean,
  wait: () => Promise<T>,
): Promise<T> {
  if (!watch) return wait();
  const abort = new AbortController();
  const watching = watchForWorker(c, taskQueue, abort.signal, {
    onMissing: (m) => ctx.io.err(`agentctl: ${m}. The run waits until a worker polls it.\n`),
    onAppeared: (p) =>
      ctx.io.err(
        `agentctl: a worker now polls task queue "${taskQueue}" (${p.map((x) => x.identity).join(', ')}); the run goes on.\n`,
      ),
  });
  try {
    return await wait();
  } finally {
    abort.abort();
    await watching;
  }
}

/** The `start` command. */
export function startCommand(ctx: Ctx): Command {
  return new Command('start')
    .description('Start an agent run')
    .addOption(
      new Option('--planner <kind>', 'planner')
        .choices(['scripted', 'anthropic', 'openai', 'ai-sdk'])
        .default('scripted'),
    )
    .option('--goal <text>', 'the goal (required for LLM planners)')
    .option('--script <file>', 'replay-format JSON file the scripted planner proposes from (fixture mode)')
    .option(
      '--live',
      "scripted planner: the real (demo) tools answer instead of the script's fixture results",
    )
    .option('--model <name>', 'LLM planner model')
    .option(
      '--endpoint <name>',
      "name of a model endpoint configured on the worker (AGENT_MODEL_ENDPOINTS, e.g. a local vLLM); default the provider's own (required for --planner ai-sdk)",
    )
    .option('--system <text>', 'LLM system prompt')
    .option(
      '--context-tokens <n>',
      "LLM planner: the model's context window in tokens (planner.contextTokens; ~3 characters a token); default the model's known window, else a conservative one",
      positiveInt,
    )
    .option(
      '--planner-timeout <seconds>',
      'LLM planner: how long the model may take to answer one request (timeouts.plannerRequestMs; default 110 s); the SDK retries nothing, the plan activity retries up to 4 times. Give a model on a CPU more',
      positiveInt,
    )
    .option(
      '--max-output-tokens <n>',
      "LLM planner: the reply's output-token limit (planner.maxTokens; default 1024); a reply cut off at it is asked again once with twice the limit, then the run stops model_output_truncated",
      positiveInt,
    )
    .option(
      '--text-reply-limit <n>',
      'LLM planner: replies without a tool call the model is told about before the run ends PARTIAL model_stopped (default 2)',
      nonNegativeInt,
    )
    .addOption(budgetOption('maxSteps', 'max'))
    .addOption(budgetOption('maxMs', 'max'))
    .addOption(budgetOption('maxTokens', 'max'))
    .addOption(budgetOption('maxCostUsd', 'max'))
    .option('--same-call-limit <n>', 'identical calls allowed in a window (default 2)', positiveInt)
    .option(
      '--steer-limit <n>',
      'refusals by a repeat rule told to the model instead of stopping the run (default 2 for LLM planners, 0 for scripted; 0: every refusal stops)',
      nonNegativeInt,
    )
    .addOption(noProgressLimitOption())
    .addOption(budgetOption('maxWaitPolls', 'max'))
    .option(
      '--resume-window-ms <ms>',
      'how long a stopped run waits for resume (default 7 days)',
      positiveInt,
    )
    .option(
      '--tools <names>',
      'comma-separated tools the run may use (default: every tool the worker hosts)',
      (v: string) =>
        v
          .split(',')
          .map((t) => t.trim())
          .filter(Boolean),
    )
    .option('--sub-agents', 'let the planner delegate with spawn_agent (docs/spec.md §7.14)')
    .option('--max-depth <n>', 'with --sub-agents: depth limit of the agent tree (default 3)', positiveInt)
    .option('--max-children <n>', 'with --sub-agents: children one run may spawn (default 16)', positiveInt)
    .option(
      '--tenant <name>',
      'who pays for the model calls: the tenant whose spend limit applies (default "default")',
    )
    .option(
      '--conversation',
      'a conversation with a person: ask_human and text replies wait for `agentctl send`',
    )
    .option(
      '--idle-timeout <seconds>',
      'with --conversation: end after this long without a message',
      positiveNumber,
    )
    .option('--id <workflowId>', 'workflow id (default agent-run-<uuid>)')
    .option('--task-queue <queue>', 'task queue (default TEMPORAL_TASK_QUEUE or agent-loop-guard)')
    .option(
      '--no-worker-check',
      'do not look whether a worker polls the task queue (by default a start on a queue nobody polls says so on stderr)',
    )
    .option(
      '--wait',
      'wait until the run completes or stops (waiting for resume), then print the outcome; says so once if no worker polls the task queue, and keeps waiting',
    )
    .option('--timeout <seconds>', 'with --wait: give up after this long', positiveInt, 300)
    .option('--json', 'machine-readable output')
    .action(async (o: StartOpts) => {
      const input = buildRunInput(o);
      if (o.taskQueue !== undefined) checkTaskQueueName(o.taskQueue, 'start: --task-queue');
      const c = await ctx.connect();
      const workflowId = o.id ?? `${WORKFLOW_ID_PREFIX}-${randomUUID()}`;
      const taskQueue = o.taskQueue ?? c.taskQueue;
      const handle = await withScriptStore(input, (payloads) =>
        startRun(c.client, { workflowId, taskQueue, input, ...(payloads ? { payloads } : {}) }),
      );
      const link = runLink(ctx, c, workflowId);
      if (!o.wait) {
        // A run on a queue nobody polls would wait silently: it is started (a queue keeps it
        // until a worker comes, as Temporal does), and the person is told whose worker to start
        // (a misspelt queue has none either).
        if (o.workerCheck !== false) await warnIfNoWorker(ctx, c, taskQueue);
        if (o.json)
          ctx.io.out(
            json({
              workflow_id: workflowId,
              run_id: handle.firstExecutionRunId,
              task_queue: taskQueue,
              ui: link,
            }),
          );
        else
          ctx.io.out(
            `started ${workflowId} on task queue ${taskQueue}\n` +
              `  UI:     ${link}\n` +
              `  follow: agentctl watch ${workflowId}\n`,
          );
        return;
      }
      const { outcome } = await waitTellingWorkers(ctx, c, taskQueue, o.workerCheck !== false, () =>
        settledOutcome(handle, { timeoutMs: o.timeout * 1000 }),
      );
      const counters = await countersOf(ctx, workflowId);
      if (o.json) ctx.io.out(json({ ...outcome, workflow_id: workflowId, counters }));
      else ctx.io.out(formatOutcome(workflowId, outcome, counters, link));
    });
}
