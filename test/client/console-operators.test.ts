/**
 * `agentctl console` with a worker that trusts only signed operators (alice may approve and
 * lift, bob may lift and stop; neither may raise): the stop pre-check, an untrusted approval,
 * a raise beyond the role, a signed stop of a running run; the bind refusal without TLS and
 * HTTPS off loopback; `agentctl console` as a process.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getApprovalAudit, getPendingApproval, resumeAgentRun } from '../../client/api';
import { CliError, Exit } from '../../client/format';
import type { ConsoleOperator } from '../../client/console/actions';
import type { Inbox } from '../../client/console/inbox';
import { isLoopback, startConsoleServer } from '../../client/console/server';
import { checkpointQuery, statusQuery, traceQuery, WORKFLOW_TYPE } from '../../common/contracts';
import { OperatorRegistry } from '../../operators/registry';
import { makeCerts } from '../../scripts/make-certs';
import { generateOperatorKey } from '../../operators/sign';
import { alice, bob, testOperators } from '../approvals/signing';

/** Not an operator of the worker (the held-out attack's view-only carol). */
const carol = generateOperatorKey('carol');
import { startHarness, type Harness } from '../helpers/run-harness';
import { live, search, waitFor } from '../helpers/run-inputs';
import { agentctl, ROOT } from './cli-helpers';
import { runResult } from '../helpers/run-result';

const transferRun = (reference: string) =>
  live(
    [
      { tool: 'transfer_funds', args: { from: 'acc-1', to: 'acc-2', amountCents: 700, reference } },
      { tool: 'complete_task', args: { summary: 'ok' } },
    ],
    { resumeWindowMs: 120_000 },
  );

