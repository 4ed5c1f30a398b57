/**
 * `npm run bench:tree`: does a tree of agents stay within its root's budget (docs/spec.md §7.14)?
 *
 * One REAL durable root run through the official `openai` SDK against a local Chat Completions
 * server that bills a fixed usage per request (the server's own request count is the bill). The
 * root's model spawns sub-agents one after another, each with an explicit cost budget of a fifth
 * of the root's; every child's model loops on cost (a new search each turn, forever), so only
 * its cost budget stops it. The root spawns again after each child ends, until its own budget is
 * spent. The guard is set so nothing else stops a run (maxSteps 1000, noProgressLimit 1000).
 *
 * Columns: the root's maxCostUsd; what the server billed in all (requests x the per-request
 * price); billed / cap; model requests (root, children); each child's reservation and spend
 * (its own requests' bill); the runs' terminal states and reasons. The target: billed <= cap.
 *
 * Flags: --cap USD (default 0.1), --json.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { quietWorkflowBundle } from '../scripts/workflow-bundle';
import { statusQuery, type RunInput, type RunResult } from '../common/contracts';
import { startThrowawayDevServer } from '../devserver/dev-server';
import type { agentRun } from '../workflows';
import { openDemoWorkerDeps } from '../demo/deps';
import { runBench, startBenchWorker } from './bench-worker';
import { startOpenAIServer } from '../testing/openai-server';
import type { RecordedRequest } from '../testing/http-script';
import { agentRunResult } from '../client/runs';

/** gpt-4o-mini list price (USD per million tokens), as planners/pricing.ts has it. */
const PRICE = { input: 0.15, output: 0.6 };
const USAGE = { prompt_tokens: 10_000, completion_tokens: 1_000 };
const PER_REQUEST = (USAGE.prompt_tokens * PRICE.input + USAGE.completion_tokens * PRICE.output) / 1e6;
const CHILDREN = 5;

type Msg = { role: string; content?: unknown };
const messages = (req: RecordedRequest): Msg[] => (req.body as { messages?: Msg[] }).messages ?? [];
const goalOf = (req: RecordedRequest): string =>
  String(messages(req).find((m) => m.role === 'user')?.content ?? '');
