/**
 * agentctl signs operator requests (docs/spec.md §7.3): `operator keygen` makes a key whose
 * printed entry a worker trusts; on that worker an unsigned `resume` is refused (exit 3,
 * nothing runs) and the same resume signed with `--key` is accepted.
 */
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OperatorRegistry } from '../../operators/registry';
import { statusQuery } from '../../common/contracts';
import { live, search, waitFor } from '../helpers/run-inputs';
import { startHarness, type Harness } from '../helpers/run-harness';
import { uniqueId } from '../helpers/temporal-env';
import { agentctl, cliEnv } from './cli-helpers';

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
    const signed = await agentctl(['resume', id, '--key', keyFile, '--raise-steps', '5', '--json'], env);
    expect(signed.code).toBe(0);
    expect(JSON.parse(signed.stdout)).toMatchObject({ accepted: true });
    expect((await run.result()).executed).toBe(3);
  });
});
