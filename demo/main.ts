/**
 * `npm run demo [-- --once]`: the whole system on one machine in well under a minute.
 *
 * Installs the Temporal CLI if missing, reuses a Temporal server answering on
 * TEMPORAL_ADDRESS (default localhost:7233), saying loudly whose it is, or starts the dev
 * server (UI on port + 1000, 8233; on a free port when another user's server holds the
 * default one: demo/stack.ts), starts an in-process worker over a fresh demo database (data/demo-<timestamp>.db),
 * and runs the scenarios of ./demo/scenarios.ts — live scripted agents the real demo
 * tools answer. `--once` stops everything at the end (exit 0 when every scenario ended as
 * expected); otherwise server and worker keep running until Ctrl-C. `--data-dir DIR` puts
 * the demo database elsewhere (default ./data).
 */
import '../common/node-floor-check'; // first: below the Node floor, the message and its remedy
import { join, relative } from 'node:path';
import { uiListLink } from '../client/format';
import { WAITING_FOR_OPERATOR_QUERY } from '../common/search-attributes';
import { PROJECT_ROOT } from '../devserver/temporal-cli';
import { DEFAULT_TASK_QUEUE, DEFAULT_TEMPORAL_ADDRESS } from '../worker/env';
import { runScenario, startStoppedRun, summaryTable, type DemoEnv, type ScenarioResult } from './runner';
import { SCENARIOS } from './scenarios';
import { startStack, type DemoStack } from './stack';

const say = (line = ''): void => void process.stdout.write(`${line}\n`);

/** What to try once the demo has run and its server and worker keep running. */
function tryNext(stack: DemoStack, first: string): string {
  const { address, taskQueue, namespace } = stack.connected;
  // agentctl must reach the same server and task queue as this demo.
  const envPrefix = [
    address !== DEFAULT_TEMPORAL_ADDRESS ? `TEMPORAL_ADDRESS=${address}` : '',
    taskQueue !== DEFAULT_TASK_QUEUE ? `TEMPORAL_TASK_QUEUE=${taskQueue}` : '',
  ]
    .filter(Boolean)
    .map((v) => `${v} `)
    .join('');
  const ctl = `${envPrefix}npm run agentctl --`;
  return [
    '',
    `Server${stack.server ? '' : ' (yours)'} and worker keep running — Ctrl-C to stop.`,
    'Try next:',
    `A research-loop run stopped again just now (${first}); nothing has changed since.`,
    `  Web UI, the runs that wait for a person: ${uiListLink(stack.uiBase, namespace, WAITING_FOR_OPERATOR_QUERY)}`,
    `  ${ctl} list --waiting`,
    `  ${ctl} list`,
    `  ${ctl} trace ${first}`,
    `  ${ctl} report ${first}`,
    `  ${ctl} resume ${first} --reason "retry"     # refused: nothing changed (exit 3)`,
    `  WORLD_URL=sqlite:${relative(process.cwd(), stack.dbFile)} ${ctl} start --script demo/scripts/research-loop.json --live --wait`,
    '',
  ].join('\n');
}

/** What the scenarios run with. With `--once` no UI link is printed to a server the demo shuts down. */
function demoEnv(stack: DemoStack, once: boolean): DemoEnv {
  const { client, taskQueue, namespace } = stack.connected;
  return {
    client,
    taskQueue,
    namespace,
    uiBase: once && stack.server ? null : stack.uiBase,
    world: stack.deps.world,
    stamp: stack.stamp,
    say,
  };
}

/** Runs every scenario; true when all ended as expected. */
async function runAll(stack: DemoStack, results: ScenarioResult[], once: boolean): Promise<boolean> {
  const t0 = Date.now();
  const env = demoEnv(stack, once);
  say();
  for (const s of SCENARIOS) results.push(await runScenario(env, s));
  say('Summary');
  say(summaryTable(results));
  const ok = results.every((r) => r.ok);
  say(`\ndemo ${ok ? 'finished' : 'FAILED'} in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  return ok;
}

async function run(argv: readonly string[]): Promise<number> {
  const once = argv.includes('--once');
  const dirFlag = argv.indexOf('--data-dir');
  const dataDir = (dirFlag >= 0 && argv[dirFlag + 1]) || join(PROJECT_ROOT, 'data');
  const stack = await startStack({ once, dataDir, say });
  const results: ScenarioResult[] = [];
  let exitCode = 0;
  try {
    if (!(await runAll(stack, results, once))) exitCode = 1;
  } catch (err) {
    process.stderr.write(`demo: ${err instanceof Error ? err.message : String(err)}\n`);
    exitCode = 1;
  }
  if (!once) {
    // The scenarios share one world, so the first run's stop is long out of date (every later
    // write changed the world): the commands below are about a loop stopped after them.
    const loop = SCENARIOS.find((sc) => sc.slug === 'research-loop');
    const waiting = loop ? await startStoppedRun(demoEnv(stack, once), loop).catch(() => null) : null;
    say(tryNext(stack, waiting ?? results[0]?.workflowId ?? '<id>'));
    // Worker.run() resolves after SIGINT/SIGTERM (the SDK installs the handlers); the dev
    // server is in our process group and gets the same Ctrl-C.
    await stack.workerDone;
    say('stopping…');
  }
  await stack.stop();
  return exitCode;
}

if (require.main === module) {
  run(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`demo: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}
