/**
 * Spawns the real CLI (`tsx bin/agentctl.ts …`, what `npx tsx` runs) asynchronously, so an
 * in-process worker in the test keeps running while the CLI waits on it.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';

export const ROOT = join(__dirname, '..', '..');
const TSX = join(ROOT, 'node_modules', '.bin', process.platform === 'win32' ? 'tsx.cmd' : 'tsx');

/** What a CLI run printed and returned. */
export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `tsx <script> ...args` from the project root with `env` on top of process.env. */
export function runTsx(
  script: string,
  args: readonly string[],
  env: Record<string, string>,
  timeoutMs = 90_000,
): Promise<CliRun> {
  return runCommand(TSX, [script, ...args], env, timeoutMs);
}

/**
 * `node bin/agentctl.js …`: the launcher a user runs (`npx agentctl`, the package's `bin`), with
 * its own loader hooks, not tsx's CLI (issue 31 item 8).
 */
export const launcher = (
  args: readonly string[],
  env: Record<string, string>,
  timeoutMs?: number,
): Promise<CliRun> => runCommand(process.execPath, ['bin/agentctl.js', ...args], env, timeoutMs);

function runCommand(
  command: string,
  argv: readonly string[],
  env: Record<string, string>,
  timeoutMs = 90_000,
): Promise<CliRun> {
  const script = argv[0] ?? command;
  const args = argv.slice(1);
  return new Promise((resolve, reject) => {
    const child = spawn(command, argv, {
      cwd: ROOT,
      env: { ...process.env, ...env, FORCE_COLOR: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${script} ${args.join(' ')} timed out\nstdout:\n${stdout}\nstderr:\n${stderr}`));
    }, timeoutMs);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** `agentctl …` */
export const agentctl = (
  args: readonly string[],
  env: Record<string, string>,
  timeoutMs?: number,
): Promise<CliRun> => runTsx('bin/agentctl.ts', args, env, timeoutMs);

/** The environment agentctl needs to reach a harness's server, task queue, ledger and world. */
export function cliEnv(h: { taskQueue: string; dbUrl: string }): Record<string, string> {
  return {
    TEMPORAL_ADDRESS: process.env.TEMPORAL_TEST_ADDRESS as string,
    TEMPORAL_NAMESPACE: 'default',
    TEMPORAL_TASK_QUEUE: h.taskQueue,
    LEDGER_URL: h.dbUrl,
    WORLD_URL: h.dbUrl,
  };
}
