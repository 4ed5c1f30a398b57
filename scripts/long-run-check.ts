/**
 * `npm run long-run-check` (`tsx scripts/long-run-check.ts`): the long-run acceptance check,
 * run the way a user would, every part a separate process started from this checkout:
 *
 *  1. a throwaway Temporal dev server — `npm run dev:server` (`tsx scripts/dev-server.ts`)
 *     with TEMPORAL_ADDRESS on a free loopback port, TEMPORAL_UI_PORT free, in memory;
 *  2. the long-run model server — `npm run long-model-server -- --protocol openai --turns 600
 *     --note-chars 3000 --window-chars 300000 --port 0` (scripts/long-model/server.ts);
 *  3. a worker — `npm run worker` (`tsx demo/worker.ts`) with OPENAI_BASE_URL = that server,
 *     OPENAI_API_KEY=dummy, TEMPORAL_ADDRESS, a fresh task queue, LEDGER_URL = WORLD_URL = a
 *     temp SQLite file, AGENT_REAPER=off;
 *  4. `agentctl start --planner openai --model long-model --context-tokens 100000 --goal …
 *     --max-steps <turns + 100> --max-ms <1 day> --wait --timeout <--timeout-s> --json`.
 *
 * All of them share one fresh payload key ring (AGENT_CODEC_KEYS) and checkpoint key, so
 * nothing is written under ./data. Then it checks, and prints a table:
 *  - the run COMPLETED;
 *  - write_record executed exactly `turns` times (agentctl's counters from the world DB, and
 *    the world DB's own records note-1 … note-<turns>);
 *  - the model server refused no request for context (GET /stats `refusedForContext` = 0)
 *    and saw no tool-protocol error;
 *  - history bytes per completed turn over the whole continue-as-new chain ≤ `--max-kb`
 *    (25 KB = 25 × 1024 bytes; bench/long-history.ts measures).
 * Exit 0 when every check holds, 1 when one fails, 2 on an error (a process that would not
 * start, a timeout). Every process it started is stopped (its process group: SIGTERM, then
 * SIGKILL after 10 s) and the temp directory removed, on success, failure, error or Ctrl-C.
 *
 * `--planner ai-sdk` runs the same check through the AI SDK planner: the worker gets
 * an AGENT_MODEL_ENDPOINTS entry `long` (provider `--endpoint-provider`: openai, the default, or
 * openai-compatible) at the model server, and agentctl starts `--planner ai-sdk --endpoint long`.
 *
 * Flags: --planner openai|ai-sdk (openai)  --endpoint-provider openai|openai-compatible (openai)
 *        --turns N (600)  --note-chars N (3000)  --window-chars N (300000)
 *        --context-tokens N (100000; 0 = leave it out)  --timeout-s N (1800)  --max-kb N (25)
 *        --keep (keep the temp directory: the ledger/world SQLite file, the logs)  --json
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { LONG_HISTORY_CHANNEL_ARGS, measureChain } from '../bench/long-history';
import { freePort } from '../devserver/dev-server';
import { longRunGoal, type LongModelStats } from './long-model/server';
import { PROJECT_ROOT } from '../devserver/temporal-cli';
import { cliFlags, intFlag } from './cli-args';
import { openSqlite } from '../storage/sqlite-driver';

interface Options {
  planner: 'openai' | 'ai-sdk';
  endpointProvider: 'openai' | 'openai-compatible';
  turns: number;
  noteChars: number;
  windowChars: number;
  contextTokens: number;
  timeoutS: number;
  maxKb: number;
  keep: boolean;
  json: boolean;
}

function parseArgs(argv: readonly string[]): Options {
  const o: Options = {
    planner: 'openai',
    endpointProvider: 'openai',
    turns: 600,
    noteChars: 3000,
    windowChars: 300_000,
    contextTokens: 100_000,
    timeoutS: 1800,
    maxKb: 25,
    keep: false,
    json: false,
  };
  const int = intFlag;
  for (const { flag, value } of cliFlags(argv)) {
    switch (flag) {
      case '--planner':
        o.planner = oneOf(flag, value(), ['openai', 'ai-sdk'] as const);
        break;
      case '--endpoint-provider':
        o.endpointProvider = oneOf(flag, value(), ['openai', 'openai-compatible'] as const);
        break;
      case '--turns':
        o.turns = int(flag, value(), 1);
        break;
      case '--note-chars':
        o.noteChars = int(flag, value(), 1);
        break;
      case '--window-chars':
        o.windowChars = int(flag, value(), 1);
        break;
      case '--context-tokens':
        o.contextTokens = int(flag, value(), 0);
        break;
      case '--timeout-s':
        o.timeoutS = int(flag, value(), 10);
        break;
      case '--max-kb':
        o.maxKb = int(flag, value(), 1);
        break;
      case '--keep':
        o.keep = true;
        break;
      case '--json':
        o.json = true;
        break;
      case '-h':
      case '--help':
        process.stdout.write(
          'usage: tsx scripts/long-run-check.ts [--planner openai|ai-sdk] [--endpoint-provider openai|openai-compatible] [--turns 600] [--note-chars 3000] [--window-chars 300000] [--context-tokens 100000] [--timeout-s 1800] [--max-kb 25] [--keep] [--json]\n',
        );
        process.exit(0);
        break;
      default:
        throw new Error(`unknown flag ${flag} (try --help)`);
    }
  }
  return o;
}

function oneOf<T extends string>(flag: string, v: string | undefined, allowed: readonly T[]): T {
  if (v === undefined || !(allowed as readonly string[]).includes(v))
    throw new Error(`${flag} must be one of ${allowed.join(', ')}`);
  return v as T;
}

// ---------------------------------------------------------------- processes
const TSX = join(PROJECT_ROOT, 'node_modules', '.bin', 'tsx');

interface Proc {
  readonly name: string;
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  /** The last output (stdout + stderr), for error messages. */
  tail(): string;
}

