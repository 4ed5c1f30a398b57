/**
 * `npx agentctl …` as an operator types it: the package's own bin (node_modules/.bin/agentctl,
 * the launcher of the packed tarball), a process of its own with the operator's environment,
 * which has no operators file: the usual deployment keeps that on the workers only.
 */
import { spawn } from 'node:child_process';

export interface CtlResult {
  readonly args: readonly string[];
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly ms: number;
  /** stdout parsed as JSON, when it is JSON. */
  readonly json: unknown;
}

export function agentctl(cwd: string, env: NodeJS.ProcessEnv, args: readonly string[]): Promise<CtlResult> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn('npx', ['--no-install', 'agentctl', ...args], {
      cwd,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.once('error', reject);
    child.once('close', (code) => {
      let json: unknown = undefined;
      try {
        json = JSON.parse(stdout) as unknown;
      } catch {
        // not JSON: a human-readable answer
      }
      resolve({ args, code, stdout, stderr, ms: Date.now() - started, json });
    });
  });
}
