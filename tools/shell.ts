/**
 * A shell tool for coding agents (docs/own-agent.md "A coding agent's shell"): runs one command
 * in a working directory and answers what a coding agent needs the guard to know.
 *
 * - **A non-zero exit is a result for the model**, not a thrown error: `{exitCode, output}` as a
 *   SUCCESS. A failing test run is information; thrown, it would be a `tool_error` the guard
 *   counts as a failed call (and, repeated, a `precondition_unchanged` refusal).
 * - **It says what it changed**: the workspace is fingerprinted before and after the command
 *   (by default from git: the diff against HEAD and the untracked files' contents) and the
 *   result carries `workspace: {before, after, size}` (docs/spec.md §3 "Workspace reports"): an
 *   edit that prints nothing is progress, and the same edit growing the workspace again and
 *   again is refused (`reapplied_edit`). A fingerprint that throws is reported as
 *   `workspace: {error}`; the guard stops the run NEEDS_HUMAN `workspace_unknown`.
 * - **A command that never returns is killed** after `timeoutMs` (its process group, SIGKILL) and
 *   answered as a result (`timedOut: true`, exit code null) — well inside the run's tool activity
 *   timeout, so Temporal never times the activity out and runs the command a second time.
 *
 * It is a read to the runtime (`effect: 'read'`): workspace edits are local and the model may
 * run the same command again (a test run); the ledger is for writes to the outside world.
 */
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { z } from 'zod';
import type { WorkspaceReport } from '../guard';
import { defineTool, type ToolDefinition } from './define-tool';

const run = promisify(execFile);

/** A workspace's state: a fingerprint and the size of what differs from the base. */
export interface WorkspaceState {
  readonly fingerprint: string;
  readonly size: number;
}

/** Takes a workspace's fingerprint (may throw: the result then reports `{error}`). */
export type WorkspaceFingerprinter = (cwd: string) => WorkspaceState | Promise<WorkspaceState>;

/** git's empty tree: the base of a repository without a commit. */
const EMPTY_TREE = '4b825dc642cb6eb9a060e54bf8d69288fbee4904';

/**
 * The default fingerprint, from git: the diff of the working tree against HEAD (binary-safe)
 * and every untracked file's path and contents. Size: the diff's bytes plus the untracked
 * files' bytes. Throws when `cwd` is not in a git work tree.
 */
export async function gitWorkspace(cwd: string): Promise<WorkspaceState> {
  const git = (args: string[]) =>
    run('git', ['-C', cwd, ...args], { maxBuffer: 256 * 1024 * 1024, encoding: 'buffer' }).then(
      (r) => r.stdout,
    );
  const head = await git(['rev-parse', '--verify', '-q', 'HEAD']).then(
    () => 'HEAD',
    () => EMPTY_TREE,
  );
  const diff = await git(['diff', head, '--binary']);
  const untracked = (await git(['ls-files', '--others', '--exclude-standard', '-z']))
    .toString('utf8')
    .split('\0')
    .filter((p) => p !== '')
    .sort();
  const hash = createHash('sha256').update(diff);
  let size = diff.length;
  for (const p of untracked) {
    const body = await readFile(join(cwd, p)).catch(() => Buffer.alloc(0));
    hash.update(`\0${p}\0`).update(body);
    size += body.length;
  }
  return { fingerprint: hash.digest('hex'), size };
}

/** Options of {@link shellTool}. */
export interface ShellToolOptions {
  /** The working directory every command runs in (the agent's workspace). */
  readonly cwd: string;
  /** The tool's name (default `shell`). */
  readonly name?: string;
  /**
   * Kill a command after this long (default 120 s). Keep it below the run's
   * `timeouts.toolStartToCloseMs` (default 300 s): then the activity itself never times out.
   */
  readonly timeoutMs?: number;
  /** The most characters of output the model gets (default 20,000: the head and the tail). */
  readonly maxOutputChars?: number;
  /** How the workspace is fingerprinted (default {@link gitWorkspace}); null: no reports. */
  readonly fingerprint?: WorkspaceFingerprinter | null;
  /** The shell (default `bash`). */
  readonly shell?: string;
}

