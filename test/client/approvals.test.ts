/**
 * `agentctl approvals list|approve|deny`: the real CLI process against the shared dev server
 * and an in-process worker. The approval is bound to the call read from the run itself;
 * a denial keeps the run stopped (the call never ran); approve --resume runs it once.
 */
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { statusQuery } from '../../common/contracts';
import { alice, testOperators } from '../approvals/signing';
import { startHarness, type Harness } from '../helpers/run-harness';
import { live, waitFor } from '../helpers/run-inputs';
import { agentctl, cliEnv } from './cli-helpers';
import { runResult } from '../helpers/run-result';

describe('agentctl approvals against a real server', () => {
  let h: Harness;
  let env: Record<string, string>;
  beforeAll(async () => {
    h = await startHarness();
    env = cliEnv(h);
  });
  afterAll(async () => {
    await h?.close();
  });

  it('lists the waiting call, denies it (run stays stopped), then approve --resume runs it once', async () => {
    const transfer = { from: 'acc-9', to: 'acc-3', amountCents: 900, reference: 'cli-1' };
    const run = await h.start(
      live(
        [
          { tool: 'transfer_funds', args: transfer },
          { tool: 'complete_task', args: { summary: 'ok' } },
        ],
        {
          resumeWindowMs: 60_000,
        },
      ),
    );
    await waitFor(
      () => run.handle.query(statusQuery),
      (s) => s.waitingForResume,
    );

    const listed = await agentctl(['approvals', 'list', '--run', run.workflowId, '--json'], env);
    expect(listed.code).toBe(0);
    const { pending, approvals } = JSON.parse(listed.stdout) as {
      pending: { tool: string; fingerprint: string; stopRef: string; args: unknown }[];
      approvals: unknown[];
    };
    expect(pending).toEqual([
      expect.objectContaining({
        tool: 'transfer_funds',
        args: transfer,
        stopRef: expect.stringMatching(/^checkpoint-/),
      }),
    ]);
    expect(approvals).toEqual([]);

    const denied = await agentctl(
      ['approvals', 'deny', run.workflowId, '--actor', 'bob', '--reason', 'wrong account'],
      env,
    );
    expect(denied.stderr).toBe('');
    expect(denied.code).toBe(0);
    expect(denied.stdout).toContain('stays stopped');
    expect((await run.handle.query(statusQuery)).waitingForResume).toBe(true);
    expect(await h.counters(run.workflowId)).not.toHaveProperty('transfer_funds');

    const badTtl = await agentctl(
      ['approvals', 'approve', run.workflowId, '--reason', 'x', '--ttl', 'soon'],
      env,
    );
    expect(badTtl.code).toBe(2);
    expect(badTtl.stderr).toContain('--ttl');

    const approved = await agentctl(
      [
        'approvals',
        'approve',
        run.workflowId,
        '--actor',
        'alice',
        '--reason',
        'checked',
        '--ttl',
        '5m',
        '--resume',
        '--json',
      ],
      env,
    );
    expect(approved.stderr).toBe('');
    expect(approved.code).toBe(0);
    const out = JSON.parse(approved.stdout) as {
      approval: { fingerprint: string; approver: string };
      resume: { accepted: boolean };
    };
    expect(out.approval).toMatchObject({ fingerprint: pending[0]?.fingerprint, approver: 'alice' });
    expect(out.resume.accepted).toBe(true);
    expect((await runResult(run)).terminal_state).toBe('COMPLETED');
    expect((await h.counters(run.workflowId)).transfer_funds).toBe(1);

    // The run is closed: nothing to approve any more, and the stored rows show what happened.
    const late = await agentctl(['approvals', 'approve', run.workflowId, '--reason', 'again'], env);
    expect(late.code).toBe(3);
    const after = JSON.parse(
      (await agentctl(['approvals', 'list', '--run', run.workflowId, '--json'], env)).stdout,
    ) as {
      pending: unknown[];
      approvals: { state: string; approver: string }[];
    };
    expect(after.pending).toEqual([]);
    expect(after.approvals.map((a) => [a.state, a.approver]).sort()).toEqual([
      ['denied', 'bob'],
      ['used', 'alice'],
    ]);
  });
});

describe('agentctl approvals sign with --key on a worker with an operators file', () => {
  let h: Harness;
  let env: Record<string, string>;
  const keyFile = join(mkdtempSync(join(tmpdir(), 'alg-aprkey-')), 'alice.key.json');
  beforeAll(async () => {
    writeFileSync(keyFile, JSON.stringify(alice.keyFile), { mode: 0o600 });
    h = await startHarness({ operators: testOperators() });
    env = cliEnv(h);
  });
  afterAll(async () => {
    await h?.close();
  });

  it('an unsigned approval does not lift the stop (nothing runs); approve --key --resume runs the call once', async () => {
    const transfer = { from: 'acc-5', to: 'acc-6', amountCents: 700, reference: 'cli-signed' };
    const run = await h.start(
      live(
        [
          { tool: 'transfer_funds', args: transfer },
          { tool: 'complete_task', args: { summary: 'ok' } },
        ],
        { resumeWindowMs: 60_000 },
      ),
    );
    await waitFor(
      () => run.handle.query(statusQuery),
      (s) => s.waitingForResume,
    );
    const unsigned = await agentctl(
      ['approvals', 'approve', run.workflowId, '--actor', 'alice', '--reason', 'x'],
      env,
    );
    expect(unsigned.code).toBe(0);
    expect(unsigned.stdout).toContain('(unsigned)');
    // agentctl has no operators file (only the worker has): it says it did not verify it.
    expect(unsigned.stdout).toMatch(/verified\s+not here \(no AGENT_OPERATORS_FILE\)/);
    const resume = await agentctl(['resume', run.workflowId, '--key', keyFile], env);
    expect(resume.code).toBe(3);
    expect(resume.stderr).toMatch(/unverified.*unsigned approve refused/);
    expect(await h.counters(run.workflowId)).not.toHaveProperty('transfer_funds');

    const wrongActor = await agentctl(
      ['approvals', 'approve', run.workflowId, '--actor', 'bob', '--key', keyFile, '--reason', 'x'],
      env,
    );
    expect(wrongActor.code).toBe(2);
    expect(wrongActor.stderr).toContain('does not match');

    const approved = await agentctl(
      ['approvals', 'approve', run.workflowId, '--reason', 'checked', '--resume', '--json'],
      { ...env, AGENT_OPERATOR_KEY_FILE: keyFile },
    );
    expect(approved.stderr).toBe('');
    expect(approved.code).toBe(0);
    const out = JSON.parse(approved.stdout) as {
      approval: { approver: string; auth: { operator: string } | null };
      trusted: boolean | null;
      resume: { accepted: boolean };
    };
    expect(out.approval).toMatchObject({ approver: 'alice', auth: { operator: 'alice' } });
    // Trusted or not is the worker's to say here: `null`, never a `true` it cannot know.
    expect(out).toMatchObject({ trusted: null });
    expect(out.resume.accepted).toBe(true);
    expect((await runResult(run)).terminal_state).toBe('COMPLETED');
    expect((await h.counters(run.workflowId)).transfer_funds).toBe(1);
  });
});
