/**
 * `npm run outage`: a three-minute ledger database outage in the middle of a live run, with
 * the default retry policy (`toolMaxAttempts` 10, backoff 1 s … 20 s). A private dev server
 * (free port, in memory), one worker whose ledger is a dedicated PostgreSQL database
 * (`outage_<random>` on the loopback cluster of TEST_PG_URL; the world is a SQLite file), a
 * run that searches, then writes a record, then completes. The database is closed
 * (`ALLOW_CONNECTIONS false`, connections terminated) when the write starts and opened again
 * after `--outage-s`; the run is resumed once it is back. Prints a table: outage length, the
 * run's state during and after, the write's attempts, writes executed (must be 1) and the
 * final state. Exits 0 when the run completed with exactly one write, 1 otherwise, 2 on error.
 * Bounded (≤ 5 minutes), loopback only, cleans up (drops the database, stops the server).
 *
 * Flags: --outage-s N (180, at most 240)  --json
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { quietWorkflowBundle } from './workflow-bundle';
import { dataConverterOf, loadPayloadCodec } from '../codec';
import { resumeUpdate, statusQuery, type RunInput, type RunStatus } from '../common/contracts';
import { createAgentWorker } from '../worker/create-worker';
import { agentRun } from '../workflows';
import { startThrowawayDevServer } from '../devserver/dev-server';
import { DatabaseOutage, watchToolAttempts } from './outage/database';
import { openDemoWorkerDeps } from '../demo/deps';
import { openSqlite } from '../storage/sqlite-driver';
import { agentRunResult } from '../client/runs';

/** What the run looked like at one moment. */
interface Sample {
  /** Seconds since the outage began (negative before). */
  t: number;
  state: string;
}

/** The measured outcome. */
export interface OutageReport {
  outageS: number;
  /** The run's state changes during the outage, with the second they were first seen. */
  during: Sample[];
  /** The run's state when the database came back. */
  atRecovery: string;
  /** Seconds from the outage's start to the NEEDS_HUMAN stop (null when it never stopped). */
  stoppedAfterS: number | null;
  /** The write's activity attempts during the outage, and after the resume. */
  attemptsDuringOutage: number;
  /** How many of those failed. */
  failedDuringOutage: number;
  attemptsAfter: number;
  /** The first attempt's error, as the driver reported it. */
  firstError: string | null;
  resumeAccepted: boolean | null;
  finalState: string;
  /** The write tool's executions (its own counter in the world). */
  writesExecuted: number;
  /** The written row's version: 1 = written once (a second write bumps it). */
  rowVersion: number | null;
  /** The write's ledger record. */
  ledger: string;
  ok: boolean;
}

const DEFAULT_OUTAGE_S = 180;
/** Everything, setup to cleanup, stops after this. */
const HARD_LIMIT_MS = 290_000;

function parseArgs(argv: string[]): { outageS: number; json: boolean } {
  let outageS = DEFAULT_OUTAGE_S;
  let json = false;
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    if (flag === '--outage-s') {
      const v = argv[++i];
      const n = Number(v);
      if (!Number.isInteger(n) || n < 1 || n > 240) {
        throw new Error(`--outage-s: expected an integer from 1 to 240, got ${v}`);
      }
      outageS = n;
    } else if (flag === '--json') {
      json = true;
    } else if (flag === '-h' || flag === '--help') {
      process.stdout.write(`usage: tsx scripts/outage.ts [--outage-s ${DEFAULT_OUTAGE_S}] [--json]\n`);
      process.exit(0);
    } else {
      throw new Error(`unknown flag ${flag} (try --help)`);
    }
  }
  return { outageS, json };
}

const describeState = (s: RunStatus | null, closed?: string): string =>
  closed && closed !== 'RUNNING'
    ? `workflow ${closed}`
    : s === null
      ? 'not started'
      : s.phase === 'WAITING'
        ? `WAITING ${s.terminalState} ${s.guardReason}`
        : `${s.phase}${s.terminalState ? ` ${s.terminalState}` : ''}`;

/**
 * Runs the scenario; `log` gets progress lines. What it starts is stopped through
 * `cleanups` (run in order) when it returns or throws — or by the caller, if it gives up first.
 */