/** What a command answers. */
export interface ShellOutput {
  /** The exit code; null when the command was killed (timeout, cancellation) or died of a signal. */
  readonly exitCode: number | null;
  /** stdout and stderr as they came, bounded. */
  readonly output: string;
  readonly timedOut?: true;
  readonly truncated?: true;
}

const args = z.object({ command: z.string().min(1).max(100_000) }).strict();

async function take(fp: WorkspaceFingerprinter, cwd: string): Promise<WorkspaceState | { error: string }> {
  try {
    const s = await fp(cwd);
    return { fingerprint: s.fingerprint, size: s.size };
  } catch (err) {
    return { error: String((err as Error)?.message ?? err).slice(0, 2_000) || 'fingerprint failed' };
  }
}

/** The report of a call from the states before and after it. */
export function workspaceReport(
  before: WorkspaceState | { error: string },
  after: WorkspaceState | { error: string },
): WorkspaceReport {
  if ('error' in before) return { error: `before the command: ${before.error}` };
  if ('error' in after) return { error: `after the command: ${after.error}` };
  return { before: before.fingerprint, after: after.fingerprint, size: after.size };
}

function bound(text: string, max: number): { output: string; truncated?: true } {
  if (text.length <= max) return { output: text };
  const half = Math.floor(max / 2);
  return {
    output: `${text.slice(0, half)}\n[… ${text.length - max} characters left out …]\n${text.slice(-half)}`,
    truncated: true,
  };
}

/** Runs one command; never rejects for the command's own failure. */
export function runCommand(
  command: string,
  o: { cwd: string; timeoutMs: number; shell: string; signal?: AbortSignal; heartbeat?: () => void },
): Promise<{ exitCode: number | null; output: string; timedOut: boolean }> {
  return new Promise((resolve) => {
    const child = spawn(o.shell, ['-c', command], {
      cwd: o.cwd,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const chunks: Buffer[] = [];
    let timedOut = false;
    const kill = () => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      kill();
    }, o.timeoutMs);
    const beat = o.heartbeat ? setInterval(o.heartbeat, 5_000) : undefined;
    const onAbort = () => kill();
    o.signal?.addEventListener('abort', onAbort, { once: true });
    child.stdout.on('data', (b: Buffer) => chunks.push(b));
    child.stderr.on('data', (b: Buffer) => chunks.push(b));
    const done = (exitCode: number | null, extra = '') => {
      clearTimeout(timer);
      if (beat) clearInterval(beat);
      o.signal?.removeEventListener('abort', onAbort);
      resolve({ exitCode, output: Buffer.concat(chunks).toString('utf8') + extra, timedOut });
    };
    child.on('error', (err) => done(null, `\n[the shell could not start: ${err.message}]`));
    child.on('close', (code) => done(timedOut ? null : code));
  });
}

/**
 * A shell tool for a coding agent (see the module comment). Register it as any tool:
 * `tools: [shellTool({ cwd: '/work/repo' })]`.
 */
export function shellTool(options: ShellToolOptions): ToolDefinition<typeof args> {
  const timeoutMs = options.timeoutMs ?? 120_000;
  const max = options.maxOutputChars ?? 20_000;
  const fp = options.fingerprint === undefined ? gitWorkspace : options.fingerprint;
  const shell = options.shell ?? 'bash';
  return defineTool({
    name: options.name ?? 'shell',
    description:
      'Runs one shell command in the repository and answers its exit code and output (stdout and stderr). ' +
      'A non-zero exit code is an answer, not an error.',
    schema: args,
    effect: 'read',
    usesWorldTransaction: false,
    execute: async ({ command }, ctx) => {
      const before = fp ? await take(fp, options.cwd) : null;
      const r = await runCommand(command, {
        cwd: options.cwd,
        timeoutMs,
        shell,
        signal: ctx.signal,
        heartbeat: ctx.heartbeat,
      });
      const text = r.timedOut
        ? `${r.output}\n[timed out after ${timeoutMs} ms: the command was killed]`
        : r.output;
      const data: ShellOutput = {
        exitCode: r.exitCode,
        ...bound(text, max),
        ...(r.timedOut ? { timedOut: true as const } : {}),
      };
      if (before === null) return { data };
      const after = await take(fp!, options.cwd);
      return { data, workspace: workspaceReport(before, after) };
    },
  });
}
