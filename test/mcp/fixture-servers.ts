/**
 * Starts the MCP fixture servers of test/mcp/servers as real subprocesses and reads
 * their call counters.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { readState, type FixtureState } from './servers/fixture-tools';

/** The repository root (the stdio server's cwd, so `--import tsx` resolves). */
export const REPO_ROOT = resolve(__dirname, '../..');
/** The stdio fixture server. */
export const STDIO_SERVER = join(__dirname, 'servers/stdio-server.ts');
const HTTP_SERVER = join(__dirname, 'servers/http-server.ts');

/** A fresh state file path. */
export function stateFile(label: string): string {
  return join(mkdtempSync(join(tmpdir(), `alg-mcp-${label}-`)), 'state.json');
}

/** Calls that reached each tool so far. */
export function counters(file: string): Record<string, number> {
  return readState(file).counters;
}

/** `tools/call` requests that reached the server so far, by tool. */
export function requests(file: string): Record<string, number> {
  return readState(file).requests;
}

/** The whole state (counters, notes, version, pids). */
export function state(file: string): FixtureState {
  return readState(file);
}

/** A running HTTP fixture server. */
export interface HttpFixture {
  readonly port: number;
  readonly url: string;
  readonly child: ChildProcess;
  /** SIGKILLs the process and waits for it to exit. */
  kill(): Promise<void>;
}

/** Starts the HTTP fixture on `port` (0: any free port) and waits until it listens. */
export async function startHttpFixture(file: string, port = 0): Promise<HttpFixture> {
  const child = spawn(process.execPath, ['--import', 'tsx', HTTP_SERVER, file, String(port)], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const actual = await new Promise<number>((ok, fail) => {
    let out = '';
    const onData = (b: Buffer) => {
      out += b.toString();
      const m = /listening (\d+)/.exec(out);
      if (m) {
        child.stdout?.off('data', onData);
        ok(Number(m[1]));
      }
    };
    child.stdout?.on('data', onData);
    child.once('exit', (code) => fail(new Error(`http fixture exited (${code}) before listening: ${out}`)));
  });
  const exited = new Promise<void>((ok) => child.once('exit', () => ok()));
  return {
    port: actual,
    url: `http://127.0.0.1:${actual}/mcp`,
    child,
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}
