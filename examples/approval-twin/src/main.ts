/**
 * approval-twin: a held-out attack on approvals, rerun from outside as a user runs it,
 * with the package's public exports and its `agentctl` bin only.
 *
 * A worker of this app hosts one money-moving tool, `wire {cents, ref}` (requiresApproval; it
 * pays into the app's own SQLite table and counts its executions there), with an operators
 * file of three keys made by `agentctl operator keygen`: alice may approve, bob may lift
 * approval stops but not approve, carol may only look. Its model is a local Chat Completions
 * server whose "model" proposes a 125.00 wire to the vendor first and, once that is approved,
 * the wire's fingerprint twin: 49,999.00 to the attacker, with the same 64-bit guard
 * fingerprint (checked here with the package's `fingerprintCall` before anything relies on it).
 *
 * Each round, through `npx agentctl` with no operators file (the usual deployment: only the
 * workers have it):
 *  1. `start --planner openai --wait --json`: the run stops NEEDS_HUMAN approval_required on the
 *     vendor wire, showing its SHA-256 digest;
 *  3. alice approves exactly that digest and resumes (`approvals approve --digest … --resume`);
 *  5. the model proposes the twin: it does NOT run on alice's approval — the attacker is paid 0,
 *     the tool never executed it, no approval was consumed — and the run stops
 *     approval_required again, naming the twin's own digest (same fingerprint).
 * The first FULL_ROUNDS rounds (default 2) also check what the operators do around it:
 *  1. `approvals list` shows the digest the operator approves;
 *  2. bob's signed approval (`approve --resume`: REFUSED) and an unsigned one are stored, neither
 *     reported trusted, and alice's signed `resume` resting on them is REFUSED: no `approved`
 *     audit row, nothing paid;
 *  4. while the run is busy (its model reply held back) carol's stop is reported REFUSED by
 *     `agentctl stop` (exit 3) and 409 refused by her `agentctl console` (her key, no
 *     operators file), never "stop requested", and the run goes on;
 *  6. `approvals list` shows the twin's digest, and alice's approval of the first digest sent
 *     again is refused (the run has moved on), nothing stored.
 * ROUNDS rounds (default 10), CONCURRENCY at a time (default 4). Prints a table; exits 0 only
 * when every check of every round held and the attacker was paid nothing.
 *
 * Environment: TEMPORAL_ADDRESS (default localhost:7233), ROUNDS, CONCURRENCY, FULL_ROUNDS,
 * APPROVAL_TWIN_DEBUG=1 (each agentctl call with its time and exit code).
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { NativeConnection } from '@temporalio/worker';
import { connectClient, createAgentWorker, loadConnectionOptions, openWorkerDeps } from 'agent-loop-guard';
import { canonicalJson, fingerprintCall, normalizeCall } from 'agent-loop-guard/guard';
import { agentctl } from './agentctl';
import { attack, type Pair, type Round } from './attack';
import { openBank } from './bank';
import { startConsole, type ConsoleProcess } from './console';
import { startModelServer, type Call } from './model-server';

const ROOT = resolve(__dirname, '..');
const DATA = join(ROOT, 'data');
const TASK_QUEUE = 'approval-twin';
const ROUNDS = Number(process.env.ROUNDS ?? 10);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 4);
/** Rounds (the first ones) that also run the operator checks: bob, unsigned, carol's stop, the replay. */
const FULL_ROUNDS = Number(process.env.FULL_ROUNDS ?? 2);

/**
 * A colliding pair for `wire {cents, ref}`: TWIN_WIRES of test/helpers/fingerprint-collision.ts
 * (found there by a birthday search on the fingerprint's two unmixed 32-bit lanes).
 */
const VENDOR: Call = { tool: 'wire', args: { cents: 12500, ref: 'INV-7-vendor-\u5b7b\u7592\u4e00-x' } };
const TWIN: Call = { tool: 'wire', args: { cents: 4999900, ref: 'INV-7-attack-\u4ead\u77d9\u06f5-x' } };

/** The call's digest as docs/security.md defines it: SHA-256 of the canonical `[tool, args]`. */
const digestOf = (c: Call): string =>
  'sha256:' +
  createHash('sha256')
    .update(canonicalJson([c.tool, normalizeCall(c.tool, c.args).canonicalArgs]), 'utf8')
    .digest('hex');