export async function runOutage(
  outageS: number,
  log: (m: string) => void,
  cleanups: (() => Promise<unknown>)[] = [],
): Promise<OutageReport> {
  // A fresh key ring for this process's worker and client (payloads are encrypted by default).
  process.env.AGENT_CODEC_KEYS ??= `outage-${randomBytes(3).toString('hex')}:${randomBytes(32).toString('base64')}`;
  const dataConverter = dataConverterOf(loadPayloadCodec(process.env));
  const adminUrl = process.env.TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const dir = mkdtempSync(join(tmpdir(), 'alg-outage-'));
  const worldFile = join(dir, 'world.db');
  cleanups.unshift(async () => rmSync(dir, { recursive: true, force: true }));
  try {
    const outage = await DatabaseOutage.create(adminUrl);
    cleanups.unshift(() => outage.drop());
    log(`ledger database ${outage.name} created`);
    const server = await startThrowawayDevServer();
    cleanups.unshift(() => server.stop());
    log(`dev server at ${server.address}`);

    const watch = watchToolAttempts('write_record', async (attempt) => {
      if (attempt === 1 && outage.startedAt === null) {
        await outage.begin();
        log(`outage began (the write's first attempt); the database opens again in ${outageS} s`);
      }
    });
    const deps = await openDemoWorkerDeps({ ledgerUrl: outage.url, worldUrl: `sqlite:${worldFile}` });
    cleanups.unshift(() => deps.close());
    const nativeConnection = await NativeConnection.connect({ address: server.address });
    cleanups.unshift(() => nativeConnection.close());
    const taskQueue = `outage-${randomBytes(4).toString('hex')}`;
    const worker = await createAgentWorker({
      connection: nativeConnection,
      namespace: server.namespace,
      taskQueue,
      deps,
      dataConverter,
      interceptors: { activity: [watch.factory] },
      workflowBundle: await quietWorkflowBundle(),
    });
    const running = worker.run();
    cleanups.unshift(async () => {
      worker.shutdown();
      await running;
    });
    const connection = await Connection.connect({ address: server.address });
    cleanups.unshift(() => connection.close());
    const client = new Client({ connection, namespace: server.namespace, dataConverter });

    // The default timeouts and retry policy: only the resume window is set, longer than the outage.
    const input: RunInput = {
      goal: 'a write across a ledger outage',
      planner: {
        kind: 'scripted',
        live: true,
        script: {
          calls: [
            { tool: 'search', args: { query: 'ledger' } },
            { tool: 'write_record', args: { id: 'outage-1', body: 'written once' } },
            { tool: 'complete_task', args: { summary: 'done' } },
          ],
        },
      },
      resumeWindowMs: 600_000,
    };
    const workflowId = `outage-run-${randomBytes(4).toString('hex')}`;
    const handle = await client.workflow.start(agentRun, { taskQueue, workflowId, args: [input] });
    log(`run ${workflowId} started`);

    const during: Sample[] = [];
    let stoppedAfterS: number | null = null;
    let last = '';
    const sample = async (): Promise<RunStatus | null> => {
      const s = await handle.query(statusQuery).catch(() => null);
      const state = describeState(s);
      const t = outage.startedAt === null ? 0 : Math.round((Date.now() - outage.startedAt) / 1000);
      if (state !== last && outage.down) {
        during.push({ t, state });
        log(`t=${t}s ${state}`);
      }
      if (state !== last) last = state;
      if (stoppedAfterS === null && outage.down && s?.phase === 'WAITING') stoppedAfterS = t;
      return s;
    };
    // Until the outage begins (the write's first attempt), then for its length.
    while (outage.startedAt === null) await sleep(100);
    const endAt = outage.startedAt + outageS * 1000;
    while (Date.now() < endAt) {
      await sample();
      await sleep(Math.min(1000, Math.max(0, endAt - Date.now())));
    }
    const atRecoveryStatus = await sample();
    const atRecovery = describeState(atRecoveryStatus);
    const attemptsDuringOutage = watch.attempts.length;
    await outage.end();
    log(`outage ended after ${outageS} s; run: ${atRecovery}`);

    let resumeAccepted: boolean | null = null;
    if (atRecoveryStatus?.phase === 'WAITING') {
      const answer = await handle.executeUpdate(resumeUpdate, {
        args: [{ actor: 'ops', reason: 'ledger database back', requestId: 'outage-resume-1' }],
      });
      resumeAccepted = answer.accepted;
      log(`resume ${answer.accepted ? 'accepted' : `refused: ${answer.reason}`}`);
    }
    const result = await Promise.race([agentRunResult(handle), sleep(60_000).then(() => null)]);
    const finalState =
      result?.terminal_state ?? describeState(await handle.query(statusQuery).catch(() => null));

    const counters = await deps.world.counters(workflowId);
    const world = openSqlite(worldFile, { readOnly: true });
    let rowVersion: number | null;
    try {
      const row = world.prepare('SELECT version FROM world_records WHERE id = ?').get('outage-1') as
        { version: number } | undefined;
      rowVersion = row ? Number(row.version) : null;
    } finally {
      world.close();
    }
    const records = await outage.query<{ state: string; attempts: number; token: string }>(
      "SELECT state, attempts, token FROM ledger_records WHERE tool = 'write_record'",
    );
    const writesExecuted = counters.write_record ?? 0;
    return {
      outageS,
      during,
      atRecovery,
      stoppedAfterS,
      attemptsDuringOutage,
      failedDuringOutage: watch.attempts.slice(0, attemptsDuringOutage).filter((a) => a.error !== null)
        .length,
      attemptsAfter: watch.attempts.length - attemptsDuringOutage,
      firstError: watch.attempts[0]?.error ?? null,
      resumeAccepted,
      finalState,
      writesExecuted,
      rowVersion,
      ledger:
        records.length === 0
          ? 'no record'
          : records.map((r) => `${r.state} (claims: ${r.attempts}, token ${r.token})`).join('; '),
      ok: finalState === 'COMPLETED' && writesExecuted === 1 && rowVersion === 1 && records.length === 1,
    };
  } finally {
    await runCleanups(cleanups, log);
  }
}

