/**
 * agentctl signs operator requests (docs/spec.md §7.3): `operator keygen` makes a key whose
 * printed entry a worker trusts; on that worker an unsigned `resume` is refused (exit 3,
 * nothing runs) and the same resume signed with `--key` is accepted; `agentctl stop` (through
 * bin/agentctl.js) reports what the worker did: the unsigned stop REFUSED (exit 3, the run goes
 * on), the signed one ACCEPTED (the run stops operator_stop) — issue 31 item 2; and in --json a
 * refused stop is `stop_requested: false` (it said `true` for every stop before).
 */
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OperatorRegistry } from '../../operators/registry';
import { statusQuery } from '../../common/contracts';
import { live, search, waitFor } from '../helpers/run-inputs';
import { startHarness, type Harness } from '../helpers/run-harness';
import { uniqueId } from '../helpers/temporal-env';
import { agentctl, cliEnv, launcher } from './cli-helpers';
import { runResult } from '../helpers/run-result';

describe('agentctl signs resume and stop', () => {
  let h: Harness;
  let env: Record<string, string>;
  const dir = mkdtempSync(join(tmpdir(), 'alg-opcli-'));
  const keyFile = join(dir, 'alice.key.json');

  beforeAll(async () => {
    const base = {
      TEMPORAL_ADDRESS: process.env.TEMPORAL_TEST_ADDRESS as string,
      TEMPORAL_NAMESPACE: 'default',
    };
    const gen = await agentctl(['operator', 'keygen', '--id', 'alice', '--out', keyFile, '--json'], base);
    expect(gen.code).toBe(0);
    const { operators } = JSON.parse(gen.stdout) as {
      operators: Record<string, { publicKey: string; roles: string[] }>;
    };
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    expect(readFileSync(keyFile, 'utf8')).toContain('PRIVATE KEY');
    h = await startHarness({
      operators: OperatorRegistry.fromFile({
        operators,
        roles: { admin: { lift: ['*'], raise: { maxSteps: 100 }, stop: true } },
      }),
      // poll_job asks to be polled again after 2 s: a job run stays RUNNING long enough to stop it.
      pollAfterMs: 2000,
    });
    env = cliEnv(h);
  });
  afterAll(async () => {
    await h?.close();
  });

  it('refuses the unsigned resume and accepts the signed one', async () => {
    const id = uniqueId('opcli');
    const run = await h.start(
      live([search('a'), search('b'), search('c')], { resumeWindowMs: 60_000, guard: { maxSteps: 2 } }),
      id,
    );
    await waitFor(
      () => run.handle.query(statusQuery),
      (s) => s.phase === 'WAITING',
    );
    const unsigned = await agentctl(['resume', id, '--actor', 'alice', '--raise-steps', '5'], env);
    expect(unsigned.code).toBe(3);
    expect(unsigned.stderr).toMatch(/unsigned resume refused/);
    expect(await h.counters(id)).toEqual({ search: 2 });
    const wrongActor = await agentctl(
      ['resume', id, '--actor', 'bob', '--key', keyFile, '--raise-steps', '5'],
      env,
    );
    expect(wrongActor.code).toBe(2);
    // A note the model cannot be given is bad input: nothing is sent, the run still waits.
    const control = await agentctl(['resume', id, '--key', keyFile, '--note', 'a\u0007b'], env);
    expect(control.code).toBe(2);
    expect(control.stderr).toMatch(/--note: note has control characters/);
    const long = await agentctl(['resume', id, '--key', keyFile, '--note', 'x'.repeat(2001)], env);
    expect(long.code).toBe(2);
    expect(long.stderr).toMatch(/--note: note is longer than 2000 characters/);
    expect((await run.handle.query(statusQuery)).phase).toBe('WAITING');
    // The note is signed with the request: the worker verifies the signature over it.
    const signed = await agentctl(
      ['resume', id, '--key', keyFile, '--raise-steps', '5', '--note', 'two more searches', '--json'],
      env,
    );
    expect(signed.code).toBe(0);
    expect(JSON.parse(signed.stdout)).toMatchObject({ accepted: true });
    expect((await runResult(run)).executed).toBe(3);
    // A note for a run that is not stopped any more: refused, naming why.
    const closed = await agentctl(['resume', id, '--key', keyFile, '--note', 'late'], env);
    expect(closed.code).toBe(3);
    expect(closed.stderr).toMatch(/run is closed \(FAILED\)/);
  });

  it("agentctl stop reports the worker's answer: unsigned REFUSED (the run goes on), signed ACCEPTED", async () => {
    const id = uniqueId('opcli-stop');
    const jobId = `job-${id}`;
    const run = await h.start(
      live(
        [
          { tool: 'start_job', args: { name: jobId, pollsNeeded: 12 } },
          ...Array.from({ length: 12 }, () => ({ tool: 'poll_job', args: { jobId } })),
          { tool: 'complete_task', args: { summary: 'done' } },
        ],
        { resumeWindowMs: 60_000 },
      ),
      id,
    );
    await waitFor(
      () => run.handle.query(statusQuery),
      (s) => s.phase === 'RUNNING' && s.executed >= 1,
    );
    const unsigned = await launcher(['stop', id, '--actor', 'alice', '--reason', 'halt'], env);
    expect(unsigned.stdout).toMatch(/stop\s+REFUSED/);
    expect(unsigned.stderr).toMatch(/stop refused: not authorised/);
    expect(unsigned.code).toBe(3);
    const after = await run.handle.query(statusQuery);
    expect([after.phase, after.guardReason]).toEqual(['RUNNING', null]);
    const signed = await launcher(['stop', id, '--key', keyFile, '--reason', 'halt', '--json'], env);
    expect(signed.stderr).toBe('');
    expect(signed.code).toBe(0);
    expect(JSON.parse(signed.stdout)).toMatchObject({
      outcome: 'accepted',
      accepted: true,
      stop_requested: true,
      actor: 'alice',
    });
    const stopped = await waitFor(
      () => run.handle.query(statusQuery),
      (s) => s.phase === 'WAITING',
    );
    expect(stopped.guardReason).toBe('operator_stop');
    expect((await h.counters(id)).poll_job ?? 0).toBeLessThan(12);
    await run.handle.terminate('test done');
  }, 90_000);

  it('agentctl stop --json: a refused stop is not `stop_requested` (it was `true` before issue 31)', async () => {
    const id = uniqueId('opcli-stopjson');
    const jobId = `job-${id}`;
    const run = await h.start(
      live(
        [
          { tool: 'start_job', args: { name: jobId, pollsNeeded: 12 } },
          ...Array.from({ length: 12 }, () => ({ tool: 'poll_job', args: { jobId } })),
          { tool: 'complete_task', args: { summary: 'done' } },
        ],
        { resumeWindowMs: 60_000 },
      ),
      id,
    );
    await waitFor(
      () => run.handle.query(statusQuery),
      (s) => s.phase === 'RUNNING' && s.executed >= 1,
    );
    const refused = await launcher(['stop', id, '--actor', 'alice', '--reason', 'halt', '--json'], env);
    expect(refused.stderr).toMatch(/stop refused: not authorised/);
    expect(refused.code).toBe(3);
    expect(JSON.parse(refused.stdout)).toMatchObject({
      outcome: 'refused',
      accepted: false,
      stop_requested: false,
    });
    await run.handle.terminate('test done');
  }, 60_000);
});