const procs: Proc[] = [];

/** Starts `tsx <args>` in its own process group, logging to <dir>/<name>.log. */
function startTsx(name: string, args: string[], env: NodeJS.ProcessEnv, dir: string): Proc {
  const child = spawn(TSX, args, {
    cwd: PROJECT_ROOT,
    env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const log = createWriteStream(join(dir, `${name}.log`));
  let tail = '';
  const keep = (chunk: Buffer): void => {
    log.write(chunk);
    tail = (tail + chunk.toString('utf8')).slice(-4000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => resolve(code));
    child.once('error', () => resolve(-1));
  });
  void exited.then(() => log.end());
  const p: Proc = { name, child, exited, tail: () => tail };
  procs.push(p);
  return p;
}

/** Resolves with the first line of output matching `re`; rejects if the process exits first or after `ms`. */
function waitForLine(p: Proc, re: RegExp, ms: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let buf = '';
    const timer = setTimeout(
      () => done(new Error(`${p.name}: no line matching ${re} after ${ms} ms\n${p.tail()}`)),
      ms,
    );
    const onData = (chunk: Buffer): void => {
      buf += chunk.toString('utf8');
      for (const line of buf.split('\n')) {
        if (re.test(line)) {
          done(null, line.trim());
          return;
        }
      }
    };
    const done = (err: Error | null, line?: string): void => {
      clearTimeout(timer);
      p.child.stdout!.off('data', onData);
      p.child.stderr!.off('data', onData);
      if (err) reject(err);
      else resolve(line!);
    };
    p.child.stdout!.on('data', onData);
    p.child.stderr!.on('data', onData);
    void p.exited.then((code) =>
      done(new Error(`${p.name} exited (code ${code}) before it was ready\n${p.tail()}`)),
    );
  });
}

/** Stops one process group started here: SIGTERM, SIGKILL after `ms`. */
async function stopProc(p: Proc, ms = 10_000): Promise<void> {
  if (p.child.exitCode !== null || p.child.signalCode !== null || p.child.pid === undefined) return;
  const signal = (s: NodeJS.Signals): void => {
    try {
      process.kill(-p.child.pid!, s);
    } catch {
      // already gone
    }
  };
  signal('SIGTERM');
  const timer = setTimeout(() => signal('SIGKILL'), ms);
  await p.exited;
  clearTimeout(timer);
  signal('SIGKILL'); // anything the group's leader left behind
}

/** Stops every process started here, the last started first. */
async function stopAll(): Promise<void> {
  for (const p of [...procs].reverse()) await stopProc(p);
}

/** Runs a tsx command to its end; resolves with its stdout and exit code. */
async function runTsx(
  name: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  dir: string,
): Promise<{ code: number | null; stdout: string; tail: string }> {
  const p = startTsx(name, args, env, dir);
  let stdout = '';
  p.child.stdout!.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
  const code = await p.exited;
  return { code, stdout, tail: p.tail() };
}

// ---------------------------------------------------------------- checks
export interface CheckRow {
  readonly check: string;
  readonly value: string;
  readonly ok: boolean;
}