describe('agentctl console: operators and binding', () => {
  let h: Harness;
  beforeAll(async () => {
    // poll_job asks to be polled again after 2 s: a job run stays RUNNING long enough to stop it.
    h = await startHarness({ operators: testOperators(), pollAfterMs: 2000 });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('refuses a stop the signing operator may not make, with the workers own words (403), before sending it', async () => {
    // alice may approve but not stop (test/approvals/signing.ts).
    const server = await startConsoleServer({
      client: h.env.client,
      operator: { key: alice.keyFile, actor: 'alice', operators: testOperators(), env: {} },
      linkOf: (id) => id,
      port: 0,
    });
    try {
      const r = await fetch(`${server.base}/api/stop`, {
        method: 'POST',
        headers: { authorization: `Bearer ${server.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ runId: 'any-run', reason: 'halt' }),
      });
      expect(r.status).toBe(403);
      expect(((await r.json()) as { message: string }).message).toBe(
        'refused: operator alice may not stop runs',
      );
    } finally {
      await server.close();
    }
  });

  it('with the operators file, an approval the workers would not trust is stored audited refused, 403, and not resumed', async () => {
    const run = await h.start(transferRun('console-untrusted'));
    await waitFor(
      () => run.handle.query(statusQuery),
      (st) => st.waitingForResume,
    );
    const pending = await getPendingApproval(h.env.client, run.workflowId);
    const server = await startConsoleServer({
      client: h.env.client,
      operator: { key: bob.keyFile, actor: 'bob', operators: testOperators(), env: { LEDGER_URL: h.dbUrl } },
      linkOf: (id) => id,
      port: 0,
    });
    try {
      const r = await fetch(`${server.base}/api/approve`, {
        method: 'POST',
        headers: { authorization: `Bearer ${server.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          runId: run.workflowId,
          stopRef: pending.stopRef,
          fingerprint: pending.fingerprint,
          argsDigest: pending.argsDigest,
          reason: 'fine by me',
          ttl: '5m',
        }),
      });
      expect(r.status).toBe(403);
      expect(((await r.json()) as { message: string }).message).toMatch(
        /^refused: the workers will not use this approval .*may not approve or deny calls/,
      );
      // The client API signs only as the key's operator, as agentctl does.
      await expect(
        resumeAgentRun(h.env.client, run.workflowId, { actor: 'bob', key: alice.keyFile }),
      ).rejects.toMatchObject({ exitCode: Exit.USAGE, message: expect.stringContaining('"alice"') });
      const audit = await getApprovalAudit({ ledgerUrl: h.dbUrl, env: {}, runId: run.workflowId });
      expect(audit.map((e) => [e.action, e.actor])).toContainEqual(['refused', 'bob']);
      expect(audit.map((e) => e.action)).not.toContain('approved');
      // No resume was sent: the run still waits at the same stop, nothing ran.
      const status = await run.handle.query(statusQuery);
      expect(status.waitingForResume).toBe(true);
      expect(await h.counters(run.workflowId)).not.toHaveProperty('transfer_funds');
    } finally {
      await server.close();
      await run.handle.terminate('test done');
    }
  });

  it('a raise beyond the operator role is refused by the worker, and the page gets its words', async () => {
    const run = await h.start(
      live(
        [
          search('console role 1'),
          search('console role 2'),
          { tool: 'complete_task', args: { summary: 'x' } },
        ],
        {
          guard: { maxSteps: 1 },
          resumeWindowMs: 60_000,
        },
      ),
    );
    const stopped = await waitFor(
      () => run.handle.query(checkpointQuery),
      (cp) => cp.stop !== null,
    );
    // alice may lift any stop but raise no budget (test/approvals/signing.ts).
    const server = await startConsoleServer({
      client: h.env.client,
      operator: { key: alice.keyFile, actor: 'alice', operators: testOperators(), env: {} },
      linkOf: (id) => id,
      port: 0,
    });
    try {
      const r = await fetch(`${server.base}/api/resume`, {
        method: 'POST',
        headers: { authorization: `Bearer ${server.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          runId: run.workflowId,
          stopRef: stopped.stop?.report.last_safe_checkpoint,
          reason: 'five more',
          raise: { maxSteps: 5 },
        }),
      });
      expect(r.status).toBe(409);
      expect(((await r.json()) as { message: string }).message).toMatch(
        /^resume refused: .*operator alice may not raise maxSteps/,
      );
      expect((await run.handle.query(statusQuery)).guardReason).toBe('step_budget');
      expect((await h.counters(run.workflowId)).search).toBe(1);
    } finally {
      await server.close();
      await run.handle.terminate('test done');
    }
  });

  it('lists a running run and stops it with the signed stop of an operator who may (bob)', async () => {
    const jobId = `console-job-${Date.now()}`;
    const run = await h.start(
      live(
        [
          { tool: 'start_job', args: { name: jobId, pollsNeeded: 20 } },
          ...Array.from({ length: 20 }, () => ({ tool: 'poll_job', args: { jobId } })),
          { tool: 'complete_task', args: { summary: 'done' } },
        ],
        { resumeWindowMs: 60_000 },
      ),
    );
    const server = await startConsoleServer({
      client: h.env.client,
      operator: { key: bob.keyFile, actor: 'bob', operators: testOperators(), env: {} },
      linkOf: (id) => id,
      port: 0,
    });
    try {
      const inbox = async () =>
        (await (
          await fetch(`${server.base}/api/inbox`, { headers: { authorization: `Bearer ${server.token}` } })
        ).json()) as Inbox;
      await waitFor(inbox, (i) => i.running.some((r) => r.runId === run.workflowId));
      const r = await fetch(`${server.base}/api/stop`, {
        method: 'POST',
        headers: { authorization: `Bearer ${server.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ runId: run.workflowId, reason: 'job takes too long' }),
      });
      expect(r.status).toBe(200);
      expect(await r.json()).toMatchObject({
        ok: true,
        outcome: 'accepted',
        message: 'stop by bob accepted by the worker: the run stops before its next tool call',
      });
      const stopped = await waitFor(
        () => run.handle.query(statusQuery),
        (st) => st.waitingForResume,
      );
      expect(stopped.guardReason).toBe('operator_stop');
      const listed = await waitFor(inbox, (i) => i.waiting.some((w) => w.runId === run.workflowId));
      expect(listed.waiting.find((w) => w.runId === run.workflowId)).toMatchObject({
        reason: 'operator_stop',
        needsApproval: false,
        raise: null,
      });
      expect(listed.running.some((x) => x.runId === run.workflowId)).toBe(false);
    } finally {
      await server.close();
      await run.handle.terminate('test done');
    }
  }, 60_000);

  it('a console without the operators file: a stop the worker refuses is reported refused (409), and the run goes on', async () => {
    // Issue 31 item 2: the console does not know the workers' operators (no AGENT_OPERATORS_FILE,
    // the default), so it cannot pre-check; carol is not an operator of the worker.
    const jobId = `console-carol-${Date.now()}`;
    const run = await h.start(
      live(
        [
          { tool: 'start_job', args: { name: jobId, pollsNeeded: 8 } },
          ...Array.from({ length: 8 }, () => ({ tool: 'poll_job', args: { jobId } })),
          { tool: 'complete_task', args: { summary: 'done' } },
        ],
        { resumeWindowMs: 60_000 },
      ),
    );
    const server = await startConsoleServer({
      client: h.env.client,
      operator: { key: carol.keyFile, actor: 'carol', operators: OperatorRegistry.open(), env: {} },
      linkOf: (id) => id,
      port: 0,
    });
    try {
      await waitFor(
        () => run.handle.query(statusQuery),
        (st) => st.phase === 'RUNNING' && st.executed >= 1,
      );
      const r = await fetch(`${server.base}/api/stop`, {
        method: 'POST',
        headers: { authorization: `Bearer ${server.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ runId: run.workflowId, reason: 'halt it' }),
      });
      const body = (await r.json()) as { ok: boolean; outcome: string; message: string };
      expect(r.status).toBe(409);
      expect(body).toMatchObject({ ok: false, outcome: 'refused' });
      expect(body.message).toMatch(/^refused: not authorised: .*carol/);
      // Not stopped: the run goes on to its end, every poll ran.
      const result = await runResult(run);
      expect(result.terminal_state).toBe('COMPLETED');
      expect((await h.counters(run.workflowId)).poll_job).toBeGreaterThanOrEqual(8);
      const trace = (await run.handle.query(traceQuery, { offset: 0, limit: 1000 })).records;
      expect(trace.filter((t) => t.decision === 'stop_refused')).toHaveLength(1);
      expect(trace.some((t) => t.decision === 'stop')).toBe(false);
    } finally {
      await server.close();
    }
  }, 60_000);

  it('a stop no worker confirms is reported unconfirmed (504), never as done', async () => {
    // A run on a task queue no worker polls: its first workflow task never runs.
    const workflowId = `console-nobody-${Date.now()}`;
    const handle = await h.env.client.workflow.start(WORKFLOW_TYPE, {
      taskQueue: `nobody-${workflowId}`,
      workflowId,
      args: [transferRun('nobody')],
    });
    const server = await startConsoleServer({
      client: h.env.client,
      operator: { key: bob.keyFile, actor: 'bob', operators: OperatorRegistry.open(), env: {} },
      linkOf: (id) => id,
      port: 0,
      confirmMs: 2000,
    });
    try {
      const started = Date.now();
      const r = await fetch(`${server.base}/api/stop`, {
        method: 'POST',
        headers: { authorization: `Bearer ${server.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ runId: workflowId, reason: 'halt' }),
      });
      const body = (await r.json()) as { ok: boolean; outcome: string; message: string };
      expect(r.status).toBe(504);
      expect(body).toMatchObject({ ok: false, outcome: 'unconfirmed' });
      expect(body.message).toMatch(/^stop unconfirmed: no worker answered within 2 s/);
      expect(Date.now() - started).toBeLessThan(15_000);
    } finally {
      await server.close();
      await handle.terminate('test done');
    }
  }, 60_000);

  it('refuses to bind off loopback without TLS; serves HTTPS there with a certificate', async () => {
    expect(['127.0.0.1', '127.0.0.2', 'localhost', '::1', '[::1]'].every(isLoopback)).toBe(true);
    expect(['0.0.0.0', '10.0.0.1', '::', 'example.com'].some(isLoopback)).toBe(false);
    const op: ConsoleOperator = { key: null, actor: 'carol', operators: OperatorRegistry.open(), env: {} };
    const refused = await startConsoleServer({
      client: h.env.client,
      operator: op,
      linkOf: (id) => id,
      host: '0.0.0.0',
      port: 0,
    }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(CliError);
    expect((refused as CliError).exitCode).toBe(Exit.USAGE);
    expect((refused as CliError).message).toContain('refusing to serve on 0.0.0.0 without TLS');

    const certs = makeCerts({ out: mkdtempSync(join(tmpdir(), 'alg-console-certs-')) });
    const server = await startConsoleServer({
      client: h.env.client,
      operator: op,
      linkOf: (id) => id,
      host: '0.0.0.0',
      port: 0,
      tls: { certFile: certs.serverCert, keyFile: certs.serverKey },
    });
    try {
      expect(server.base.startsWith('https://')).toBe(true);
      const cookies: string[] = [];
      const get = (path: string) =>
        new Promise<number>((resolve, reject) => {
          const req = httpsRequest(
            {
              host: '127.0.0.1',
              servername: 'localhost',
              port: server.port,
              path,
              ca: readFileSync(certs.caCert),
            },
            (res) => {
              res.resume();
              if (res.statusCode === 303) cookies.push(String(res.headers['set-cookie'] ?? ''));
              resolve(res.statusCode ?? 0);
            },
          );
          req.once('error', reject);
          req.end();
        });
      // The token is traded for a cookie that is Secure over HTTPS.
      expect(await get(`/?token=${server.token}`)).toBe(303);
      expect(cookies[0]).toMatch(/; HttpOnly; SameSite=Strict; Secure$/);
      expect(await get('/?token=forged')).toBe(403);
    } finally {
      await server.close();
    }
  });

  it('agentctl console as a process: prints the URL with its token, serves the inbox, stops on SIGTERM', async () => {
    const child = spawn(
      join(ROOT, 'node_modules/.bin/tsx'),
      ['bin/agentctl.ts', 'console', '--port', '0', '--quiet'],
      {
        cwd: ROOT,
        env: {
          ...process.env,
          TEMPORAL_ADDRESS: process.env.TEMPORAL_TEST_ADDRESS as string,
          TEMPORAL_NAMESPACE: 'default',
          LEDGER_URL: h.dbUrl,
          AGENT_OPERATOR_KEY_FILE: '',
          AGENTCTL_ACTOR: 'dana',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    try {
      const url = await new Promise<string>((resolve, reject) => {
        child.stdout.on('data', (b: Buffer) => {
          out += b.toString();
          const m = /open: (http:\/\/127\.0\.0\.1:\d+\/\?token=\S+)/.exec(out);
          if (m) resolve(m[1]!);
        });
        child.once('exit', (code) => reject(new Error(`exited ${code}: ${out}`)));
      });
      expect(out).toContain('acting as dana (unsigned');
      const token = new URL(url).searchParams.get('token') as string;
      expect(token.length).toBeGreaterThanOrEqual(40);
      // A page takes the URL's token (303 + cookie): it is spent, and the console prints a new URL.
      expect((await fetch(url, { redirect: 'manual' })).status).toBe(303);
      const next = await waitFor(
        async () => /a new token \(a page took the last one, or it was rotated\): (\S+)/.exec(out)?.[1] ?? '',
        (u) => u !== '',
        10_000,
      );
      const fresh = new URL(next).searchParams.get('token') as string;
      expect(fresh).not.toBe(token);
      expect(
        (await fetch(new URL('/api/inbox', url), { headers: { authorization: `Bearer ${token}` } })).status,
      ).toBe(403);
      const inbox = await fetch(new URL('/api/inbox', url), {
        headers: { authorization: `Bearer ${fresh}` },
      });
      expect(inbox.status).toBe(200);
      expect(await inbox.json()).toMatchObject({ waiting: expect.any(Array), running: expect.any(Array) });
    } finally {
      const exited = new Promise<number | null>((r) => child.once('exit', r));
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    }
  }, 60_000);

  it('agentctl console --host 0.0.0.0 without TLS exits 2 at start; half a TLS pair and a bad key file too', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'alg-console-cli-'));
    const badKey = join(dir, 'bad.key.json');
    writeFileSync(badKey, '{"operator": 1}');
    const env = { TEMPORAL_ADDRESS: '127.0.0.1:1', AGENT_OPERATOR_KEY_FILE: '' };
    const bind = await agentctl(['console', '--host', '0.0.0.0', '--port', '0'], env);
    expect(bind.code).toBe(2);
    expect(bind.stderr).toContain('refusing to serve on 0.0.0.0 without TLS');
    const half = await agentctl(['console', '--tls-cert', join(dir, 'c.pem')], env);
    expect(half.code).toBe(2);
    expect(half.stderr).toContain('--tls-cert and --tls-key go together');
    const key = await agentctl(['console', '--key', badKey], env);
    expect(key.code).toBe(2);
    expect(key.stderr).toContain(`operator key file ${badKey}`);
  }, 60_000);
});
