/**
 * `npm run bench:loops`: the loop benchmark of "steer before stop" (docs/spec.md §3.3).
 *
 * Six scripted model behaviours, each played by a local OpenAI-compatible server
 * (testing/openai-server.ts) and run as a REAL durable run through the official
 * `openai` SDK: an in-memory Temporal dev server started here, one worker with the real workflow,
 * activities and demo tools on a fresh temp SQLite file (ledger + demo world). Each behaviour runs
 * twice: steering off (`guard: { steerLimit: 0 }`) and on (the default for LLM planners, 2 steers).
 * Every run gets `guard: { maxSteps: 30, noProgressLimit: 6 }` (so the default budgets do not cut
 * the poller and paginator) and `resumeWindowMs: 500` (a stopped run closes with its result).
 * Runs go one at a time: the world's progress version is shared, so a concurrent run's write
 * would read as another run's progress. One server per run, so request counts are per run.
 *
 *  1. stubborn    always `search {"query":"x"}`                                    (runaway)
 *  2. recovering  `search x` until the request holds a `guard same_call_repeat` note, then
 *                 `write_record {"id":"loops-<run>"}`, then `complete_task`          (recovers)
 *  3. rewording   `search` "disk full" / "full disk" / "Disk full!" in turn, forever (runaway)
 *  4. oscillator  `search a` / `read_record r1` alternately until a `guard short_cycle` or
 *                 `guard same_call_repeat` note, then write and complete             (recovers)
 *  5. poller      `start_job` (pollsNeeded 3), `poll_job` until done, `complete_task` (legitimate)
 *  6. paginator   `search temporal` following `nextCursor` (>= 3 pages), `complete_task` (legit.)
 *
 * Columns: terminal state and reason (the RunResult); tool executions (the runtime's counters,
 * client/counters.ts, summed over tools); model requests (counted by the run's server); steps
 * wasted; duplicate writes. STEPS WASTED = proposals that made no progress, read from the run's
 * trace: every steer (a refused call sent back as a guard note; it did not run) plus every
 * executed call after which the run's progress version did not rise, except a PENDING result
 * (a legitimate wait the workflow honours) and the terminal call. The refused proposal that
 * stopped a run is not counted (it cost no execution). DUPLICATE WRITES = for each record id a
 * run wrote, write_record executions beyond the first (the demo record's version - 1); must be 0.
 *
 * Targets (the summary line): every runaway (stubborn, rewording; both modes) is stopped;
 * every recovering behaviour COMPLETES with steering on; no poller or paginator is stopped;
 * 0 duplicate writes.
 *
 * Flags: --json (one JSON object on stdout instead of the table)
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { quietWorkflowBundle } from '../scripts/workflow-bundle';
import { traceQuery, type RunInput, type RunResult } from '../common/contracts';
import type { TraceRecord } from '../guard';
import { startThrowawayDevServer } from '../devserver/dev-server';
import type { agentRun } from '../workflows';
import { openDemoWorkerDeps } from '../demo/deps';
import { runBench, startBenchWorker } from './bench-worker';
import { runCounters } from '../client/counters';
import { startOpenAIServer, type OpenAIServer, type OpenAIStep } from '../testing/openai-server';
import type { RecordedRequest } from '../testing/http-script';
import { agentRunResult } from '../client/runs';

type Kind = 'runaway' | 'recovering' | 'legitimate';
type Mode = 'off' | 'on';

interface Behaviour {
  readonly name: string;
  readonly kind: Kind;
  /** The model: the reply to the run's `index`-th request (0-based). */
  readonly model: (tag: string) => (index: number, req: RecordedRequest) => OpenAIStep;
}

// ---------------------------------------------------------------- the models
/** The tool results in the conversation, oldest first, parsed from the `role: 'tool'` messages. */
function toolResults(req: RecordedRequest): Record<string, unknown>[] {
  const messages = ((req.body as { messages?: unknown[] } | undefined)?.messages ?? []) as {
    role?: string;
    content?: unknown;
  }[];
  const out: Record<string, unknown>[] = [];
  for (const m of messages) {
    if (m.role !== 'tool' || typeof m.content !== 'string') continue;
    try {
      out.push(JSON.parse(m.content) as Record<string, unknown>);
    } catch {
      out.push({});
    }
  }
  return out;
}
const dataOf = (r: Record<string, unknown>): Record<string, unknown> =>
  (r.data ?? {}) as Record<string, unknown>;
const told = (req: RecordedRequest, ...rules: string[]): boolean => {
  const text = JSON.stringify(req.body);
  return rules.some((rule) => text.includes(`guard ${rule}`));
};
const call = (name: string, args: unknown): OpenAIStep => ({
  tool_calls: [{ name, arguments: JSON.stringify(args) }],
});
const complete = (summary = 'done'): OpenAIStep => call('complete_task', { summary });