const toolCount = (req: RecordedRequest): number => messages(req).filter((m) => m.role === 'tool').length;

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const json = args.includes('--json');
  const capAt = args.indexOf('--cap');
  const cap = capAt >= 0 ? Number(args[capAt + 1]) : 0.1;
  if (!(cap > 0)) throw new Error('--cap USD must be a positive number');
  const log = (msg: string): void => {
    if (!json) process.stderr.write(`${msg}\n`);
  };
  Runtime.install({ logger: new DefaultLogger('ERROR') });

  /** Requests per run goal: `root`, `child-1` … (the server bills each one). */
  const billed = new Map<string, number>();
  const model = await startOpenAIServer((_i, req) => {
    const goal = goalOf(req);
    const who = goal.startsWith('TREE-CHILD-') ? goal.split(' ')[0]!.toLowerCase().slice(5) : 'root';
    billed.set(who, (billed.get(who) ?? 0) + 1);
    const n = toolCount(req);
    if (who !== 'root')
      // A child that loops on cost: a new search every turn, never done.
      return {
        tool_calls: [{ name: 'search', arguments: JSON.stringify({ query: `${who} q${n}` }) }],
        usage: USAGE,
      };
    const spawn = {
      goal: `TREE-CHILD-${n + 1} find everything`,
      tools: ['search'],
      budget: { maxCostUsd: cap / CHILDREN },
    };
    return { tool_calls: [{ name: 'spawn_agent', arguments: JSON.stringify(spawn) }], usage: USAGE };
  });
  process.env.TREE_BENCH_KEY = 'sk-test';
  process.env.AGENT_MODEL_ENDPOINTS = JSON.stringify({
    'tree-bench': { provider: 'openai', baseURL: model.baseURL, apiKeyEnv: 'TREE_BENCH_KEY' },
  });

  log('starting an in-memory dev server + worker…');
  const bundle = await quietWorkflowBundle();
  const server = await startThrowawayDevServer();
  const dir = mkdtempSync(join(tmpdir(), 'alg-bench-tree-'));
  const ledgerUrl = `sqlite:${join(dir, 'agent.db')}`;
  const deps = await openDemoWorkerDeps({ ledgerUrl, worldUrl: ledgerUrl });
  const bench = await startBenchWorker({
    address: server.address,
    namespace: server.namespace,
    deps,
    workflowBundle: bundle,
    name: 'tree',
  });
  let result: RunResult;
  let children: { workflowId: string; state: string; reason: string | null; reserved: number | null }[];
  const t0 = performance.now();
  try {
    const input: RunInput = {
      goal: 'TREE-ROOT delegate the search',
      planner: {
        kind: 'openai',
        model: 'gpt-4o-mini',
        maxTokens: USAGE.completion_tokens,
        endpoint: 'tree-bench',
      },
      subAgents: {},
      guard: { maxSteps: 1000, noProgressLimit: 1000, maxCostUsd: cap, maxMs: 600_000 },
      resumeWindowMs: 500,
    };
    log(
      `root: maxCostUsd ${cap}, ${CHILDREN} children of ${cap / CHILDREN} each, $${PER_REQUEST} a request…`,
    );
    const handle = await bench.client.workflow.start<typeof agentRun>('agentRun', {
      taskQueue: bench.taskQueue,
      workflowId: `tree-${randomUUID()}`,
      args: [input],
    });
    result = await agentRunResult(handle);
    const st = await handle.query(statusQuery);
    children = (st.children ?? []).map((c) => ({
      workflowId: c.workflowId,
      state: c.state,
      reason: c.reason,
      reserved: c.reserved.costUsd,
    }));
  } finally {
    await bench.close();
    await server.stop();
    await model.close();
    rmSync(dir, { recursive: true, force: true });
  }
  const ms = performance.now() - t0;
  const requests = [...billed.values()].reduce((a, n) => a + n, 0);
  const total = requests * PER_REQUEST;
  const row = {
    cap,
    billedUsd: Number(total.toFixed(6)),
    ratio: Number((total / cap).toFixed(3)),
    requests,
    rootRequests: billed.get('root') ?? 0,
    children: children.map((c, i) => ({
      ...c,
      requests: billed.get(`child-${i + 1}`) ?? 0,
      billedUsd: Number(((billed.get(`child-${i + 1}`) ?? 0) * PER_REQUEST).toFixed(6)),
    })),
    root: { state: result.terminal_state, reason: result.reason },
    holds: total <= cap + 1e-12,
    ms: Math.round(ms),
  };
  if (json) {
    process.stdout.write(`${JSON.stringify(row)}\n`);
    return;
  }
  const out = [
    '',
    `Agent tree vs its root's budget (one durable OpenAI-protocol root, ${CHILDREN} cost-looping children of cap/${CHILDREN} each)`,
    '',
    '| root maxCostUsd | billed (server) | billed / cap | requests (root + children) | root ends | holds |',
    '|---:|---:|---:|---:|---|---|',
    `| ${cap} | ${row.billedUsd} | ${row.ratio} | ${requests} (${row.rootRequests} + ${requests - row.rootRequests}) | ${row.root.state} ${row.root.reason ?? ''} | ${row.holds ? 'yes' : 'NO'} |`,
    '',
    '| child | reserved USD | billed USD | requests | ends |',
    '|---|---:|---:|---:|---|',
    ...row.children.map(
      (c, i) =>
        `| ${i + 1} | ${c.reserved ?? '-'} | ${c.billedUsd} | ${c.requests} | ${c.state} ${c.reason ?? ''} |`,
    ),
    '',
    `(${Math.round(ms / 100) / 10} s)`,
    '',
  ];
  process.stdout.write(out.join('\n'));
}

runBench('bench:tree', main);
