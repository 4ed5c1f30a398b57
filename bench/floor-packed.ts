/**
 * bench:floor's default measurement: the product as a user installs and runs it, against the
 * same work written by hand on Temporal in the same app.
 *
 *  - The package is built and packed (`npm run build`, `npm pack`) and the tarball is
 *    extracted into an app's node_modules/agent-loop-guard, as examples/run.sh installs it; the
 *    app lives in the repository's `.bench-app/` (ignored by git), so Node resolves the
 *    package's dependencies from the repository's node_modules (package-lock.json's versions).
 *  - The app's two workers (bench/floor-app/) are compiled to JavaScript and run as separate
 *    `node` processes: the guarded one exactly as docs/using.md shows (`openWorkerDeps` +
 *    `createAgentWorker`, which bundles the packed `dist` workflow and reads its codec key from
 *    AGENT_CODEC_KEYS), the hand-written one a bare `Worker.create` (bench/floor-workflow.ts and
 *    an exactly-once SQLite activity), with the same codec unless `--baseline-codec off`.
 *  - This process only starts the dev server (fast dispatch), starts the runs and waits for
 *    them; a mode's CPU is the `process.cpuUsage()` delta of the worker process that ran it,
 *    asked over the fork's IPC channel before and after the run.
 *
 * Modes, interleaved over the rounds (the order rotates each round): `bare`, `bare-once`,
 * `read`, `write` (atomicWithLedger: the insert in the ledger's transaction) and `write-own`
 * (the tool's own SQLite file, as examples/own-agent's store); asked for by name, `bare-plain`
 * and `bare-once-plain` (the hand-written worker without the codec, a third process: the
 * codec's share, paired in the same rounds). Each ratio is reported as the min / median / max
 * over the rounds' paired ratios.
 *
 * `--package source` runs the same app files against the repository's TypeScript sources
 * through tsx instead of the tarball (no build): the difference is what `dist` changes.
 */