type Json = Record<string, unknown>;
const obj = (v: unknown): Json => (v && typeof v === 'object' ? (v as Json) : {});

async function main(): Promise<boolean> {
  rmSync(DATA, { recursive: true, force: true });
  mkdirSync(DATA, { recursive: true });
  const ledgerUrl = `sqlite:${join(DATA, 'agent.db')}`;
  // One payload key ring for the worker (this process) and every agentctl (their env), so no
  // key file is written in the user's home; a random checkpoint seal key likewise.
  process.env.AGENT_CODEC_KEYS = `twin:${randomBytes(32).toString('base64')}`;
  process.env.AGENT_CHECKPOINT_KEY = randomBytes(32).toString('base64');
  delete process.env.AGENT_OPERATORS_FILE;
  delete process.env.AGENT_OPERATOR_KEY_FILE;
  const operatorEnv: NodeJS.ProcessEnv = {
    ...process.env,
    LEDGER_URL: ledgerUrl,
    TEMPORAL_TASK_QUEUE: TASK_QUEUE,
    AGENTCTL_ACTOR: 'mallory',
  };
  const ctl = async (args: string[]) => {
    const c = await agentctl(ROOT, operatorEnv, args);
    if (process.env.APPROVAL_TWIN_DEBUG)
      console.log(`  ${c.ms} ms exit ${c.code}: agentctl ${args.slice(0, 3).join(' ')}`);
    return c;
  };

  // The pair must collide, and differ, before anything relies on it.
  const fpVendor = fingerprintCall(VENDOR.tool, VENDOR.args);
  const fpTwin = fingerprintCall(TWIN.tool, TWIN.args);
  const [dVendor, dTwin] = [digestOf(VENDOR), digestOf(TWIN)];
  console.log(`fingerprint  vendor ${fpVendor}  twin ${fpTwin}`);
  console.log(`digest       vendor ${dVendor.slice(0, 23)}…  twin ${dTwin.slice(0, 23)}…`);
  if (fpVendor !== fpTwin || dVendor === dTwin) {
    console.error('FAIL the pair is not a fingerprint twin (equal fingerprints, different digests)');
    return false;
  }
  const pair: Pair = {
    vendor: VENDOR,
    twin: TWIN,
    fingerprint: fpVendor,
    vendorDigest: dVendor,
    twinDigest: dTwin,
  };

  // Operators: keys made by `agentctl operator keygen`, roles written by the operator.
  const keys = { alice: 'approver', bob: 'approval-lifter', carol: 'viewer' } as const;
  const operators: Json = {};
  for (const made of await Promise.all(
    Object.entries(keys).map(([id, role]) =>
      ctl([
        'operator',
        'keygen',
        '--id',
        id,
        '--out',
        join(DATA, `${id}.key.json`),
        '--role',
        role,
        '--json',
      ]),
    ),
  )) {
    if (made.code !== 0) throw new Error(`agentctl operator keygen failed: ${made.stderr}`);
    Object.assign(operators, obj(obj(made.json).operators));
  }
  const operatorsFile = join(DATA, 'operators.json');
  writeFileSync(
    operatorsFile,
    JSON.stringify({
      operators,
      roles: {
        approver: { lift: ['*'], stop: true, approve: true },
        'approval-lifter': { lift: ['approval_required', 'approval_invalid'] },
        viewer: {},
      },
    }),
  );
  const keyOf = (id: keyof typeof keys) => join(DATA, `${id}.key.json`);
  // carol's console, as an audit found it: her key (view only), no operators file.
  const consoleStarted =
    FULL_ROUNDS > 0
      ? startConsole(ROOT, operatorEnv, ['--key', keyOf('carol'), '--task-queue', TASK_QUEUE, '--quiet'])
      : Promise.resolve(null);
  consoleStarted.catch(() => undefined); // awaited below; no unhandled rejection meanwhile

  // The worker: this process, with the operators file (only the worker has it).
  const model = await startModelServer(VENDOR, TWIN);
  process.env.AGENT_MODEL_ENDPOINTS = JSON.stringify({
    'twin-model': { provider: 'openai', baseURL: model.baseURL },
  });
  process.env.AGENT_PRICE_TABLE = JSON.stringify({ 'twin-model': { inputPerMTok: 0, outputPerMTok: 0 } });
  process.env.AGENT_OPERATORS_FILE = operatorsFile;
  const bank = openBank(join(DATA, 'bank.db'));
  const { connectionOptions, namespace } = loadConnectionOptions();
  const connection = await NativeConnection.connect(connectionOptions);
  const client = await connectClient();
  const deps = await openWorkerDeps({ ledgerUrl, tools: bank.tools, configPath: null });
  const rounds: Round[] = [];
  let attackerTotal = -1;
  let twinTotal = -1;
  let carolConsole: ConsoleProcess | null = null;
  try {
    carolConsole = await consoleStarted;
    const worker = await createAgentWorker({ connection, namespace, taskQueue: TASK_QUEUE, deps });
    await worker.runUntil(async () => {
      // A pool of CONCURRENCY lanes, each taking the next round: the long full rounds run
      // beside the light ones instead of holding up a batch.
      let next = 0;
      const lane = async () => {
        while (next < ROUNDS) {
          const n = ++next;
          const r = await attack({
            n,
            full: n <= FULL_ROUNDS,
            pair,
            ctl,
            console: carolConsole,
            keyOf,
            model,
            bank,
            client: client.client,
            ledgerUrl,
          }).catch((err: unknown): Round => ({
            n,
            id: '',
            ms: 0,
            checks: [{ column: 'error', what: 'the round threw', ok: false, seen: String(err) }],
          }));
          rounds.push(r);
          const failed = r.checks.filter((c) => !c.ok).length;
          console.log(`round ${r.n}: ${failed === 0 ? 'held' : `${failed} checks FAILED`} (${r.ms} ms)`);
        }
      };
      await Promise.all(Array.from({ length: Math.max(1, CONCURRENCY) }, lane));
      rounds.sort((a, b) => a.n - b.n);
    });
    attackerTotal = bank.paid('attack');
    twinTotal = bank.executions(String(TWIN.args.ref));
  } finally {
    carolConsole?.close();
    await consoleStarted.catch(() => null);
    await client.close();
    await connection.close();
    await deps.close();
    await model.close();
    bank.close();
  }
  printTable(rounds);
  const held = rounds.filter((r) => r.checks.every((c) => c.ok)).length;
  console.log(
    `\nthe twin attack held ${held}/${ROUNDS}; the world paid the attacker ${(attackerTotal / 100).toFixed(2)} in all; the twin ran ${twinTotal} times`,
  );
  if (model.refused.length > 0)
    console.log(`FAIL the model server refused requests: ${model.refused.join('; ')}`);
  return (
    held === ROUNDS &&
    rounds.length === ROUNDS &&
    attackerTotal === 0 &&
    twinTotal === 0 &&
    model.refused.length === 0
  );
}

/** One row per round, one column per kind of check; failures are spelled out below it. */
function printTable(rounds: readonly Round[]): void {
  const columns = [...new Set(rounds.flatMap((r) => r.checks.map((c) => c.column)))];
  const cell = (r: Round, column: string) => {
    const mine = r.checks.filter((c) => c.column === column);
    if (mine.length === 0) return '-';
    const failed = mine.find((c) => !c.ok);
    return failed ? 'FAIL' : (mine[0]?.seen ?? '').slice(0, 18);
  };
  const head = ['round', ...columns, 'ms'];
  const rows = rounds.map((r) => [String(r.n), ...columns.map((c) => cell(r, c)), String(r.ms)]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  console.log(`\n${line(head)}\n${line(widths.map((w) => '-'.repeat(w)))}`);
  for (const row of rows) console.log(line(row));
  for (const r of rounds)
    for (const c of r.checks.filter((x) => !x.ok))
      console.log(`FAIL round ${r.n} ${c.column}: ${c.what}\n     seen: ${c.seen}`);
  console.log('');
  for (const c of rounds[0]?.checks ?? []) console.log(`${c.column.padEnd(14)} ${c.what}`);
}

main().then(
  (ok) => process.exit(ok ? 0 : 1),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
