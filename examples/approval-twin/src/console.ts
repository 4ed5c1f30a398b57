/**
 * `npx agentctl console` as an operator starts it — here carol's, with her key (view only) and
 * no operators file, the setting in which an audit found the console answering 200 "stop
 * requested" for a stop the worker refused. Its HTTP API for scripts: `Authorization: Bearer
 * TOKEN` (the token of the URL it prints), `POST /api/stop {runId, reason}`.
 */
import { spawn } from 'node:child_process';

export interface ConsoleProcess {
  /** `POST /api/stop`: the HTTP status and the JSON answer. */
  stop(runId: string, reason: string): Promise<{ status: number; body: Record<string, unknown> }>;
  close(): void;
}

export function startConsole(
  cwd: string,
  env: NodeJS.ProcessEnv,
  args: readonly string[],
): Promise<ConsoleProcess> {
  // Its own process group, so that closing it ends npx and the agentctl under it together.
  const child = spawn('npx', ['--no-install', 'agentctl', 'console', '--port', '0', ...args], {
    cwd,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const close = () => {
    if (child.pid !== undefined && child.exitCode === null) {
      try {
        process.kill(-child.pid, 'SIGTERM');
      } catch {
        // already gone
      }
    }
  };
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    const timer = setTimeout(() => {
      close();
      reject(new Error(`agentctl console printed no URL in 60 s:\n${out}\n${err}`));
    }, 60_000);
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`agentctl console exited (${code}):\n${out}\n${err}`));
    });
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      const url = /open: (\S+)/.exec(out)?.[1];
      if (!url) return;
      clearTimeout(timer);
      child.removeAllListeners('exit');
      const u = new URL(url);
      const token = u.searchParams.get('token') ?? '';
      resolve({
        async stop(runId, reason) {
          const r = await fetch(`${u.origin}/api/stop`, {
            method: 'POST',
            headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
            body: JSON.stringify({ runId, reason }),
          });
          return { status: r.status, body: (await r.json()) as Record<string, unknown> };
        },
        close,
      });
    });
  });
}
