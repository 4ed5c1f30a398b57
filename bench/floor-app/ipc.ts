/**
 * The worker processes' side of bench:floor's packed measurement (bench/floor-packed.ts): the
 * parent asks, over the fork's IPC channel, for this process's CPU and RSS so far, and tells it
 * to stop. Kept out of the measured code path: one message per measured run.
 */

/** What a worker process answers to `{ cmd: 'usage' }`. */
export interface WorkerUsage {
  readonly type: 'usage';
  /** process.cpuUsage(): user and system µs since the process started. */
  readonly user: number;
  readonly system: number;
  readonly rss: number;
}

/** Answers usage requests; `stop` runs on `{ cmd: 'stop' }` (and on the parent going away). */
export function serveParent(stop: () => void): void {
  process.on('message', (m: { cmd?: string }) => {
    if (m?.cmd === 'usage') {
      const c = process.cpuUsage();
      const usage: WorkerUsage = {
        type: 'usage',
        user: c.user,
        system: c.system,
        rss: process.memoryUsage.rss(),
      };
      process.send?.(usage);
    } else if (m?.cmd === 'stop') stop();
  });
  process.on('disconnect', stop);
}

/** Tells the parent this worker polls. */
export function ready(): void {
  process.send?.({ type: 'ready', pid: process.pid });
}
