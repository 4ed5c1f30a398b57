/**
 * `npm run bench:ledger`: claim → dispatch → commit latency (p50, p99) and throughput on
 * SQLite and PostgreSQL with 1 and 8 concurrent clients, and the ledger's share of a whole
 * tool activity against a simulated 5 ms tool, and one run's records listed out of a big ledger
 * (`Ledger.list({ runId })`, `agentctl ledger list --run`) with the run index of migration 9
 * against the same ledger without it. Table on stdout; `--json` for one JSON object.
 *
 * SQLite clients are separate connections in this one process (node:sqlite is
 * synchronous, so they take turns on the event loop as co-located workers would contend for
 * the file lock). PostgreSQL clients share a pool of 8 connections. Env: BENCH_PG_URL
 * (default TEST_PG_URL or postgres://postgres@127.0.0.1:5432/test), BENCH_SECONDS (per cell).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client } from 'pg';
import { executeOnce, openLedger, type Ledger } from '../storage/ledger';
import { openSqlite } from '../storage/sqlite-driver';

const PG_URL =
  process.env.BENCH_PG_URL ?? process.env.TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const SECONDS = Number(process.env.BENCH_SECONDS ?? 2.5);
const TOOL_MS = 5;
/** The list row's ledger: this many records, spread over LIST_RUNS runs. */
const LIST_RECORDS = Number(process.env.BENCH_LIST_RECORDS ?? 200_000);
const LIST_RUNS = 1_000;

interface Row {
  backend: 'sqlite' | 'postgres';
  clients: number;
  ops: number;
  p50Ms: number;
  p99Ms: number;
  opsPerSec: number;
}

interface Share {
  backend: 'sqlite' | 'postgres';
  toolMs: number;
  activityP50Ms: number;
  ledgerShare: number;
}

interface ListRow {
  backend: 'sqlite' | 'postgres';
  records: number;
  /** p50 of `list({ runId, limit: 100 })`, with and without the run index. */
  withIndexP50Ms: number;
  withoutIndexP50Ms: number;
}

/** Raw SQL on the bench's database (bulk rows, dropping an index). */
type RawSql = (sql: string) => Promise<void>;

const percentile = (sorted: number[], p: number) =>
  sorted.length === 0
    ? 0
    : (sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number);
const round = (n: number, d = 3) => Math.round(n * 10 ** d) / 10 ** d;