import { fork, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import {
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { transformSync } from 'esbuild';
import { dataConverterOf, loadPayloadCodec } from '../codec';
import type { RunInput } from '../common/contracts';
import { agentRunResult } from '../client/runs';
import { startThrowawayDevServer } from '../devserver/dev-server';
import { cliWithDynamicConfig, FAST_DISPATCH_DYNAMIC_CONFIG } from '../scripts/chaos/temporal';
import { countFsyncs, historyFigures, median } from './floor-common';
import type { WorkerUsage } from './floor-app/ipc';
import type { FloorRunInput } from './floor-workflow';

const ROOT = resolve(__dirname, '..');

export const PACKED_MODES = [
  'bare',
  'bare-once',
  'read',
  'write',
  'write-own',
  'bare-plain',
  'bare-once-plain',
] as const;
export type PackedMode = (typeof PACKED_MODES)[number];
/** The modes measured without --modes: `bare-plain` and `bare-once-plain` are asked for by name. */
export const DEFAULT_PACKED_MODES: readonly PackedMode[] = [
  'bare',
  'bare-once',
  'read',
  'write',
  'write-own',
];

const BARE_MODES: readonly PackedMode[] = ['bare', 'bare-once', 'bare-plain', 'bare-once-plain'];
/** The `-plain` modes: the hand-written worker without the codec, in a third process. */
const isPlain = (m: PackedMode): boolean => m.endsWith('-plain');

/** Options of the packed measurement (bench/floor.ts parses them). */
export interface PackedOptions {
  readonly rounds: number;
  readonly steps: number;
  readonly fsyncSteps: number;
  readonly modes: readonly PackedMode[];
  readonly json: boolean;
  /** `dist`: the packed tarball; `source`: the repository's TypeScript through tsx. */
  readonly packageFrom: 'dist' | 'source';
  /** Build and pack before installing (false: reuse the app's installed tarball). */
  readonly build: boolean;
  /** The hand-written worker's payloads through the same codec (true) or Temporal's default. */
  readonly baselineCodec: boolean;
}

/** One run's figures. */
interface Sample {
  /** Wall ms per step, start to result. */
  ms: number;
  /** The worker process's CPU ms per step. */
  cpuMs: number;
  events: number;
  bytes: number;
}

/** The packed app's flags both benches take: `--package dist|source`, `--no-build`, `--baseline-codec on|off`. */
export function appFlag(
  o: { packageFrom: 'dist' | 'source'; build: boolean; baselineCodec: boolean },
  flag: '--package' | '--no-build' | '--baseline-codec',
  value: () => string | undefined,
): void {
  if (flag === '--no-build') {
    o.build = false;
    return;
  }
  const v = value();
  if (flag === '--package') {
    if (v !== 'dist' && v !== 'source') throw new Error(`--package: expected dist or source, got ${v}`);
    o.packageFrom = v;
    return;
  }
  if (v !== 'on' && v !== 'off') throw new Error(`--baseline-codec: expected on or off, got ${v}`);
  o.baselineCodec = v === 'on';
}

/** Compiles one app file to CommonJS, pointing the package imports where `packageFrom` says. */
function compileAppFile(src: string, out: string, packageFrom: 'dist' | 'source'): void {
  let code = transformSync(readFileSync(src, 'utf8'), {
    loader: 'ts',
    format: 'cjs',
    target: 'es2022',
    sourcefile: src,
  }).code;
  const entry: Record<string, [string, string]> = {
    '../../index': ['agent-loop-guard', join(ROOT, 'index.ts')],
    '../../worker/api': ['agent-loop-guard/worker', join(ROOT, 'worker/api.ts')],
  };
  for (const [from, [packed, source]] of Object.entries(entry))
    code = code.split(JSON.stringify(from)).join(JSON.stringify(packageFrom === 'dist' ? packed : source));
  writeFileSync(out, code);
}

/**
 * Builds, packs and installs the package into the bench's app `.bench-app/NAME`; compiles the
 * app's files (bench/floor-app/, bench/floor-workflow.ts) into it. Returns the app's folder.
 */
export function prepareApp(
  name: string,
  o: Pick<PackedOptions, 'packageFrom' | 'build'>,
  log: (m: string) => void,
): string {
  const app = join(ROOT, '.bench-app', name);
  mkdirSync(app, { recursive: true });
  const sh = (cmd: string, args: string[], cwd = ROOT): string => {
    const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed: ${r.stderr || r.stdout}`);
    return r.stdout;
  };
  if (o.packageFrom === 'dist' && o.build) {
    log('building and packing the package…');
    sh('npm', ['run', '-s', 'build']);
    const tarball = sh('npm', ['pack', '--ignore-scripts', '--silent', '--pack-destination', app])
      .trim()
      .split('\n')
      .pop()!;
    const pkg = join(app, 'node_modules', 'agent-loop-guard');
    rmSync(pkg, { recursive: true, force: true });
    mkdirSync(pkg, { recursive: true });
    sh('tar', ['-xzf', join(app, tarball), '-C', pkg, '--strip-components=1']);
    rmSync(join(app, tarball));
  }
  const files = join(ROOT, 'bench', 'floor-app');
  for (const f of readdirSync(files).filter((f) => f.endsWith('.ts')))
    compileAppFile(join(files, f), join(app, f.replace(/\.ts$/, '.js')), o.packageFrom);
  compileAppFile(join(ROOT, 'bench', 'floor-workflow.ts'), join(app, 'floor-workflow.js'), o.packageFrom);
  return app;
}

/** A worker process of the app and its IPC channel. */
export class AppWorker {
  private constructor(
    readonly child: ChildProcess,
    private readonly exited: Promise<void>,
  ) {}

  static async start(
    file: string,
    env: Record<string, string>,
    packageFrom: 'dist' | 'source',
    logFile: string,
  ): Promise<AppWorker> {
    const fd = openSync(logFile, 'a');
    const base = { ...process.env };
    delete base.NODE_OPTIONS;
    const child = fork(file, [], {
      cwd: packageFrom === 'dist' ? join(file, '..') : ROOT,
      // Plain node for the packed app; tsx only when the package is read from its sources.
      execArgv: packageFrom === 'dist' ? [] : ['--import', 'tsx'],
      env: { ...base, ...env },
      stdio: ['ignore', fd, fd, 'ipc'],
    });
    closeSync(fd);
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    await new Promise<void>((res, rej) => {
      child.once('message', () => res());
      child.once('exit', (code) =>
        rej(new Error(`${file} exited ${code}: ${readFileSync(logFile, 'utf8').slice(-2000)}`)),
      );
    });
    return new AppWorker(child, exited);
  }

  /** The process's CPU (µs) and RSS so far. */
  usage(): Promise<WorkerUsage> {
    return new Promise((res) => {
      const on = (m: WorkerUsage) => {
        if (m?.type !== 'usage') return;
        this.child.off('message', on);
        res(m);
      };
      this.child.on('message', on);
      this.child.send({ cmd: 'usage' });
    });
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.connected) this.child.send({ cmd: 'stop' });
    const t = setTimeout(() => this.child.kill('SIGKILL'), 15_000);
    await this.exited;
    clearTimeout(t);
  }
}

/** Runs the packed measurement and prints its tables. */
export async function packedFloor(o: PackedOptions): Promise<void> {
  const log = (m: string) => process.stderr.write(`${m}\n`);
  const wall0 = performance.now();
  const load0 = loadavg();
  const app = prepareApp('floor', o, log);
  const dir = mkdtempSync(join(tmpdir(), 'alg-bench-floor-packed-'));
  const cliPath = await cliWithDynamicConfig(dir, FAST_DISPATCH_DYNAMIC_CONFIG);
  const server = await startThrowawayDevServer({ cliPath });
  const codecKeys = `k1:${randomBytes(32).toString('base64')}`;
  const productQueue = `floor-product-${randomUUID()}`;
  const bareQueue = `floor-bare-${randomUUID()}`;
  const common = { TEMPORAL_ADDRESS: server.address, FLOOR_DIR: dir };
  let product: AppWorker | undefined;
  let bare: AppWorker | undefined;
  let plain: AppWorker | undefined;
  const connection = await Connection.connect({ address: server.address });
  const codecConverter = dataConverterOf(loadPayloadCodec({ AGENT_CODEC_KEYS: codecKeys }));
  const productClient = new Client({ connection, namespace: 'default', dataConverter: codecConverter });
  const plainClient = new Client({ connection, namespace: 'default' });
  const bareClient = o.baselineCodec ? productClient : plainClient;
  const plainQueue = `floor-plain-${randomUUID()}`;
  const samples = new Map<PackedMode, Sample[]>(o.modes.map((m) => [m, []]));
  const fsyncs = new Map<PackedMode, number>();
  let rss: { product: number; bare: number } | null = null;
  try {
    log(`starting the app's workers (${o.packageFrom})…`);
    [product, bare] = await Promise.all([
      AppWorker.start(
        join(app, 'product-worker.js'),
        { ...common, FLOOR_TASK_QUEUE: productQueue, AGENT_CODEC_KEYS: codecKeys },
        o.packageFrom,
        join(dir, 'product-worker.log'),
      ),
      AppWorker.start(
        join(app, 'bare-worker.js'),
        { ...common, FLOOR_TASK_QUEUE: bareQueue, AGENT_CODEC_KEYS: o.baselineCodec ? codecKeys : '' },
        o.packageFrom,
        join(dir, 'bare-worker.log'),
      ),
    ]);
    if (o.modes.some(isPlain)) {
      mkdirSync(join(dir, 'plain'));
      plain = await AppWorker.start(
        join(app, 'bare-worker.js'),
        { ...common, FLOOR_DIR: join(dir, 'plain'), FLOOR_TASK_QUEUE: plainQueue, AGENT_CODEC_KEYS: '' },
        o.packageFrom,
        join(dir, 'plain-worker.log'),
      );
    }
    const workerOf = (m: PackedMode): AppWorker =>
      isPlain(m) ? plain! : BARE_MODES.includes(m) ? bare! : product!;

    const runOnce = async (mode: PackedMode, steps: number): Promise<WorkflowHandle> => {
      const tag = randomUUID().slice(0, 8);
      const workflowId = `floor-${mode}-${tag}`;
      if (BARE_MODES.includes(mode)) {
        const input: FloorRunInput = { tag, steps, once: mode.startsWith('bare-once') };
        const h = await (isPlain(mode) ? plainClient : bareClient).workflow.start('floorRun', {
          taskQueue: isPlain(mode) ? plainQueue : bareQueue,
          workflowId,
          args: [input],
        });
        const last = await h.result();
        if (last !== steps - 1) throw new Error(`floor run ${workflowId} answered ${String(last)}`);
        return h;
      }
      const tool = mode === 'read' ? 'floor_read' : mode === 'write-own' ? 'floor_write_own' : 'floor_write';
      const input: RunInput = {
        goal: `bench floor ${tag}`,
        planner: {
          kind: 'scripted',
          live: true,
          script: {
            calls: Array.from({ length: steps }, (_, n) => ({
              tool,
              args: { tag, n, ...(n === steps - 1 ? { final: true } : {}) },
            })),
          },
        },
        guard: { maxSteps: steps + 10, maxMs: 1e12, noProgressLimit: steps + 10 },
        resumeWindowMs: 1000,
      };
      const h = await productClient.workflow.start('agentRun', {
        taskQueue: productQueue,
        workflowId,
        args: [input],
      });
      const r = await agentRunResult(h);
      if (r?.terminal_state !== 'COMPLETED' || r.executed !== steps)
        throw new Error(
          `run ${workflowId} ended ${r?.terminal_state} ${r?.reason} after ${r?.executed} steps`,
        );
      return h;
    };

    const measure = async (mode: PackedMode): Promise<Sample> => {
      const w = workerOf(mode);
      const u0 = await w.usage();
      const t0 = performance.now();
      const h = await runOnce(mode, o.steps);
      const ms = performance.now() - t0;
      const u1 = await w.usage();
      const f = historyFigures(await h.fetchHistory());
      return {
        ms: ms / o.steps,
        cpuMs: (u1.user + u1.system - u0.user - u0.system) / 1000 / o.steps,
        events: f.events / o.steps,
        bytes: f.bytes / o.steps,
      };
    };

    log(`warm-up (${o.modes.join(', ')}: 20 steps each)…`);
    for (const m of o.modes) await runOnce(m, 20);
    for (let r = 0; r < o.rounds; r++) {
      const order = o.modes.map((_, i) => o.modes[(i + r) % o.modes.length]!);
      for (const m of order) {
        const s = await measure(m);
        samples.get(m)!.push(s);
        log(`round ${r + 1}/${o.rounds} ${m}: ${s.ms.toFixed(2)} ms/step, ${s.cpuMs.toFixed(2)} ms CPU/step`);
      }
    }
    if (o.fsyncSteps > 0) {
      for (const m of o.modes) {
        const n = await countFsyncs(
          dir,
          () => runOnce(m, o.fsyncSteps).then(() => undefined),
          workerOf(m).child.pid,
        );
        fsyncs.set(m, n / o.fsyncSteps);
        log(`fsyncs ${m}: ${(n / o.fsyncSteps).toFixed(2)}/step`);
      }
    }
    rss = { product: (await product.usage()).rss, bare: (await bare.usage()).rss };
  } finally {
    await Promise.allSettled([product?.stop(), bare?.stop(), plain?.stop()]);
    await connection.close();
    await server.stop().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
  const load1 = loadavg();
  const wallS = (performance.now() - wall0) / 1000;

  const med = (m: PackedMode, k: keyof Sample): number => median((samples.get(m) ?? []).map((s) => s[k]));
  /** min / median / max over the rounds of a/b paired by round. */
  const spread = (a: PackedMode, b: PackedMode, k: keyof Sample): [number, number, number] | null => {
    const sa = samples.get(a);
    const sb = samples.get(b);
    if (!sa?.length || !sb?.length) return null;
    const rs = sa.map((s, i) => s[k] / sb[i]![k]);
    return [Math.min(...rs), median(rs), Math.max(...rs)];
  };
  const rows = o.modes.map((m) => ({
    mode: m,
    msPerStep: med(m, 'ms'),
    cpuMsPerStep: med(m, 'cpuMs'),
    eventsPerStep: med(m, 'events'),
    bytesPerStep: med(m, 'bytes'),
    fsyncsPerStep: fsyncs.get(m) ?? null,
  }));
  const pairs: [string, PackedMode, PackedMode, keyof Sample, number | null][] = [
    ['guarded write / hand-written exactly-once, wall', 'write', 'bare-once', 'ms', 1.2],
    ['guarded write / hand-written exactly-once, worker CPU', 'write', 'bare-once', 'cpuMs', 1.2],
    ['guarded write (own store) / hand-written exactly-once, wall', 'write-own', 'bare-once', 'ms', null],
    [
      'guarded write (own store) / hand-written exactly-once, worker CPU',
      'write-own',
      'bare-once',
      'cpuMs',
      null,
    ],
    ['guarded read / bare call, wall', 'read', 'bare', 'ms', 1.2],
    ['guarded read / bare call, worker CPU', 'read', 'bare', 'cpuMs', 1.2],
    ['history bytes/step, write / hand-written exactly-once', 'write', 'bare-once', 'bytes', 1.5],
    ['history bytes/step, read / bare call', 'read', 'bare', 'bytes', null],
    [
      'guarded write / hand-written exactly-once without codec, worker CPU',
      'write',
      'bare-once-plain',
      'cpuMs',
      null,
    ],
    ['guarded read / bare call without codec, worker CPU', 'read', 'bare-plain', 'cpuMs', null],
    ['hand-written exactly-once, codec / none, worker CPU', 'bare-once', 'bare-once-plain', 'cpuMs', null],
    ['bare call, codec / none, worker CPU', 'bare', 'bare-plain', 'cpuMs', null],
    [
      'history bytes/step, write / hand-written exactly-once without codec',
      'write',
      'bare-once-plain',
      'bytes',
      null,
    ],
  ];
  const ratios = pairs
    .map(([name, a, b, k, target]) => ({ name, target, value: spread(a, b, k) }))
    .filter((r) => r.value !== null);
  const load = { start: load0.map((x) => +x.toFixed(2)), end: load1.map((x) => +x.toFixed(2)), cores: 2 };
  if (o.json) {
    process.stdout.write(`${JSON.stringify({ options: o, load, wallS, rss, rows, ratios }, null, 2)}\n`);
    return;
  }
  const f = (x: number | null | undefined, d = 2) => (x == null || Number.isNaN(x) ? '–' : x.toFixed(d));
  const out: string[] = [];
  out.push(
    `bench:floor (packed: ${o.packageFrom === 'dist' ? 'the npm-packed tarball in an app, plain node' : 'the TypeScript sources through tsx'}; baseline codec ${o.baselineCodec ? 'on' : 'off'}) — ${o.rounds} interleaved rounds of ${o.steps} steps; load ${load.start.join('/')} → ${load.end.join('/')}; wall ${wallS.toFixed(0)} s; worker RSS at the end: guarded ${f((rss?.product ?? NaN) / 2 ** 20, 0)} MiB, hand-written ${f((rss?.bare ?? NaN) / 2 ** 20, 0)} MiB`,
  );
  out.push('');
  out.push('| mode            | ms/step | worker CPU ms/step | events/step | bytes/step | fsyncs/step |');
  out.push('| --------------- | ------: | -----------------: | ----------: | ---------: | ----------: |');
  for (const r of rows)
    out.push(
      `| ${r.mode.padEnd(15)} | ${f(r.msPerStep)} | ${f(r.cpuMsPerStep)} | ${f(r.eventsPerStep)} | ${f(r.bytesPerStep, 0)} | ${f(r.fsyncsPerStep)} |`,
    );
  out.push('');
  out.push('| ratio (paired rounds) | min | median | max | target |');
  out.push('| --------------------- | --: | -----: | --: | -----: |');
  for (const r of ratios) {
    const [lo, mid, hi] = r.value!;
    out.push(
      `| ${r.name} | ${f(lo)}× | ${f(mid)}× | ${f(hi)}× | ${r.target === null ? '–' : `≤ ${r.target}×`} |`,
    );
  }
  process.stdout.write(`${out.join('\n')}\n`);
}
