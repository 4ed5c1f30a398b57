/**
 * `npm run demo [-- --once]`: the whole system on one machine in well under a minute.
 *
 * Installs the Temporal CLI if missing, reuses a Temporal server answering on
 * TEMPORAL_ADDRESS (default localhost:7233) or starts the dev server (UI on port + 1000,
 * 8233), starts an in-process worker over a fresh demo database (data/demo-<timestamp>.db),
 * and runs four scripted agents in live mode (the real demo tools answer):
 *
 *   a. a research agent stuck in a search loop     → STOPPED_LOOP_GUARD same_call_repeat
 *   b. a notifier that re-plans the same page      → the page is sent once
 *   c. a deploy agent without write permission     → NEEDS_HUMAN; an unchanged resume is
 *      refused; after the permission is granted the resume is accepted and it COMPLETES
 *      without repeating its completed write
 *   d. a polling job                               → COMPLETED after honoured waits
 *
 * `--once` stops everything at the end (exit 0 when every scenario ended as expected);
 * otherwise server and worker keep running until Ctrl-C. `--data-dir DIR` puts the demo
 * database elsewhere (default ./data).
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { WORKFLOW_TYPE, type RunInput } from '../common/contracts';
import { SEARCH_ATTRIBUTES } from '../common/search-attributes';
import { startDevServer, type DevServerHandle } from '../scripts/dev-server';
import { ensureTemporalCli, PROJECT_ROOT } from '../scripts/temporal-cli';
import { createAgentWorker, openWorkerDeps, type WorkerDeps } from '../worker/create-worker';
import {
  DEFAULT_TASK_QUEUE,
  DEFAULT_TEMPORAL_ADDRESS,
  loadConnectionOptions,
  readWorkerEnv,
} from '../worker/env';
import { traceLine } from './commands/inspect';
import { sendResume } from './commands/control';
import { formatCounters, table, uiBaseFor, uiLink } from './format';
import { followRun, settledOutcome, type RunOutcome } from './runs';

const SCRIPTS_DIR = join(PROJECT_ROOT, 'demo', 'scripts');

/** What one scenario ended with. */
interface ScenarioResult {
  readonly key: string;
  readonly title: string;
  readonly workflowId: string;
  readonly state: string;
  readonly reason: string | null;
  readonly counters: Record<string, number>;
  readonly ok: boolean;
  readonly check: string;
}

const say = (line = ''): void => void process.stdout.write(`${line}\n`);

function loadScript(name: string): unknown {
  return JSON.parse(readFileSync(join(SCRIPTS_DIR, `${name}.json`), 'utf8')) as unknown;
}

/** Reuses a server answering at `address` (with the search attributes), else null. */
async function probeServer(address: string, namespace: string): Promise<boolean> {
  let conn: Connection | undefined;
  try {
    conn = await Connection.connect({ address, connectTimeout: 1_500 });
    const res = await conn.operatorService.listSearchAttributes({ namespace });
    const have = Object.keys(res.customAttributes ?? {});
    const missing = Object.keys(SEARCH_ATTRIBUTES).filter((n) => !have.includes(n));
    if (missing.length) {
      throw new Error(
        `the Temporal server at ${address} answers but lacks the search attributes ${missing.join(', ')}; ` +
          'stop it and run `npm run dev:server` (it registers them), or set TEMPORAL_ADDRESS to another port',
      );
    }
    return true;
  } catch (err) {
    if ((err as Error).message.startsWith('the Temporal server')) throw err;
    return false;
  } finally {
    await conn?.close().catch(() => undefined);
  }
}

function compactReport(o: RunOutcome): string {
  const r = o.report;
  if (!r) return 'none (COMPLETED)';
  const parts = [
    `${r.terminal_state}/${r.guard_reason}`,
    r.blocked_call ? `blocked ${r.blocked_call.tool} ${r.blocked_call.fingerprint}` : null,
    r.unmet_precondition ? `unmet "${r.unmet_precondition}"` : null,
    r.resume_condition ? `resume when "${r.resume_condition}"` : null,
    `completed [${r.completed.join(', ')}]`,
    `steps ${r.steps}`,
    `next ${r.next_allowed_action}`,
  ];
  return parts.filter(Boolean).join(' · ');
}