async function claimCommitLoop(ledgers: Ledger[], backend: Row['backend']): Promise<Row> {
  const latencies: number[] = [];
  const until = performance.now() + SECONDS * 1000;
  const started = performance.now();
  let seq = 0;
  await Promise.all(
    ledgers.map(async (ledger, client) => {
      while (performance.now() < until) {
        const key = `bench-${ledgers.length}-${client}-${seq++}`;
        const t0 = performance.now();
        const c = await ledger.claim({
          key,
          tool: 'bench',
          argsHash: 'h',
          runId: 'bench',
          owner: `c${client}`,
          leaseMs: 30_000,
        });
        if (c.kind !== 'claimed') throw new Error(`bench: expected a fresh claim, got ${c.kind}`);
        await ledger.dispatch(key, c.token);
        await ledger.commit(key, c.token, { ok: true });
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return {
    backend,
    clients: ledgers.length,
    ops: latencies.length,
    p50Ms: round(percentile(latencies, 50)),
    p99Ms: round(percentile(latencies, 99)),
    opsPerSec: Math.round(latencies.length / elapsed),
  };
}

async function toolShare(ledger: Ledger, backend: Share['backend']): Promise<Share> {
  const totals: number[] = [];
  let toolTime = 0;
  const until = performance.now() + Math.min(SECONDS, 1.5) * 1000;
  for (let i = 0; performance.now() < until; i++) {
    const t0 = performance.now();
    const o = await executeOnce(
      ledger,
      { key: `share-${i}`, tool: 'sim', argsHash: 'h', runId: 'bench', owner: 'share', leaseMs: 30_000 },
      async () => {
        const s = performance.now();
        await new Promise((r) => setTimeout(r, TOOL_MS));
        toolTime += performance.now() - s;
        return { ok: true };
      },
    );
    if (o.kind !== 'executed') throw new Error(`bench: expected executed, got ${o.kind}`);
    totals.push(performance.now() - t0);
  }
  const total = totals.reduce((a, b) => a + b, 0);
  totals.sort((a, b) => a - b);
  return {
    backend,
    toolMs: TOOL_MS,
    activityP50Ms: round(percentile(totals, 50)),
    ledgerShare: round((total - toolTime) / total, 4),
  };
}

/**
 * `list({ runId })` p50 on a ledger of LIST_RECORDS settled records of LIST_RUNS runs (the oldest
 * run's records, the worst case for a walk down the `updated_at` index), with migration 9's run
 * index, then with it dropped: the baseline, in the same process and database.
 */
async function listOneRun(ledger: Ledger, raw: RawSql, backend: ListRow['backend']): Promise<ListRow> {
  const base = 1_700_000_000_000;
  await raw(
    backend === 'sqlite'
      ? `INSERT INTO ledger_records (key, tool, args_hash, run_id, owner, state, token, result, attempts, created_at, updated_at, finished_at)
         WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${LIST_RECORDS - 1})
         SELECT 'list-' || i, 'bench', 'h', 'list-run-' || (i % ${LIST_RUNS}), 'bench', 'SUCCEEDED', 1000000 + i, '{}', 1,
                ${base} + i, ${base} + i, ${base} + i FROM n`
      : `INSERT INTO ledger_records (key, tool, args_hash, run_id, owner, state, token, result, attempts, created_at, updated_at, finished_at)
         SELECT 'list-' || i, 'bench', 'h', 'list-run-' || (i % ${LIST_RUNS}), 'bench', 'SUCCEEDED', 1000000 + i, '{}', 1,
                to_timestamp((${base} + i) / 1000.0), to_timestamp((${base} + i) / 1000.0), to_timestamp((${base} + i) / 1000.0)
         FROM generate_series(0, ${LIST_RECORDS - 1}) AS i`,
  );
  await raw(backend === 'sqlite' ? 'ANALYZE' : 'ANALYZE ledger_records');
  const p50 = async (): Promise<number> => {
    const times: number[] = [];
    const until = performance.now() + Math.min(SECONDS, 1.5) * 1000;
    while (performance.now() < until || times.length < 5) {
      const t0 = performance.now();
      const got = await ledger.list({ runId: 'list-run-0', limit: 100 });
      times.push(performance.now() - t0);
      if (got.length !== 100) throw new Error(`bench: expected 100 records of list-run-0, got ${got.length}`);
    }
    times.sort((a, b) => a - b);
    return round(percentile(times, 50));
  };
  const withIndexP50Ms = await p50();
  await raw('DROP INDEX ledger_records_run');
  await raw(backend === 'sqlite' ? 'ANALYZE' : 'ANALYZE ledger_records');
  const withoutIndexP50Ms = await p50();
  return { backend, records: LIST_RECORDS, withIndexP50Ms, withoutIndexP50Ms };
}

async function withBackend<T>(
  backend: Row['backend'],
  fn: (open: () => Promise<Ledger>, raw: RawSql) => Promise<T>,
): Promise<T> {
  const opened: Ledger[] = [];
  if (backend === 'sqlite') {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ledger-bench-'));
    const file = path.join(dir, 'ledger.db');
    try {
      return await fn(
        async () => {
          const l = await openLedger(`sqlite:${file}`);
          opened.push(l);
          return l;
        },
        async (sql) => {
          const db = openSqlite(file);
          try {
            db.exec('PRAGMA busy_timeout = 10000');
            db.exec(sql);
          } finally {
            db.close();
          }
        },
      );
    } finally {
      await Promise.all(opened.map((l) => l.close()));
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }
  const schema = `ledger_bench_${crypto.randomBytes(4).toString('hex')}`;
  const url = new URL(PG_URL);
  url.searchParams.set('schema', schema);
  try {
    return await fn(
      async () => {
        const l = await openLedger(url.toString());
        opened.push(l);
        return l;
      },
      async (sql) => {
        const c = new Client({ connectionString: PG_URL });
        await c.connect();
        try {
          await c.query(`SET search_path TO ${schema}`);
          await c.query(sql);
        } finally {
          await c.end();
        }
      },
    );
  } finally {
    await Promise.all(opened.map((l) => l.close()));
    const admin = new Client({ connectionString: PG_URL });
    await admin.connect();
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.end();
  }
}

async function main(): Promise<void> {
  const json = process.argv.includes('--json');
  const rows: Row[] = [];
  const shares: Share[] = [];
  const lists: ListRow[] = [];
  for (const backend of ['sqlite', 'postgres'] as const) {
    await withBackend(backend, async (open, raw) => {
      const first = await open();
      rows.push(await claimCommitLoop([first], backend));
      const eight =
        backend === 'sqlite'
          ? [first, ...(await Promise.all(Array.from({ length: 7 }, open)))]
          : Array(8).fill(first);
      rows.push(await claimCommitLoop(eight, backend));
      shares.push(await toolShare(first, backend));
      lists.push(await listOneRun(first, raw, backend));
    });
  }
  if (json) {
    process.stdout.write(
      `${JSON.stringify({ secondsPerCell: SECONDS, claimCommit: rows, toolShare: shares, listOneRun: lists })}\n`,
    );
    return;
  }
  const table = [
    ['backend', 'clients', 'ops', 'p50 ms', 'p99 ms', 'ops/s'],
    ...rows.map((r) => [
      r.backend,
      String(r.clients),
      String(r.ops),
      r.p50Ms.toFixed(3),
      r.p99Ms.toFixed(3),
      String(r.opsPerSec),
    ]),
  ];
  const w = table[0]?.map((_, i) => Math.max(...table.map((row) => (row[i] ?? '').length))) ?? [];
  const fmt = (row: string[]) =>
    row.map((c, i) => (i === 0 ? c.padEnd(w[i] ?? 0) : c.padStart(w[i] ?? 0))).join('  ');
  process.stdout.write(
    `ledger claim -> dispatch -> commit (${SECONDS}s per cell)\n${table.map(fmt).join('\n')}\n\n`,
  );
  process.stdout.write(
    `ledger share of a tool activity (executeOnce around a ${TOOL_MS} ms tool, 1 client)\n`,
  );
  for (const s of shares) {
    process.stdout.write(
      `${s.backend.padEnd(8)}  activity p50 ${s.activityP50Ms.toFixed(3)} ms  ledger share ${(s.ledgerShare * 100).toFixed(1)}%\n`,
    );
  }
  process.stdout.write(
    `\none run's 100 newest records out of ${LIST_RECORDS.toLocaleString('en-US')} of ${LIST_RUNS.toLocaleString('en-US')} runs (Ledger.list({ runId }), p50; baseline: the same ledger without migration 9's run index)\n`,
  );
  for (const l of lists) {
    process.stdout.write(
      `${l.backend.padEnd(8)}  with index ${l.withIndexP50Ms.toFixed(3)} ms  without ${l.withoutIndexP50Ms.toFixed(3)} ms  (${(l.withoutIndexP50Ms / l.withIndexP50Ms).toFixed(1)}x)\n`,
    );
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:ledger failed: ${(err as Error).message}\n`);
  process.exitCode = 1;
});
