/** Runs a fixture script in a real child process (node + the tsx loader) and collects what happened. */
import { spawn } from 'node:child_process';
import path from 'node:path';

/** Exit code, signal and output of a fixture process. */
export interface ChildResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Starts `test/ledger/fixtures/<script>` with JSON `input` as its only argument. */
export function runFixture(script: string, input: unknown): Promise<ChildResult> {
  const file = path.join(__dirname, '..', 'fixtures', script);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', file, JSON.stringify(input)], {
      cwd: path.join(__dirname, '..', '..', '..'),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

/** Resolves after `ms`. */
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