async function main(argv: readonly string[]): Promise<number> {
  const once = argv.includes('--once');
  const dirFlag = argv.indexOf('--data-dir');
  const dataDir =
    dirFlag >= 0 && argv[dirFlag + 1] ? (argv[dirFlag + 1] as string) : join(PROJECT_ROOT, 'data');
  const t0 = Date.now();
  try {
    Runtime.install({ logger: new DefaultLogger('WARN') });
  } catch {
    // Already installed.
  }
  const appEnv = readWorkerEnv();
  const { connectionOptions, namespace } = loadConnectionOptions();
  const address = connectionOptions.address;
  const taskQueue = appEnv.taskQueue;

  // ---- 1. Temporal server ----
  let server: DevServerHandle | null = null;
  let uiBase = uiBaseFor(address);
  if (await probeServer(address, namespace)) {
    say(`▸ Temporal server already answering at ${address} — reusing it`);
  } else {
    say('▸ Temporal CLI…');
    const cli = await ensureTemporalCli();
    say(`  ${relative(process.cwd(), cli) || cli}`);
    say(`▸ starting the Temporal dev server on ${address}${once ? ' (in-memory: --once)' : ''}…`);
    server = await startDevServer({ quiet: true, cliPath: cli, ...(once ? { dbFile: null } : {}) });
    uiBase = server.uiUrl ?? uiBase;
    say(`  ready: ${server.address}, Web UI ${uiBase}`);
  }

  // ---- 2. worker over a fresh demo database ----
  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace(/\..*$/, '').replace('T', '-');
  mkdirSync(dataDir, { recursive: true });
  const dbFile = join(dataDir, `demo-${stamp}-${randomUUID().slice(0, 4)}.db`);
  const dbUrl = `sqlite:${dbFile}`;
  const deps: WorkerDeps = await openWorkerDeps({ ledgerUrl: dbUrl, worldUrl: dbUrl, pollAfterMs: 300 });
  say(`▸ worker: task queue ${taskQueue}, ledger + demo world ${relative(process.cwd(), dbFile)}`);
  const nativeConnection = await NativeConnection.connect(connectionOptions);
  const worker = await createAgentWorker({ connection: nativeConnection, namespace, taskQueue, deps });
  const workerRun = worker.run();
  const connection = await Connection.connect({
    address,
    connectTimeout: 5_000,
    ...(connectionOptions.tls ? { tls: connectionOptions.tls as never } : {}),
    ...(connectionOptions.apiKey ? { apiKey: connectionOptions.apiKey as string } : {}),
  });
  const client = new Client({ connection, namespace });

  const results: ScenarioResult[] = [];
  const idOf = (key: string) => `demo-${key}-${stamp}-${randomUUID().slice(0, 4)}`;
  const link = (id: string) => uiLink(uiBase, namespace, id);
  const printRecord = (r: Parameters<typeof traceLine>[0]) => say(`    · ${traceLine(r)}`);

  async function startRun(key: string, goal: string, script: string): Promise<WorkflowHandle> {
    const input: RunInput = {
      goal,
      planner: { kind: 'scripted', script: loadScript(script), live: true },
      // A stopped demo run waits 15 minutes for a resume, then closes with its StopReport.
      resumeWindowMs: 15 * 60_000,
    };
    const workflowId = idOf(key);
    return client.workflow.start(WORKFLOW_TYPE, {
      taskQueue,
      workflowId,
      args: [input],
      staticSummary: goal,
    });
  }

  async function report(
    key: string,
    title: string,
    handle: WorkflowHandle,
    outcome: RunOutcome,
    expect: { state: string; reason: string | null; counters: Record<string, number> },
    check: string,
  ): Promise<void> {
    const counters = await deps.world.counters(handle.workflowId);
    say(
      `    = ${outcome.terminal_state}${outcome.reason ? ` (${outcome.reason})` : ''} · executed ${outcome.executed} · cached ${outcome.cached}`,
    );
    say(`    report:   ${compactReport(outcome)}`);
    say(`    counters: ${formatCounters(counters)}`);
    say(`    UI:       ${link(handle.workflowId)}`);
    const ok =
      outcome.terminal_state === expect.state &&
      outcome.reason === expect.reason &&
      Object.entries(expect.counters).every(([tool, n]) => (counters[tool] ?? 0) === n);
    results.push({
      key,
      title,
      workflowId: handle.workflowId,
      state: outcome.terminal_state,
      reason: outcome.reason,
      counters,
      ok,
      check,
    });
    say(
      ok
        ? `    ✓ ${check}`
        : `    ✗ UNEXPECTED — wanted ${expect.state} ${expect.reason ?? ''} ${formatCounters(expect.counters)}`,
    );
    say();
  }

  const follow = async (handle: WorkflowHandle, seen = 0) => {
    const s = await followRun(handle, {
      untilWaiting: true,
      onRecord: printRecord,
      timeoutMs: 60_000,
      pollMs: 150,
      seen,
    });
    return s.seen;
  };
  const outcomeOf = async (handle: WorkflowHandle) =>
    (await settledOutcome(handle, { timeoutMs: 60_000 })).outcome;

  let exitCode = 0;
  try {
    // ---- a. search loop ----
    say('\n[a] research agent stuck in a search loop (same query, only the non-semantic requestId changes)');
    {
      const h = await startRun('a-research-loop', 'research Temporal durability', 'research-loop');
      await follow(h);
      await report(
        'a',
        'research loop',
        h,
        await outcomeOf(h),
        { state: 'STOPPED_LOOP_GUARD', reason: 'same_call_repeat', counters: { search: 2 } },
        'the third identical search was refused before it ran (search executed 2×); the run waits durably for a verified resume',
      );
    }

    // ---- b. notifier re-plans the same page ----
    say('[b] notifier that re-plans the same page');
    {
      const h = await startRun('b-notifier', 'page on-call about INC-42', 'notifier');
      await follow(h);
      const outcome = await outcomeOf(h);
      const cachedDecision = outcome.decisions.find((d) => d.decision === 'return_cached_success');
      await report(
        'b',
        'notifier',
        h,
        outcome,
        { state: 'COMPLETED', reason: null, counters: { send_notification: 1 } },
        `the page was sent once; the re-plan (proposal ${cachedDecision?.index ?? '?'}) got the stored result: return_cached_success`,
      );
    }

    // ---- c. deploy without permission → NEEDS_HUMAN → refused → grant → resume → COMPLETED ----
    say('[c] deploy agent without the deploy:billing permission');
    {
      const h = await startRun('c-deploy', 'ship billing 2.0.0 with release notes', 'deploy');
      let seen = await follow(h);
      const stopped = await outcomeOf(h);
      say(`    = ${stopped.terminal_state} (${stopped.reason}) · report: ${compactReport(stopped)}`);
      say(`    counters: ${formatCounters(await deps.world.counters(h.workflowId))}`);
      const refused = await sendResume(h, {
        actor: 'demo',
        reason: 'try again, nothing changed',
        precondition: '',
        requestId: randomUUID(),
      });
      say(
        `    ↺ resume with nothing changed → ${refused.accepted ? 'ACCEPTED (unexpected!)' : `REFUSED${refused.rejectedByValidator ? ' by the validator' : ' after re-verification'}: ${refused.reason}`}`,
      );
      await deps.world.grant('deploy:billing');
      say('    ⚙ operator grants the permission: world.grant("deploy:billing")');
      const accepted = await sendResume(h, {
        actor: 'demo',
        reason: 'deploy:billing granted',
        precondition: 'permission deploy:billing granted',
        requestId: randomUUID(),
      });
      say(`    ↺ resume after the grant → ${accepted.accepted ? 'ACCEPTED' : 'REFUSED'}: ${accepted.reason}`);
      seen = await follow(h, seen);
      const outcome = await outcomeOf(h);
      const ok = !refused.accepted && accepted.accepted;
      await report(
        'c',
        'deploy',
        h,
        outcome,
        { state: ok ? 'COMPLETED' : 'resume-flow', reason: null, counters: { write_record: 1, deploy: 1 } },
        'NEEDS_HUMAN → unchanged resume refused → permission granted → resumed from the checkpoint → COMPLETED; the release-notes write was not repeated (write_record 1×, deploy 1×)',
      );
      void seen;
    }

    // ---- d. polling job ----
    say('[d] polling job (start_job + poll_job; the job answers PENDING, retry after 300 ms)');
    {
      const h = await startRun('d-polling-job', 'run the nightly export', 'polling-job');
      await follow(h);
      await report(
        'd',
        'polling job',
        h,
        await outcomeOf(h),
        { state: 'COMPLETED', reason: null, counters: { start_job: 1, poll_job: 3 } },
        'two honoured waits (PENDING → durable timer → re-poll) and the job finished; nothing was flagged as a loop',
      );
    }

    say('Summary');
    say(
      table(results, [
        { header: 'SCENARIO', value: (r) => `${r.key} ${r.title}` },
        { header: 'STATE', value: (r) => r.state },
        { header: 'REASON', value: (r) => r.reason },
        { header: 'COUNTERS', value: (r) => formatCounters(r.counters) },
        { header: 'CHECK', value: (r) => (r.ok ? 'ok' : 'UNEXPECTED') },
        { header: 'WORKFLOW', value: (r) => r.workflowId },
      ]).trimEnd(),
    );
    if (results.some((r) => !r.ok)) exitCode = 1;
    say(`\ndemo ${exitCode === 0 ? 'finished' : 'FAILED'} in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  } catch (err) {
    process.stderr.write(`demo: ${err instanceof Error ? err.message : String(err)}\n`);
    exitCode = 1;
  }

  const shutdown = async () => {
    worker.shutdown();
    await workerRun.catch(() => undefined);
    await nativeConnection.close().catch(() => undefined);
    await connection.close().catch(() => undefined);
    await deps.close().catch(() => undefined);
    await server?.stop();
  };

  if (once) {
    await shutdown();
    return exitCode;
  }
  const first = results[0]?.workflowId ?? '<id>';
  const dbRel = relative(process.cwd(), dbFile);
  // agentctl must reach the same server and task queue as this demo.
  const envPrefix = [
    address !== DEFAULT_TEMPORAL_ADDRESS ? `TEMPORAL_ADDRESS=${address}` : '',
    taskQueue !== DEFAULT_TASK_QUEUE ? `TEMPORAL_TASK_QUEUE=${taskQueue}` : '',
  ]
    .filter(Boolean)
    .map((v) => `${v} `)
    .join('');
  const ctl = `${envPrefix}npm run agentctl --`;
  say(
    [
      '',
      `Server${server ? '' : ' (yours)'} and worker keep running — Ctrl-C to stop.`,
      'Try next:',
      `  Web UI:  ${uiBase}/namespaces/${namespace}/workflows  (filter: AgentState="NEEDS_HUMAN", AgentGuardReason="same_call_repeat")`,
      `  ${ctl} list`,
      `  ${ctl} trace ${first}`,
      `  ${ctl} report ${first}`,
      `  ${ctl} resume ${first} --reason "retry"     # refused: nothing changed (exit 3)`,
      `  WORLD_URL=sqlite:${dbRel} ${ctl} start --script demo/scripts/research-loop.json --live --wait`,
      '',
    ].join('\n'),
  );
  // Worker.run() resolves after SIGINT/SIGTERM (the SDK installs the handlers); the dev
  // server is in our process group and gets the same Ctrl-C.
  await workerRun.catch(() => undefined);
  say('stopping…');
  await nativeConnection.close().catch(() => undefined);
  await connection.close().catch(() => undefined);
  await deps.close().catch(() => undefined);
  await server?.stop();
  return exitCode;
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`demo: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}