function worldCounts(file: string, workflowId: string, turns: number): { executions: number; notes: number } {
  const db = openSqlite(file, { readOnly: true });
  try {
    const executions = Number(
      (
        db
          .prepare(
            "SELECT COALESCE(SUM(count), 0) AS n FROM world_tool_calls WHERE run_id = ? AND tool = 'write_record'",
          )
          .get(workflowId) as unknown as { n: number }
      ).n,
    );
    const ids = db.prepare("SELECT id FROM world_records WHERE id LIKE 'note-%'").all() as unknown as {
      id: string;
    }[];
    const want = new Set(Array.from({ length: turns }, (_, i) => `note-${i + 1}`));
    const notes =
      ids.filter((r) => want.has(r.id)).length === turns && ids.length === turns ? turns : -ids.length;
    return { executions, notes };
  } finally {
    db.close();
  }
}

async function main(): Promise<number> {
  const o = parseArgs(process.argv.slice(2));
  const log = (msg: string): void => {
    if (!o.json) process.stderr.write(`[long-run-check] ${msg}\n`);
  };
  const t0 = performance.now();
  const dir = mkdtempSync(join(tmpdir(), 'alg-long-check-'));
  const dbFile = join(dir, 'agent.db');
  const base: NodeJS.ProcessEnv = {
    ...process.env,
    AGENT_CODEC_KEYS: `check-${randomBytes(3).toString('hex')}:${randomBytes(32).toString('base64')}`,
    AGENT_CHECKPOINT_KEY: randomBytes(32).toString('base64'),
  };
  delete base.AGENT_CODEC;
  delete base.AGENT_CODEC_KEY_FILE;
  let exit = 2;
  let interrupted = false;
  const onSignal = (): void => {
    interrupted = true;
    log('interrupted: stopping every process…');
    void stopAll().then(() => {
      if (!o.keep) rmSync(dir, { recursive: true, force: true });
      process.exit(130);
    });
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    const port = await freePort();
    const address = `127.0.0.1:${port}`;
    const temporalEnv = { TEMPORAL_ADDRESS: address, TEMPORAL_NAMESPACE: 'default' };
    log(`dev server on ${address} (npm run dev:server, in memory)…`);
    const devServer = startTsx(
      'dev-server',
      ['scripts/dev-server.ts'],
      { ...base, ...temporalEnv, TEMPORAL_UI_PORT: String(await freePort()), TEMPORAL_DB_FILE: ':memory:' },
      dir,
    );
    const modelProc = startTsx(
      'long-model-server',
      [
        'scripts/long-model/server.ts',
        '--protocol',
        'openai',
        '--turns',
        String(o.turns),
        '--note-chars',
        String(o.noteChars),
        '--window-chars',
        String(o.windowChars),
        '--port',
        '0',
      ],
      base,
      dir,
    );
    const [, baseURL] = await Promise.all([
      waitForLine(devServer, /Temporal dev server ready/, 90_000),
      waitForLine(modelProc, /^http:\/\/\S+\/v1$/, 30_000),
    ]);
    const origin = baseURL.replace(/\/v1$/, '');
    log(`long-model server at ${baseURL} (${o.turns} notes)`);
    const taskQueue = `long-check-${randomUUID()}`;
    const workerEnv: NodeJS.ProcessEnv = {
      ...base,
      ...temporalEnv,
      TEMPORAL_TASK_QUEUE: taskQueue,
      LEDGER_URL: `sqlite:${dbFile}`,
      WORLD_URL: `sqlite:${dbFile}`,
      OPENAI_BASE_URL: baseURL,
      OPENAI_API_KEY: 'dummy',
      AGENT_REAPER: 'off',
      ...(o.planner === 'ai-sdk'
        ? { AGENT_MODEL_ENDPOINTS: JSON.stringify({ long: { provider: o.endpointProvider, baseURL } }) }
        : {}),
    };
    const worker = startTsx('worker', ['demo/worker.ts'], workerEnv, dir);
    await waitForLine(worker, /worker: task queue/, 90_000);
    log(`worker on task queue ${taskQueue}; agentctl start --planner ${o.planner} … --wait`);

    const workflowId = `long-check-${randomUUID()}`;
    const startArgs = [
      'bin/agentctl.ts',
      'start',
      '--planner',
      o.planner,
      ...(o.planner === 'ai-sdk' ? ['--endpoint', 'long'] : []),
      '--model',
      'long-model',
      '--goal',
      longRunGoal(o.turns),
      ...(o.contextTokens > 0 ? ['--context-tokens', String(o.contextTokens)] : []),
      '--max-steps',
      String(o.turns + 100),
      '--max-ms',
      String(24 * 3600 * 1000),
      '--resume-window-ms',
      '60000',
      '--id',
      workflowId,
      '--wait',
      '--timeout',
      String(o.timeoutS),
      '--json',
    ];
    log(
      `  agentctl ${startArgs
        .slice(1)
        .map((a) => (a.includes(' ') ? JSON.stringify(a) : a))
        .join(' ')}`,
    );
    const started = await runTsx(
      'agentctl',
      startArgs,
      { ...base, ...temporalEnv, TEMPORAL_TASK_QUEUE: taskQueue, WORLD_URL: `sqlite:${dbFile}` },
      dir,
    );
    let outcome: {
      terminal_state?: string;
      reason?: string;
      executed?: number;
      counters?: Record<string, number> | null;
    };
    try {
      outcome = JSON.parse(started.stdout) as typeof outcome;
    } catch {
      throw new Error(`agentctl start exited ${started.code} without a JSON outcome:\n${started.tail}`);
    }
    log(`run ${workflowId} ended ${outcome.terminal_state} ${outcome.reason ?? ''}; measuring…`);

    const stats = (await (await fetch(`${origin}/stats`)).json()) as LongModelStats;
    const world = worldCounts(dbFile, workflowId, o.turns);
    const connection = await Connection.connect({ address, channelArgs: LONG_HISTORY_CHANNEL_ARGS });
    let chain;
    try {
      chain = await measureChain(new Client({ connection, namespace: 'default' }), workflowId);
    } finally {
      await connection.close();
    }
    const writes = outcome.counters?.write_record ?? 0;
    const perTurn = chain.bytes / Math.max(1, world.executions);
    const rows: CheckRow[] = [
      {
        check: 'terminal state',
        value: `${outcome.terminal_state}${outcome.reason ? ` (${outcome.reason})` : ''}`,
        ok: outcome.terminal_state === 'COMPLETED',
      },
      {
        check: `write_record executions (agentctl counters; world DB)`,
        value: `${writes}; ${world.executions}`,
        ok: writes === o.turns && world.executions === o.turns,
      },
      {
        check: `records note-1 … note-${o.turns} in the world`,
        value:
          world.notes === o.turns
            ? `all ${o.turns}`
            : `${-world.notes} note records, not exactly the ${o.turns}`,
        ok: world.notes === o.turns,
      },
      {
        check: 'model requests refused for context',
        value: `${stats.refusedForContext} of ${stats.requests}`,
        ok: stats.refusedForContext === 0,
      },
      { check: 'tool-protocol errors', value: String(stats.protocolErrors), ok: stats.protocolErrors === 0 },
      {
        check: 'largest request to the model (chars)',
        value: `${stats.maxRequestChars.toLocaleString('en-US')} (window ${o.windowChars.toLocaleString('en-US')})`,
        ok: stats.maxRequestChars <= o.windowChars,
      },
      {
        check: `history per turn over the chain (≤ ${o.maxKb} KB)`,
        value: `${(perTurn / 1024).toFixed(1)} KB (${Math.round(perTurn).toLocaleString('en-US')} B; ${(chain.bytes / 1e6).toFixed(2)} MB in ${chain.runs} run(s), ${chain.events} events)`,
        ok: perTurn <= o.maxKb * 1024,
      },
    ];
    const ok = rows.every((r) => r.ok);
    exit = ok ? 0 : 1;
    const wallS = (performance.now() - t0) / 1000;
    if (o.json) {
      process.stdout.write(
        `${JSON.stringify({ ok, planner: o.planner, workflowId, turns: o.turns, rows, historyBytes: chain.bytes, historyRuns: chain.runs, wallS })}\n`,
      );
    } else {
      process.stdout.write(
        [
          '',
          `Long-run check: ${o.turns} turns, agentctl start --planner ${o.planner}${o.planner === 'ai-sdk' ? ` (${o.endpointProvider} endpoint)` : ''} against a worker on the long-model server (${o.noteChars}-char notes, ${o.windowChars}-char window${o.contextTokens > 0 ? `, --context-tokens ${o.contextTokens}` : ''})`,
          '',
          '| check | value | |',
          '|---|---|---|',
          ...rows.map((r) => `| ${r.check} | ${r.value} | ${r.ok ? 'ok' : 'FAILED'} |`),
          '',
          `${ok ? 'PASS' : 'FAIL'} in ${wallS.toFixed(1)} s`,
          '',
        ].join('\n'),
      );
    }
  } catch (err) {
    if (!interrupted)
      process.stderr.write(`[long-run-check] error: ${err instanceof Error ? err.message : String(err)}\n`);
    exit = 2;
  } finally {
    await stopAll();
    if (o.keep) log(`kept ${dir} (agent.db and the processes' logs)`);
    else rmSync(dir, { recursive: true, force: true });
  }
  return exit;
}

if (require.main === module) {
  main().then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(
        `[long-run-check] ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
      );
      void stopAll().then(() => process.exit(2));
    },
  );
}
