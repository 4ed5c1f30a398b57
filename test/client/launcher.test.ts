/**
 * `bin/agentctl.js`, the launcher a user runs (`npx agentctl` in a checkout, the package's
 * `bin`), not tsx's CLI (issue 31 item 8): with tsx's CommonJS hook alone, every command that
 * reaches the approval store through the client API's lazy `await import(…)` failed with
 * `Cannot find module '…/storage/approvals/approval-store'` — `approvals list|approve|deny` and
 * the console's approve/deny — while the tests, run through `tsx bin/agentctl.ts`, passed.
 *
 *  - every command group the launcher lists, and every subcommand of a group, answers --help;
 *  - against the shared dev server and a SQLite ledger: `approvals list`, `approvals deny`,
 *    `approvals approve --resume` (the call runs once: the tool's counter), and `agentctl
 *    console` started through the launcher approving over real HTTP (the call runs once).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { statusQuery } from '../../common/contracts';
import { startHarness, type Harness } from '../helpers/run-harness';
import { live, waitFor } from '../helpers/run-inputs';
import { cliEnv, launcher, ROOT } from './cli-helpers';
import { runResult } from '../helpers/run-result';

/** The command names under `Commands:` of a --help text (without `help`). */
function commandsOf(help: string): string[] {
  const block = help.split(/^Commands:\s*$/m)[1]?.split(/^\S/m)[0] ?? '';
  return [...block.matchAll(/^ {2}([a-z][a-z-]*)\b/gm)].map((m) => m[1]!).filter((c) => c !== 'help');
}

const transferRun = (reference: string) =>
  live(
    [
      { tool: 'transfer_funds', args: { from: 'acc-1', to: 'acc-2', amountCents: 300, reference } },
      { tool: 'complete_task', args: { summary: 'ok' } },
    ],
    { resumeWindowMs: 120_000 },
  );

describe('bin/agentctl.js, as a user runs it', () => {
  it('answers --help for every command group and every subcommand', async () => {
    const top = await launcher(['--help'], {});
    expect(top.code).toBe(0);
    const groups = commandsOf(top.stdout);
    // The product's groups, plus the demo's `world`: a group dropped from the list fails here.
    expect(groups).toEqual(
      expect.arrayContaining([
        'start',
        'status',
        'approvals',
        'ledger',
        'spend',
        'console',
        'operator',
        'world',
      ]),
    );
    expect(groups.length).toBeGreaterThanOrEqual(17);
    const failures: string[] = [];
    const check = async (path: string[]): Promise<string> => {
      const r = await launcher([...path, '--help'], {});
      if (r.code !== 0 || !r.stdout.startsWith(`Usage: agentctl ${path.join(' ')}`))
        failures.push(`${path.join(' ')}: exit ${r.code}\n${r.stdout}${r.stderr}`);
      return r.stdout;
    };
    const subs: string[][] = [];
    for (let i = 0; i < groups.length; i += 2)
      await Promise.all(
        groups.slice(i, i + 2).map(async (g) => {
          for (const sub of commandsOf(await check([g]))) subs.push([g, sub]);
        }),
      );
    expect(subs.map((s) => s.join(' '))).toEqual(
      expect.arrayContaining(['approvals list', 'approvals approve', 'approvals deny', 'ledger list']),
    );
    for (let i = 0; i < subs.length; i += 2) await Promise.all(subs.slice(i, i + 2).map(check));
    expect(failures).toEqual([]);
  }, 240_000);

  describe('against a real server and a SQLite ledger', () => {
    let h: Harness;
    let env: Record<string, string>;
    let consoleProc: ChildProcess | undefined;
    beforeAll(async () => {
      h = await startHarness();
      env = cliEnv(h);
      expect(h.dbUrl).toMatch(/^sqlite:/);
    });
    afterAll(async () => {
      consoleProc?.kill('SIGTERM');
      await h?.close();
    });

    it('approvals list, deny and approve --resume run through the launcher (the call runs once)', async () => {
      const run = await h.start(transferRun('launcher-1'));
      await waitFor(
        () => run.handle.query(statusQuery),
        (s) => s.waitingForResume,
      );
      const listed = await launcher(['approvals', 'list', '--run', run.workflowId, '--json'], env);
      expect(listed.stderr).not.toContain('Cannot find module');
      expect(listed.code).toBe(0);
      const { pending, approvals } = JSON.parse(listed.stdout) as {
        pending: unknown[];
        approvals: unknown[];
      };
      expect(pending).toEqual([expect.objectContaining({ tool: 'transfer_funds' })]);
      expect(approvals).toEqual([]);

      const denied = await launcher(['approvals', 'deny', run.workflowId, '--reason', 'not yet'], env);
      expect(denied.stderr).toBe('');
      expect(denied.code).toBe(0);
      expect(await h.counters(run.workflowId)).not.toHaveProperty('transfer_funds');

      const approved = await launcher(
        ['approvals', 'approve', run.workflowId, '--reason', 'checked', '--resume', '--json'],
        env,
      );
      expect(approved.stderr).toBe('');
      expect(approved.code).toBe(0);
      expect((JSON.parse(approved.stdout) as { resume: { accepted: boolean } }).resume.accepted).toBe(true);
      expect((await runResult(run)).terminal_state).toBe('COMPLETED');
      expect((await h.counters(run.workflowId)).transfer_funds).toBe(1);
    });

    it('the console started through the launcher approves over HTTP (the call runs once)', async () => {
      const run = await h.start(transferRun('launcher-console'));
      await waitFor(
        () => run.handle.query(statusQuery),
        (s) => s.waitingForResume,
      );
      const child = spawn(
        process.execPath,
        ['bin/agentctl.js', 'console', '--port', '0', '--task-queue', h.taskQueue],
        { cwd: ROOT, env: { ...process.env, ...env, FORCE_COLOR: '0' }, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      consoleProc = child;
      let out = '';
      let err = '';
      child.stderr!.on('data', (c: Buffer) => (err += c.toString('utf8')));
      const url = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`console did not start:\n${out}\n${err}`)), 60_000);
        child.stdout!.on('data', (c: Buffer) => {
          out += c.toString('utf8');
          const m = /open: (\S+)/.exec(out);
          if (m) {
            clearTimeout(timer);
            resolve(m[1]!);
          }
        });
        child.once('exit', (code) => reject(new Error(`console exited ${code}:\n${out}\n${err}`)));
      });
      const { origin, searchParams } = new URL(url);
      const headers = {
        authorization: `Bearer ${searchParams.get('token')}`,
        'content-type': 'application/json',
      };
      const inbox = (await (await fetch(`${origin}/api/inbox`, { headers })).json()) as {
        waiting: {
          runId: string;
          stopRef: string;
          blockedCall: { fingerprint: string; argsDigest: string };
        }[];
      };
      const card = inbox.waiting.find((w) => w.runId === run.workflowId);
      expect(card).toBeDefined();
      const res = await fetch(`${origin}/api/approve`, {
        method: 'POST',
        headers,
        body: JSON.stringify({
          runId: run.workflowId,
          stopRef: card!.stopRef,
          fingerprint: card!.blockedCall.fingerprint,
          argsDigest: card!.blockedCall.argsDigest,
          reason: 'checked in the console',
          ttl: '5m',
        }),
      });
      const body = (await res.json()) as { message: string };
      expect(body.message).not.toContain('Cannot find module');
      expect(res.status).toBe(200);
      expect((await runResult(run)).terminal_state).toBe('COMPLETED');
      expect((await h.counters(run.workflowId)).transfer_funds).toBe(1);
    });
  });
});