async function runCleanups(cleanups: (() => Promise<unknown>)[], log: (m: string) => void): Promise<void> {
  for (const c of cleanups.splice(0)) await c().catch((err: unknown) => log(`cleanup: ${String(err)}`));
}

/** The report as a two-column table. */
export function formatOutageReport(r: OutageReport): string {
  const rows: [string, string][] = [
    ['outage length', `${r.outageS} s (ledger database closed: ALLOW_CONNECTIONS false)`],
    ...r.during.map((s, i): [string, string] => [i === 0 ? 'run state during' : '', `t=${s.t}s ${s.state}`]),
    ['stopped NEEDS_HUMAN after', r.stoppedAfterS === null ? 'never' : `${r.stoppedAfterS} s of outage`],
    ['run state at recovery', r.atRecovery],
    ['write attempts (outage)', `${r.attemptsDuringOutage} (${r.failedDuringOutage} failed)`],
    ['first attempt error', r.firstError ?? '-'],
    ['resume', r.resumeAccepted === null ? 'not needed' : r.resumeAccepted ? 'accepted' : 'refused'],
    ['write attempts (after)', String(r.attemptsAfter)],
    ['final state', r.finalState],
    ['writes executed', `${r.writesExecuted} (must be 1)`],
    ['world row version', r.rowVersion === null ? 'no row' : String(r.rowVersion)],
    ['ledger record', r.ledger],
    [
      'verdict',
      !r.ok
        ? 'VIOLATION'
        : r.stoppedAfterS === null
          ? 'OK: the retries outlived the outage, one write'
          : 'OK: the fault stopped the run, nothing failed, one write after the resume',
    ],
  ];
  const w = Math.max(...rows.map(([k]) => k.length));
  const v = Math.max(...rows.map(([, x]) => x.length));
  const line = `+${'-'.repeat(w + 2)}+${'-'.repeat(v + 2)}+`;
  return [line, ...rows.map(([k, x]) => `| ${k.padEnd(w)} | ${x.padEnd(v)} |`), line, ''].join('\n');
}

async function main(): Promise<void> {
  const { outageS, json } = parseArgs(process.argv.slice(2));
  try {
    Runtime.install({ logger: new DefaultLogger('ERROR') });
  } catch {
    // installed already
  }
  const log = (m: string) => process.stderr.write(`${m}\n`);
  const cleanups: (() => Promise<unknown>)[] = [];
  const limit = setTimeout(() => {
    log(`outage: not done after ${HARD_LIMIT_MS / 1000} s; cleaning up and giving up`);
    void runCleanups(cleanups, log).finally(() => process.exit(2));
  }, HARD_LIMIT_MS);
  limit.unref();
  const report = await runOutage(outageS, log, cleanups);
  process.stdout.write(json ? `${JSON.stringify(report)}\n` : formatOutageReport(report));
  process.exit(report.ok ? 0 : 1);
}

if (require.main === module) {
  main().catch((err: unknown) => {
    console.error(`outage failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    process.exit(2);
  });
}