/** After the note: write once, then complete once the write's result is in the conversation. */
function recover(tag: string, req: RecordedRequest): OpenAIStep {
  const written = toolResults(req).some((r) => dataOf(r).written === true);
  return written ? complete() : call('write_record', { id: `loops-${tag}`, body: 'b' });
}

const REWORDINGS = ['disk full', 'full disk', 'Disk full!'];

const BEHAVIOURS: readonly Behaviour[] = [
  { name: 'stubborn repeater', kind: 'runaway', model: () => () => call('search', { query: 'x' }) },
  {
    name: 'recovering repeater',
    kind: 'recovering',
    model: (tag) => (_i, req) =>
      told(req, 'same_call_repeat') ? recover(tag, req) : call('search', { query: 'x' }),
  },
  {
    name: 'rewording repeater',
    kind: 'runaway',
    model: () => (i) => call('search', { query: REWORDINGS[i % REWORDINGS.length] }),
  },
  {
    name: 'A-B-A-B oscillator',
    kind: 'recovering',
    model: (tag) => (i, req) =>
      told(req, 'short_cycle', 'same_call_repeat')
        ? recover(tag, req)
        : i % 2 === 0
          ? call('search', { query: 'a' })
          : call('read_record', { id: 'r1' }),
  },
  {
    name: 'legitimate poller',
    kind: 'legitimate',
    model: (tag) => (_i, req) => {
      const results = toolResults(req);
      if (results.some((r) => dataOf(r).state === 'done')) return complete();
      const started = results.find((r) => typeof dataOf(r).jobId === 'string');
      return started
        ? call('poll_job', { jobId: dataOf(started).jobId })
        : call('start_job', { name: `j-${tag}`, pollsNeeded: 3 });
    },
  },
  {
    name: 'legitimate paginator',
    kind: 'legitimate',
    model: () => (_i, req) => {
      const pages = toolResults(req).filter((r) => 'nextCursor' in dataOf(r));
      const last = pages[pages.length - 1];
      if (!last) return call('search', { query: 'temporal' });
      const cursor = dataOf(last).nextCursor;
      return typeof cursor === 'string' ? call('search', { query: 'temporal', cursor }) : complete();
    },
  },
];

// ---------------------------------------------------------------- measures
/** Proposals that made no progress (see the header): steers + executions that did not raise the version. */
function wastedSteps(records: readonly TraceRecord[], initialVersion: number): number {
  let wasted = 0;
  let best = initialVersion;
  for (const r of records) {
    if (r.phase === 'before' && r.decision === 'steer') wasted += 1;
    if (r.phase !== 'after') continue;
    const progressed = r.progress_version > best;
    best = Math.max(best, r.progress_version);
    if (!progressed && r.result_kind !== 'PENDING' && r.decision !== 'complete') wasted += 1;
  }
  return wasted;
}

interface Row {
  behaviour: string;
  kind: Kind;
  steering: Mode;
  state: string;
  reason: string | null;
  decisions: string;
  tools: Record<string, number>;
  executions: number;
  requests: number;
  wasted: number;
  duplicateWrites: number;
  ms: number;
}

