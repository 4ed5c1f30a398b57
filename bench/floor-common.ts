/**
 * What bench/floor.ts's in-repo and packed measurements (bench/floor-packed.ts) share: a
 * history's events and bytes, medians, and the fsync count of a process (strace).
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { temporal } from '@temporalio/proto';

type History = temporal.api.history.v1.IHistory;

export const enc = (e: temporal.api.history.v1.IHistoryEvent): number =>
  temporal.api.history.v1.HistoryEvent.encode(e as temporal.api.history.v1.HistoryEvent).finish().length;

/** Events, bytes and the activity events' mean sizes of one history. */
export function historyFigures(h: History): {
  events: number;
  bytes: number;
  scheduled: number;
  completed: number;
} {
  const events = h.events ?? [];
  const EventType = temporal.api.enums.v1.EventType;
  let bytes = 0;
  const sched: number[] = [];
  const done: number[] = [];
  for (const e of events) {
    const b = enc(e);
    bytes += b;
    if (e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED) sched.push(b);
    if (e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED) done.push(b);
  }
  return { events: events.length, bytes, scheduled: mean(sched), completed: mean(done) };
}

export const mean = (xs: number[]): number => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);
export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** Counts fsync/fdatasync calls of process `pid` (default this one; all threads) while `fn` runs. */
export async function countFsyncs(dir: string, fn: () => Promise<void>, pid = process.pid): Promise<number> {
  const out = join(dir, `strace-${randomUUID()}.txt`);
  const st = spawn('strace', ['-c', '-f', '-p', String(pid), '-e', 'trace=fsync,fdatasync', '-o', out], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const exited = new Promise<number | null>((r) => st.on('exit', (code) => r(code)));
  await new Promise<void>((resolve, reject) => {
    let err = '';
    st.on('error', reject);
    st.stderr.on('data', (d: Buffer) => {
      err += d.toString();
      if (/attached/.test(err)) resolve();
    });
    void exited.then(() => reject(new Error(`strace exited: ${err.trim()}`)));
  });
  try {
    await fn();
  } finally {
    st.kill('SIGINT');
    await exited;
  }
  let n = 0;
  for (const line of readFileSync(out, 'utf8').split('\n')) {
    const m = /^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(fsync|fdatasync)\s*$/.exec(line);
    if (m) n += Number(m[1]);
  }
  return n;
}
