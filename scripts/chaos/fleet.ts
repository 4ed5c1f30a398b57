/**
 * The chaos run's worker processes: spawned as `node --import tsx scripts/chaos/worker.ts`,
 * SIGKILLed and restarted by the harness. A slot keeps its own world file across restarts
 * (a restarted worker is the same replica coming back); every kill is logged with the pid,
 * so an UNKNOWN ledger record can be traced to the process that died holding it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../../devserver/temporal-cli';

/** A worker slot: the process now running in it (if any) and its history. */
export interface WorkerSlot {
  readonly index: number;
  proc: ChildProcess | null;
  /** Every pid that ran in this slot. */
  readonly pids: number[];
  /** Resolves when the current process prints `ready`. */
  ready: Promise<void>;
}

/** One SIGKILL. */
export interface KillRecord {
  readonly slot: number;
  readonly pid: number;
  readonly atMs: number;
}

/** Settings shared by every worker of the fleet. */
export interface FleetEnv {
  readonly temporalAddress: string;
  readonly taskQueue: string;
  readonly ledgerUrl: string;
  readonly effectsUrl: string;
  readonly bundlePath: string;
  readonly dir: string;
  readonly leaseMs: number;
  readonly maxPauseMs: number;
  /** `AGENT_CODEC_KEYS` of every worker (the harness's client uses the same keys). */
  readonly codecKeys: string;
  /** More environment for every worker (worker tuning, `CHAOS_STATUS_MS`). */
  readonly extraEnv?: Readonly<Record<string, string>>;
}

/** The worker processes of one chaos run. */
export class Fleet {
  readonly slots: WorkerSlot[] = [];
  readonly kills: KillRecord[] = [];
  /** Exits nobody asked for (a worker that died by itself), by pid. */
  readonly unexpectedExits: { pid: number; code: number | null; signal: string | null; stderr: string }[] =
    [];
  private readonly killing = new Set<number>();
  /** Every process ever spawned and not yet exited: stopAll kills them all, whatever their slot. */
  private readonly children = new Set<ChildProcess>();
  /** Slots with a restart pending (a timer), so nothing else starts a second process there. */
  private readonly pending = new Map<number, NodeJS.Timeout>();
  private stopped = false;

  constructor(
    private readonly env: FleetEnv,
    size: number,
    private readonly log: (msg: string) => void,
  ) {
    for (let i = 0; i < size; i++)
      this.slots.push({ index: i, proc: null, pids: [], ready: Promise.resolve() });
  }

  /** Starts a process in every empty slot and waits until all are ready. */
  async startAll(): Promise<void> {
    await Promise.all(this.slots.map((s) => this.start(s)));
  }

  /** Restarts `slot` after `ms`. */
  restartLater(slot: WorkerSlot, ms: number): void {
    if (this.pending.has(slot.index) || this.stopped) return;
    this.pending.set(
      slot.index,
      setTimeout(() => {
        this.pending.delete(slot.index);
        void this.start(slot).catch(() => undefined);
      }, ms),
    );
  }

  /** Every slot has a live process: pending restarts are brought forward, empty slots started. */
  async ensureAll(): Promise<void> {
    for (const [index, timer] of this.pending) {
      clearTimeout(timer);
      this.pending.delete(index);
    }
    await Promise.all(this.slots.map((s) => (s.proc ? s.ready : this.start(s)).catch(() => undefined)));
  }

  /** Starts a process in `slot` (unless one runs there) and resolves once it polls. */
  start(slot: WorkerSlot): Promise<void> {
    if (this.stopped) return Promise.resolve();
    if (slot.proc && slot.proc.exitCode === null && slot.proc.signalCode === null) return slot.ready;
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', join(PROJECT_ROOT, 'scripts/chaos/worker.ts')],
      {
        cwd: PROJECT_ROOT,
        env: {
          ...process.env,
          TEMPORAL_ADDRESS: this.env.temporalAddress,
          TEMPORAL_TASK_QUEUE: this.env.taskQueue,
          TEMPORAL_NAMESPACE: 'default',
          LEDGER_URL: this.env.ledgerUrl,
          WORLD_URL: `sqlite:${join(this.env.dir, `world-${slot.index}.db`)}`,
          CHAOS_EFFECTS_URL: this.env.effectsUrl,
          CHAOS_BUNDLE: this.env.bundlePath,
          CHAOS_LEASE_MS: String(this.env.leaseMs),
          CHAOS_MAX_PAUSE_MS: String(this.env.maxPauseMs),
          AGENT_REAPER: 'off',
          AGENT_CODEC: 'on',
          AGENT_CODEC_KEYS: this.env.codecKeys,
          AGENT_CODEC_ACTIVE_KEY: '',
          AGENT_CODEC_KEY_FILE: '',
          // A killed worker's sticky queue hands its runs to the others after 2 s, not the SDK's 10 s.
          AGENT_STICKY_SCHEDULE_TO_START_MS: '2000',
          NODE_OPTIONS: '',
          ...this.env.extraEnv,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    slot.proc = child;
    this.children.add(child);
    const pid = child.pid ?? -1;
    slot.pids.push(pid);
    let stderr = '';
    child.stderr?.on('data', (d: Buffer) => {
      stderr = (stderr + d.toString()).slice(-4000);
    });
    slot.ready = new Promise<void>((resolve, reject) => {
      let out = '';
      child.stdout?.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes('ready')) resolve();
      });
      child.once('exit', (code, signal) => {
        reject(new Error(`worker ${pid} exited before it was ready (${code ?? signal}): ${stderr.trim()}`));
      });
    });
    slot.ready.catch(() => undefined);
    child.once('exit', (code, signal) => {
      this.children.delete(child);
      if (slot.proc === child) slot.proc = null;
      if (!this.killing.delete(pid) && !this.stopped) {
        this.unexpectedExits.push({ pid, code, signal, stderr: stderr.trim() });
        this.log(
          `worker ${pid} (slot ${slot.index}) exited by itself (${code ?? signal}: ${stderr.trim().split('\n').pop() ?? ''}); restarting it`,
        );
        this.restartLater(slot, 500);
      }
    });
    return slot.ready;
  }

  /** SIGKILLs the process in `slot` (no graceful shutdown: in-flight activities die mid-way). */
  async kill(slot: WorkerSlot, t0: number): Promise<KillRecord | null> {
    const child = slot.proc;
    if (!child || child.pid === undefined || child.exitCode !== null) return null;
    this.killing.add(child.pid);
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    child.kill('SIGKILL');
    await exited;
    const rec = { slot: slot.index, pid: child.pid, atMs: Date.now() - t0 };
    this.kills.push(rec);
    return rec;
  }

  /** Every pid that was SIGKILLed. */
  killedPids(): Set<number> {
    return new Set(this.kills.map((k) => k.pid));
  }

  /** SIGKILLs every process and stops restarting them. */
  async stopAll(): Promise<void> {
    this.stopped = true;
    for (const timer of this.pending.values()) clearTimeout(timer);
    this.pending.clear();
    await Promise.all(
      [...this.children].map(async (child) => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = new Promise<void>((r) => child.once('exit', () => r()));
        child.kill('SIGKILL');
        await exited;
      }),
    );
  }
}
