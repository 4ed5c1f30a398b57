/** Shared by the scenarios: the model server, a worker child process, a client, counters. */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { startModelServer, type ModelServer, type Script } from './server.ts';

export const ADDRESS = process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233';
const ROOT = fileURLToPath(new URL('..', import.meta.url));

export interface Bench {
  readonly name: string;
  readonly dir: string;
  readonly queue: string;
  readonly server: ModelServer;
  readonly client: Client;
  startWorker(env?: Record<string, string>): Promise<ChildProcess>;
  lines(file: string): number;
  close(): Promise<void>;
}

export async function bench(name: string, script: Script): Promise<Bench> {
  const dir = join(ROOT, 'data', name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const server = await startModelServer(script);
  const connection = await Connection.connect({ address: ADDRESS });
  const client = new Client({ connection });
  const queue = `strands-peer-${name}-${Date.now()}`;
  const workers: ChildProcess[] = [];
  return {
    name,
    dir,
    queue,
    server,
    client,
    async startWorker(env = {}) {
      const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src', 'worker.ts')], {
        env: {
          ...process.env,
          TEMPORAL_ADDRESS: ADDRESS,
          TASK_QUEUE: queue,
          MODEL_URL: server.baseURL,
          DATA_DIR: dir,
          ...env,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      workers.push(child);
      let log = '';
      child.stdout!.on('data', (d: Buffer) => (log += d.toString()));
      child.stderr!.on('data', (d: Buffer) => (log += d.toString()));
      child.on('exit', (code, sig) => {
        if (code && code !== 0)
          console.error(`[${name}] worker exited ${code} ${sig ?? ''}\n${log.slice(-3000)}`);
      });
      const t0 = Date.now();
      while (!log.includes('worker up')) {
        if (child.exitCode !== null) throw new Error(`worker died at start:\n${log}`);
        if (Date.now() - t0 > 120_000) throw new Error(`worker not up after 120 s:\n${log}`);
        await sleep(200);
      }
      return child;
    },
    lines(file) {
      const p = join(dir, file);
      return existsSync(p) ? readFileSync(p, 'utf8').split('\n').filter(Boolean).length : 0;
    },
    async close() {
      for (const w of workers) if (w.exitCode === null && w.signalCode === null) w.kill('SIGTERM');
      await sleep(500);
      for (const w of workers) if (w.exitCode === null && w.signalCode === null) w.kill('SIGKILL');
      await server.close();
      await connection.close();
    },
  };
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The run's status, history length and size, and its pending activities' last failures. */
export async function describe(b: Bench, workflowId: string) {
  const d = await b.client.workflow.getHandle(workflowId).describe();
  const raw = d.raw.workflowExecutionInfo;
  return {
    status: d.status.name,
    historyLength: Number(raw?.historyLength ?? 0),
    historySizeBytes: Number(raw?.historySizeBytes ?? 0),
    pending: (d.raw.pendingActivities ?? []).map((p) => ({
      type: p.activityType?.name,
      attempt: p.attempt,
      lastFailure: p.lastFailure?.message,
      cause: p.lastFailure?.cause?.message,
      stack: (p.lastFailure?.stackTrace ?? '').split('\n').slice(0, 3).join(' | '),
    })),
  };
}
