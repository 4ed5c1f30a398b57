/**
 * The coding agent's shell tool (tools/shell.ts) on a real git work tree: a non-zero exit is a
 * result, an edit that prints nothing reports a changed workspace, the same append reports a
 * growing one, a fingerprint that throws is reported as `{error}`, and a command that never
 * returns is killed at the tool's timeout and answered.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ToolContext } from '../../index';
import { shellTool, toResult } from '../../worker/api';

const ctx: ToolContext = {
  runId: 'r',
  operationKey: null,
  heartbeat: () => {},
  signal: new AbortController().signal,
  tx: {} as ToolContext['tx'],
};

function repo(): string {
  const dir = mkdtempSync(join(tmpdir(), 'shell-tool-'));
  const git = (...a: string[]) => execFileSync('git', ['-C', dir, ...a], { stdio: 'ignore' });
  git('init', '-q');
  writeFileSync(join(dir, 'a.py'), 'x = 1\n');
  git('add', '.');
  git('-c', 'user.email=t@t', '-c', 'user.name=t', 'commit', '-qm', 'base');
  return dir;
}

describe('shellTool', () => {
  let dir: string;
  beforeEach(() => {
    dir = repo();
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('a non-zero exit is a SUCCESS the model reads, and a read reports no change', async () => {
    const t = shellTool({ cwd: dir });
    const r = toResult(await t.execute({ command: 'echo oops >&2; exit 3' }, ctx));
    expect(r).toMatchObject({ kind: 'SUCCESS', data: { exitCode: 3, output: 'oops\n' } });
    const ws = (r as { workspace?: { before: string; after: string } }).workspace!;
    expect(ws.before).toBe(ws.after);
  });

  it('an edit that prints nothing reports a change; the same append again reports a larger workspace', async () => {
    const t = shellTool({ cwd: dir });
    const edit = await t.execute({ command: "sed -i 's/1/2/' a.py" }, ctx);
    expect(edit).toMatchObject({ data: { exitCode: 0, output: '' } });
    const e = (edit as { workspace: { before: string; after: string; size: number } }).workspace;
    expect(e.before).not.toBe(e.after);
    const append = { command: "cat >> a.py <<'EOF'\ndef f():\n    return 1\nEOF" };
    const one = (await t.execute(append, ctx)) as {
      workspace: { before: string; after: string; size: number };
    };
    const two = (await t.execute(append, ctx)) as {
      workspace: { before: string; after: string; size: number };
    };
    expect(two.workspace.before).toBe(one.workspace.after);
    expect(two.workspace.size).toBeGreaterThan(one.workspace.size);
    expect(readFileSync(join(dir, 'a.py'), 'utf8').match(/def f/g)).toHaveLength(2);
  });

  it('a fingerprint that throws is reported as {error} (the guard stops workspace_unknown)', async () => {
    const t = shellTool({
      cwd: dir,
      fingerprint: () => {
        throw new Error('disk gone');
      },
    });
    const r = await t.execute({ command: 'true' }, ctx);
    expect(r).toMatchObject({ data: { exitCode: 0 }, workspace: { error: 'before the command: disk gone' } });
    // Outside a git work tree the default fingerprint throws too.
    const plain = mkdtempSync(join(tmpdir(), 'not-git-'));
    try {
      const r2 = await shellTool({ cwd: plain }).execute({ command: 'true' }, ctx);
      expect((r2 as { workspace: { error: string } }).workspace.error).toMatch(/before the command/);
    } finally {
      rmSync(plain, { recursive: true, force: true });
    }
  });

  it('a command that never returns is killed at the timeout and answered, with its process group', async () => {
    const t = shellTool({ cwd: dir, timeoutMs: 300 });
    const started = Date.now();
    const r = await t.execute({ command: 'sleep 30 & sleep 30; echo never' }, ctx);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(r).toMatchObject({ data: { exitCode: null, timedOut: true } });
    expect((r as { data: { output: string } }).data.output).toMatch(/timed out after 300 ms/);
  });
});
