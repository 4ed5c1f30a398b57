/**
 * `agentctl spend status|raise` (client/commands/spend.ts) and `start --tenant`, in process
 * against a real SQLite ledger: a signed raise by an operator whose role allows the cap is in
 * force; an unsigned one, or one above the role's ceiling, is stored but not in force (exit 3);
 * bad input is exit 2 naming the flag or the variable.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../../client/agentctl';
import { buildRunInput } from '../../client/commands/start';
import { CliError } from '../../client/format';
import { generateOperatorKey } from '../../operators/sign';

async function ctl(args: string[], env: NodeJS.ProcessEnv) {
  let out = '';
  let err = '';
  const code = await main(args, { env, io: { out: (t) => (out += t), err: (t) => (err += t) } });
  return { code, out, err };
}

describe('agentctl spend', () => {
  const dir = mkdtempSync(join(tmpdir(), 'alg-spend-cli-'));
  const alice = generateOperatorKey('alice');
  const aliceKey = join(dir, 'alice.json');
  writeFileSync(aliceKey, JSON.stringify(alice.keyFile));
  const operatorsFile = join(dir, 'operators.json');
  writeFileSync(
    operatorsFile,
    JSON.stringify({
      operators: { alice: { publicKey: alice.publicKey, roles: ['finance'] } },
      roles: { finance: { raiseSpendUsd: 5 } },
    }),
  );
  const env: NodeJS.ProcessEnv = {
    LEDGER_URL: `sqlite:${join(dir, 'agent.db')}`,
    AGENT_SPEND_LIMITS: JSON.stringify({ acme: { maxUsd: 1, windowMs: 3_600_000 } }),
    AGENT_OPERATORS_FILE: operatorsFile,
    USER: 'tester',
  };

  it('status shows the configured cap; a signed raise within the role is in force', async () => {
    const st = await ctl(['spend', 'status', '--tenant', 'acme', '--json'], env);
    expect(st.code).toBe(0);
    expect(JSON.parse(st.out)).toMatchObject({
      tenant: 'acme',
      cap: { maxUsd: 1, source: 'config' },
      usedUsd: 0,
      availableUsd: 1,
    });

    const raised = await ctl(
      [
        'spend',
        'raise',
        '--tenant',
        'acme',
        '--max-usd',
        '3',
        '--reason',
        'quarter end',
        '--key',
        aliceKey,
        '--json',
      ],
      env,
    );
    expect(raised.code).toBe(0);
    expect(JSON.parse(raised.out)).toMatchObject({
      inForce: true,
      raise: { maxUsd: 3, windowMs: 3_600_000, actor: 'alice' },
    });
    const after = await ctl(['spend', 'status', '--tenant', 'acme'], env);
    expect(after.out).toMatch(/cap\s+\$3 per 3600000 ms \(raised: spr_/);
  });

  it('an unsigned raise, or one above the role ceiling, is stored but not in force (exit 3)', async () => {
    const unsigned = await ctl(
      ['spend', 'raise', '--tenant', 'acme', '--max-usd', '4', '--reason', 'x', '--actor', 'bob'],
      env,
    );
    expect(unsigned.code).toBe(3);
    expect(unsigned.err).toMatch(/do not trust this raise \(unsigned\)/);
    const tooHigh = await ctl(
      ['spend', 'raise', '--tenant', 'acme', '--max-usd', '9', '--reason', 'x', '--key', aliceKey],
      env,
    );
    expect(tooHigh.code).toBe(3);
    const st = JSON.parse((await ctl(['spend', 'status', '--tenant', 'acme', '--json'], env)).out);
    expect(st.cap).toMatchObject({ maxUsd: 3, source: 'raise' });
  });

  it('bad input is exit 2, naming the flag or the variable', async () => {
    const neg = await ctl(['spend', 'raise', '--tenant', 'acme', '--max-usd', '-1', '--reason', 'x'], env);
    expect(neg.code).toBe(2);
    expect(neg.err).toMatch(/--max-usd must be a number ≥ 0/);
    const badTenant = await ctl(['spend', 'status', '--tenant', 'no way!'], env);
    expect(badTenant.code).toBe(2);
    expect(badTenant.err).toMatch(/--tenant: tenant must be/);
    const badEnv = await ctl(['spend', 'status', '--tenant', 'acme'], {
      ...env,
      AGENT_SPEND_LIMITS: '{"acme": {"maxUsd": -5, "windowMs": 1}}',
    });
    expect(badEnv.code).toBe(2);
    expect(badEnv.err).toMatch(/AGENT_SPEND_LIMITS\.acme\.maxUsd: must be ≥ 0/);
  });

  it('start --tenant goes into the run input; a malformed tenant is refused naming the field', () => {
    expect(buildRunInput({ planner: 'openai', goal: 'g', tenant: 'acme', timeout: 300 })).toMatchObject({
      tenant: 'acme',
    });
    expect(() => buildRunInput({ planner: 'openai', goal: 'g', tenant: 'a b', timeout: 300 })).toThrow(
      CliError,
    );
    expect(() => buildRunInput({ planner: 'openai', goal: 'g', tenant: 'a b', timeout: 300 })).toThrow(
      /tenant: tenant must be/,
    );
  });
});