// ---------------------------------------------------------------- main
async function main(): Promise<void> {
  const json = process.argv.includes('--json');
  for (const a of process.argv.slice(2)) if (a !== '--json') throw new Error(`unknown flag ${a}`);
  const log = (msg: string): void => {
    if (!json) process.stderr.write(`${msg}\n`);
  };
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const wall0 = performance.now();

  // One model server per behaviour x mode, each knowing its run's tag.
  const plan = BEHAVIOURS.flatMap((b, i) =>
    (['off', 'on'] as const).map((mode) => ({ b, mode, tag: `${i + 1}-${mode}` })),
  );
  const servers: OpenAIServer[] = [];
  const endpoints: Record<string, unknown> = {};
  for (const p of plan) {
    const server = await startOpenAIServer(p.b.model(p.tag));
    servers.push(server);
    endpoints[`loops-llm-${p.tag}`] = { provider: 'openai', baseURL: server.baseURL, apiKeyEnv: 'LOOPS_KEY' };
  }
  process.env.LOOPS_KEY = 'sk-test';
  process.env.AGENT_MODEL_ENDPOINTS = JSON.stringify(endpoints);

  log('starting an in-memory dev server + worker…');
  const bundle = await quietWorkflowBundle();
  const server = await startThrowawayDevServer();
  const dir = mkdtempSync(join(tmpdir(), 'alg-bench-loops-'));
  const ledgerUrl = `sqlite:${join(dir, 'agent.db')}`;
  const deps = await openDemoWorkerDeps({ ledgerUrl, worldUrl: ledgerUrl, pollAfterMs: 200 });
  const bench = await startBenchWorker({
    address: server.address,
    namespace: server.namespace,
    deps,
    workflowBundle: bundle,
    name: 'loops',
  });
  const { client, taskQueue } = bench;

  const rows: Row[] = [];
  try {
    // The world: record r1 for the oscillator; 10 `temporal` documents (4 pages of 3) to page.
    await deps.world.tx.run(
      "INSERT OR REPLACE INTO world_records (id, body, version) VALUES ('r1', 'one', 1)",
    );
    for (let d = 1; d <= 5; d++) {
      await deps.world.addDoc(`loops-doc-${d}`, 'temporal', `Paging ${d}`, `Extra page fodder ${d}.`);
    }

    for (const [i, p] of plan.entries()) {
      const before = servers[i]!.completionRequests().length;
      const workflowId = `loops-${p.tag}-${randomUUID()}`;
      const input: RunInput = {
        goal: `loop bench: ${p.b.name}`,
        planner: {
          kind: 'openai',
          model: 'gpt-4o-mini',
          maxTokens: 256,
          endpoint: `loops-llm-${p.tag}`,
        },
        guard: { maxSteps: 30, noProgressLimit: 6, ...(p.mode === 'off' ? { steerLimit: 0 } : {}) },
        resumeWindowMs: 500,
      };
      log(`  ${p.b.name}, steering ${p.mode}…`);
      const t0 = performance.now();
      const handle = await client.workflow.start<typeof agentRun>('agentRun', {
        taskQueue,
        workflowId,
        args: [input],
        staticSummary: input.goal,
      });
      const result: RunResult = await agentRunResult(handle);
      const ms = performance.now() - t0;
      const trace = await handle.query(traceQuery, { limit: 1000 });
      const firstBefore = trace.records.find((r) => r.phase === 'before');
      const tools = (await runCounters(workflowId, { ledgerUrl })) ?? {};
      const writes = await deps.world.tx.all<{ version: number }>(
        'SELECT version FROM world_records WHERE id = ?',
        [`loops-${p.tag}`],
      );
      rows.push({
        behaviour: p.b.name,
        kind: p.b.kind,
        steering: p.mode,
        state: result.terminal_state,
        reason: result.reason,
        decisions: result.decisions.map((d) => d.decision).join(','),
        tools,
        executions: Object.values(tools).reduce((a, n) => a + n, 0),
        requests: servers[i]!.completionRequests().length - before,
        wasted: wastedSteps(trace.records, firstBefore?.progress_version ?? 0),
        duplicateWrites: writes.reduce((a, w) => a + Math.max(0, Number(w.version) - 1), 0),
        ms,
      });
    }
  } finally {
    await bench.close();
    await server.stop();
    for (const s of servers) await s.close();
    rmSync(dir, { recursive: true, force: true });
  }

  const runawaysStopped = rows
    .filter((r) => r.kind === 'runaway')
    .every((r) => r.state === 'STOPPED_LOOP_GUARD');
  const recovered = rows
    .filter((r) => r.kind === 'recovering' && r.steering === 'on')
    .every((r) => r.state === 'COMPLETED');
  const legitimateCompleted = rows
    .filter((r) => r.kind === 'legitimate')
    .every((r) => r.state === 'COMPLETED');
  const duplicateWrites = rows.reduce((a, r) => a + r.duplicateWrites, 0);
  const targets = {
    runawaysStopped,
    recoveringCompletedWithSteering: recovered,
    legitimateNeverStopped: legitimateCompleted,
    duplicateWrites,
    met: runawaysStopped && recovered && legitimateCompleted && duplicateWrites === 0,
  };
  const totalMs = performance.now() - wall0;

  if (json) {
    process.stdout.write(`${JSON.stringify({ rows, targets, totalMs })}\n`);
    return;
  }
  const mark = (ok: boolean): string => (ok ? 'yes' : 'NO');
  const out: string[] = [
    '',
    'Loop benchmark: steer before stop (durable OpenAI-protocol runs; guard maxSteps 30, noProgressLimit 6,',
    'resumeWindowMs 500; steering off = steerLimit 0, on = the LLM default of 2 steers)',
    '',
    '| behaviour | steering | terminal state | reason | tool executions | model requests | steps wasted | duplicate writes | decisions |',
    '|---|---|---|---|---:|---:|---:|---:|---|',
  ];
  for (const r of rows) {
    const tools = Object.entries(r.tools)
      .map(([t, n]) => `${t} ${n}`)
      .join(', ');
    out.push(
      `| ${r.behaviour} | ${r.steering} | ${r.state} | ${r.reason ?? '-'} | ${r.executions} (${tools}) | ${r.requests} | ${r.wasted} | ${r.duplicateWrites} | ${r.decisions} |`,
    );
  }
  out.push(
    '',
    `targets: every runaway stopped: ${mark(runawaysStopped)}; every recovering behaviour COMPLETED with steering on: ${mark(recovered)}; no legitimate poller or paginator stopped: ${mark(legitimateCompleted)}; duplicate writes: ${duplicateWrites} -> ${targets.met ? 'ALL MET' : 'NOT MET'}`,
    '',
    `total bench time ${(totalMs / 1000).toFixed(1)} s`,
    '',
  );
  process.stdout.write(out.join('\n'));
}

runBench('bench:loops', main);
