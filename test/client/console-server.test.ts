/**
 * `agentctl console` over real HTTP (client/console/server.ts) against the shared dev server
 * and an in-process worker in open mode: the token on every request (missing, forged, stale:
 * 403), the origin rules, malformed action bodies (400 naming the field, nothing stored,
 * nothing run), an approval for a run that has moved on (409 saying where it is now), the
 * inbox's data (redacted args, a run whose worker is gone), a budget raise.
 * test/client/console-operators.test.ts: signed operators, binding, the process.
 */
import { listApprovals } from '../../client/api';
import type { ConsoleOperator } from '../../client/console/actions';
import { readInbox, type Inbox, type WaitingRun } from '../../client/console/inbox';
import { startConsoleServer, type ConsoleServerHandle } from '../../client/console/server';
import { statusQuery } from '../../common/contracts';
import { OperatorRegistry } from '../../operators/registry';
import { startHarness, type Harness } from '../helpers/run-harness';
import { live, search, waitFor } from '../helpers/run-inputs';
import { runResult } from '../helpers/run-result';

const transferRun = (reference: string) =>
  live(
    [
      { tool: 'transfer_funds', args: { from: 'acc-1', to: 'acc-2', amountCents: 700, reference } },
      { tool: 'complete_task', args: { summary: 'ok' } },
    ],
    { resumeWindowMs: 120_000 },
  );

describe('agentctl console over HTTP (open worker)', () => {
  let h: Harness;
  let server: ConsoleServerHandle;
  let op: ConsoleOperator;
  beforeAll(async () => {
    h = await startHarness();
    // Hermetic: the harness's ledger, no key, no operators file.
    op = { key: null, actor: 'carol', operators: OperatorRegistry.open(), env: { LEDGER_URL: h.dbUrl } };
    server = await startConsoleServer({
      client: h.env.client,
      operator: op,
      linkOf: (id) => `http://localhost:8233/namespaces/default/workflows/${id}`,
      port: 0,
      origins: ['https://proxy.example'],
      taskQueue: h.taskQueue,
    });
  });
  afterAll(async () => {
    await server?.close();
    await h?.close();
  });

  const auth = (token = server.token) => ({ authorization: `Bearer ${token}` });
  const post = (action: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${server.base}/api/${action}`, {
      method: 'POST',
      headers: { ...auth(), 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
  const answer = async (r: Response) => ({
    status: r.status,
    ...((await r.json()) as { ok: boolean; message: string; field?: string }),
  });
  const inbox = async (): Promise<Inbox> =>
    (await (await fetch(`${server.base}/api/inbox`, { headers: auth() })).json()) as Inbox;
  const waitingIn = (id: string) =>
    waitFor(inbox, (i) => i.waiting.some((w) => w.runId === id)).then(
      (i) => i.waiting.find((w) => w.runId === id) as WaitingRun,
    );

  it('requires the token on every request: none, forged or stale is 403; the page takes it once in the URL', async () => {
    expect((await fetch(`${server.base}/`)).status).toBe(403);
    expect((await fetch(`${server.base}/?token=forged`)).status).toBe(403);
    expect((await fetch(`${server.base}/api/inbox`, { headers: auth('forged') })).status).toBe(403);
    // The API does not take the URL token (it would land in logs and history).
    expect((await fetch(`${server.base}/api/inbox?token=${server.token}`)).status).toBe(403);
    // A token of an earlier console (restarted: a new token) is stale.
    const earlier = await startConsoleServer({
      client: h.env.client,
      operator: op,
      linkOf: (id) => id,
      port: 0,
    });
    const stale = earlier.token;
    await earlier.close();
    expect(stale).not.toBe(server.token);
    const refused = await answer(await post('stop', { runId: 'x', reason: 'r' }, auth(stale)));
    expect(refused).toMatchObject({ status: 403, ok: false, message: expect.stringContaining('token') });

    // Issue 31 item 6: `?token=` is exchanged for an HttpOnly, SameSite=Strict cookie and a
    // redirect to `/`, so the token never stays in the address bar or the history.
    expect(server.url).toBe(`${server.base}/?token=${server.token}`);
    const first = server.url;
    const exchange = await fetch(first, { redirect: 'manual' });
    expect(exchange.status).toBe(303);
    expect(exchange.headers.get('location')).toBe('/');
    const setCookie = exchange.headers.get('set-cookie') ?? '';
    expect(setCookie).toMatch(
      new RegExp(`^${server.cookieName}=[\\w-]{43}; Path=/; HttpOnly; SameSite=Strict$`),
    );
    expect(await exchange.text()).toBe('');
    // The URL's token is spent (a history entry opens nothing); a new one was issued.
    expect(server.url).not.toBe(first);
    expect((await fetch(first, { redirect: 'manual' })).status).toBe(403);
    expect(setCookie).not.toContain(server.token);
    const cookie = { cookie: setCookie.split(';')[0]! };
    const page = await fetch(`${server.base}/`, { headers: cookie });
    expect(page.status).toBe(200);
    // The cookie authenticates the API; a POST with it must say it is the page's (no form can).
    expect((await fetch(`${server.base}/api/inbox`, { headers: cookie })).status).toBe(200);
    const noHeader = await fetch(`${server.base}/api/stop`, {
      method: 'POST',
      headers: { ...cookie, 'content-type': 'application/json' },
      body: JSON.stringify({ runId: 'x', reason: 'r' }),
    });
    expect(noHeader.status).toBe(403);
    expect(((await noHeader.json()) as { message: string }).message).toContain('X-Console-Request');
    expect(
      (await fetch(`${server.base}/`, { headers: { cookie: `${server.cookieName}=forged` } })).status,
    ).toBe(403);
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toMatch(/script-src 'nonce-[^']+'/);
    expect(csp).not.toContain('unsafe-inline');
    expect(page.headers.get('referrer-policy')).toBe('no-referrer');
    const html = await page.text();
    expect(html).toContain('approvals inbox');
    expect(html).toContain('acting as carol (unsigned');
    // The page never holds the token: its script cannot leak what it does not have.
    expect(html).not.toContain(server.token);
    expect(html).not.toContain(cookie.cookie.split('=')[1]);

    // Rotation: a new token; the old one (URL, cookie, Bearer) is dead at once.
    const old = server.token;
    const rotated = await fetch(`${server.base}/api/token`, {
      method: 'POST',
      headers: { ...auth(old), 'content-type': 'application/json' },
      body: '{}',
    });
    expect(rotated.status).toBe(200);
    const fresh = (await rotated.json()) as { token: string; url: string };
    expect(fresh.token).not.toBe(old);
    expect(fresh.token).toBe(server.token);
    expect(fresh.url).toBe(server.url);
    expect((await fetch(`${server.base}/api/inbox`, { headers: auth(old) })).status).toBe(403);
    expect((await fetch(`${server.base}/`, { headers: cookie })).status).toBe(403);
    expect((await fetch(`${server.base}/?token=${old}`, { redirect: 'manual' })).status).toBe(403);
    expect((await fetch(`${server.base}/api/inbox`, { headers: auth(fresh.token) })).status).toBe(200);
    const exchanged = await fetch(server.url, { redirect: 'manual' });
    expect(exchanged.status).toBe(303);
    const newCookie = (exchanged.headers.get('set-cookie') ?? '').split(';')[0]!;
    expect(newCookie).not.toBe(cookie.cookie);
    // From the page (cookie + header): the new cookie is set, the token not handed to the script.
    const fromPage = await fetch(`${server.base}/api/token`, {
      method: 'POST',
      headers: {
        cookie: newCookie,
        'x-console-request': '1',
        'content-type': 'application/json',
      },
      body: '{}',
    });
    expect(fromPage.status).toBe(200);
    const rotatedCookie = (fromPage.headers.get('set-cookie') ?? '').split(';')[0]!;
    expect(rotatedCookie).not.toBe(newCookie);
    expect(JSON.stringify(await fromPage.json())).not.toContain(server.token);
    expect((await fetch(`${server.base}/`, { headers: { cookie: newCookie } })).status).toBe(403);
    expect((await fetch(`${server.base}/`, { headers: { cookie: rotatedCookie } })).status).toBe(200);
  });

  it('refuses other origins (403) and preflights; its own and the configured ones pass', async () => {
    const get = (origin: string) => fetch(`${server.base}/api/inbox`, { headers: { ...auth(), origin } });
    expect((await get('http://evil.example')).status).toBe(403);
    expect((await get(`http://localhost:${server.port + 1}`)).status).toBe(403);
    expect((await get(server.base)).status).toBe(200);
    expect((await get(`http://localhost:${server.port}`)).status).toBe(200);
    expect((await get('https://proxy.example')).status).toBe(200);
    const preflight = await fetch(`${server.base}/api/approve`, {
      method: 'OPTIONS',
      headers: { origin: 'http://evil.example', 'access-control-request-method': 'POST' },
    });
    expect(preflight.status).toBe(403);
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
    const cross = await post('stop', { runId: 'x', reason: 'r' }, { origin: 'http://evil.example' });
    expect(cross.status).toBe(403);
  });

  it('answers malformed action bodies 400 naming the field; nothing is stored and nothing runs', async () => {
    const run = await h.start(transferRun('console-bad'));
    const w = await waitingIn(run.workflowId);
    const good = {
      runId: run.workflowId,
      stopRef: w.stopRef,
      fingerprint: w.blockedCall?.fingerprint,
      argsDigest: w.blockedCall?.argsDigest,
      reason: 'checked',
      ttl: '10m',
    };

    expect((await post('approve', good, { 'content-type': 'text/plain' })).status).toBe(415);
    expect(await answer(await post('approve', '{not json'))).toMatchObject({
      status: 400,
      message: 'approve: body is not JSON',
    });
    const cases: [string, unknown, string][] = [
      ['approve', { ...good, reason: '  ' }, 'reason'],
      ['approve', { ...good, reason: undefined }, 'reason'],
      ['approve', { ...good, runId: 7 }, 'runId'],
      ['approve', { ...good, ttl: 'soon' }, 'ttl'],
      ['approve', { ...good, fingerprint: '' }, 'fingerprint'],
      ['approve', { ...good, argsDigest: undefined }, 'argsDigest'],
      ['deny', { ...good, ttl: undefined, argsDigest: 'transfer_funds:0' }, 'argsDigest'],
      ['approve', { ...good, actor: 'mallory' }, 'actor'],
      ['deny', { ...good, ttl: undefined, stopRef: null }, 'stopRef'],
      [
        'resume',
        { runId: run.workflowId, stopRef: w.stopRef, reason: 'x', raise: { maxSteps: -1 } },
        'raise.maxSteps',
      ],
      [
        'resume',
        { runId: run.workflowId, stopRef: w.stopRef, reason: 'x', raise: { maxPizza: 3 } },
        'raise.maxPizza',
      ],
      ['stop', { runId: run.workflowId }, 'reason'],
      ['stop', [], '(body)'],
    ];
    for (const [action, body, field] of cases) {
      const a = await answer(await post(action, body));
      expect({ action, field, status: a.status }).toEqual({ action, field, status: 400 });
      expect(a.message).toContain(field);
      expect(a.field).toBe(field);
    }
    // A TTL beyond 7 days is the client API's own bad input (400).
    expect(await answer(await post('approve', { ...good, ttl: '8d' }))).toMatchObject({
      status: 400,
      message: expect.stringContaining('at most 7 days'),
    });
    expect((await post('nothing', good)).status).toBe(404);
    expect((await fetch(`${server.base}/api/approve`, { headers: auth() })).status).toBe(405);

    expect(await listApprovals({ ledgerUrl: h.dbUrl, env: {}, runId: run.workflowId })).toEqual([]);
    expect(await h.counters(run.workflowId)).not.toHaveProperty('transfer_funds');
    expect((await run.handle.query(statusQuery)).waitingForResume).toBe(true);
    await run.handle.terminate('test done');
  });

  it('lists the waiting call and refuses an approval for a stop the run has moved on from; then approves it once', async () => {
    const run = await h.start(transferRun('console-moved'));
    const w = await waitingIn(run.workflowId);
    expect(w).toMatchObject({
      reason: 'approval_required',
      terminalState: 'NEEDS_HUMAN',
      needsApproval: true,
      stopRef: expect.stringMatching(/^checkpoint-/),
      blockedCall: {
        tool: 'transfer_funds',
        args: { from: 'acc-1', to: 'acc-2', amountCents: 700, reference: 'console-moved' },
      },
      uiUrl: `http://localhost:8233/namespaces/default/workflows/${run.workflowId}`,
    });
    expect(w.report.blocked_call?.fingerprint).toBe(w.blockedCall?.fingerprint);
    const call = {
      runId: run.workflowId,
      fingerprint: w.blockedCall!.fingerprint,
      argsDigest: w.blockedCall!.argsDigest,
      reason: 'checked the accounts',
    };
    expect(call.argsDigest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(w.report.blocked_call?.args_digest).toBe(call.argsDigest);

    const stale = await answer(await post('approve', { ...call, stopRef: 'checkpoint-99', ttl: '5m' }));
    expect(stale.status).toBe(409);
    expect(stale.message).toContain('has moved on');
    expect(stale.message).toContain(`now waits at ${w.stopRef}`);
    const otherCall = await answer(
      await post('deny', { ...call, stopRef: w.stopRef, fingerprint: 'transfer_funds:0' }),
    );
    expect(otherCall).toMatchObject({ status: 409, message: expect.stringContaining('has moved on') });
    // A page that showed another call (same stop, same fingerprint, another digest) is refused too.
    const otherDigest = await answer(
      await post('approve', {
        ...call,
        stopRef: w.stopRef,
        argsDigest: `sha256:${'0'.repeat(64)}`,
        ttl: '5m',
      }),
    );
    expect(otherDigest).toMatchObject({ status: 409, message: expect.stringContaining('has moved on') });
    // A plain resume does not lift an approval stop (the worker says why).
    const resumed = await answer(
      await post('resume', { runId: run.workflowId, stopRef: w.stopRef, reason: 'go' }),
    );
    expect(resumed.status).toBe(409);
    expect(await listApprovals({ ledgerUrl: h.dbUrl, env: {}, runId: run.workflowId })).toEqual([]);

    const approved = await answer(await post('approve', { ...call, stopRef: w.stopRef, ttl: '5m' }));
    expect(approved).toMatchObject({
      status: 200,
      ok: true,
      message: expect.stringContaining('the run resumed'),
    });
    expect((await runResult(run)).terminal_state).toBe('COMPLETED');
    expect((await h.counters(run.workflowId)).transfer_funds).toBe(1);
    const rows = await listApprovals({ ledgerUrl: h.dbUrl, env: {}, runId: run.workflowId });
    expect(rows.map((r) => [r.state, r.approver, r.reason])).toEqual([
      ['used', 'carol', 'checked the accounts'],
    ]);

    // Closed now: the page's stale card is refused, saying why.
    const late = await answer(await post('approve', { ...call, stopRef: w.stopRef, ttl: '5m' }));
    expect(late).toMatchObject({ status: 409, message: expect.stringContaining('is closed (COMPLETED)') });
    expect((await h.counters(run.workflowId)).transfer_funds).toBe(1);
  });

  it('a waiting run whose worker is gone is listed as not answering within the query timeout, not waited on', async () => {
    const gone = await startHarness();
    const run = await gone.start(transferRun('console-gone'));
    await waitFor(
      () => run.handle.query(statusQuery),
      (st) => st.waitingForResume,
    );
    await gone.close();
    const read = () =>
      readInbox(h.env.client, { linkOf: (id) => id, queryTimeoutMs: 1000, taskQueue: gone.taskQueue });
    const inbox = await waitFor(read, (i) => i.unanswered.some((u) => u.runId === run.workflowId));
    const started = Date.now();
    const again = await read();
    // Without the deadline the server answers a query to a run without a worker after ~30 s.
    expect(Date.now() - started).toBeLessThan(5000);
    expect(again.unanswered.find((u) => u.runId === run.workflowId)?.why).toContain('is a worker running');
    expect(inbox.waiting.some((w) => w.runId === run.workflowId)).toBe(false);
    // Another task queue's console does not list it at all.
    const other = await readInbox(h.env.client, { linkOf: (id) => id, taskQueue: h.taskQueue });
    expect([...other.waiting, ...other.unanswered].some((w) => w.runId === run.workflowId)).toBe(false);
    await h.env.client.workflow.getHandle(run.workflowId).terminate('test done');
  }, 60_000);

  it('raises only the stopping budget; a stop of a stopped run is refused', async () => {
    const q = search('console budget');
    const run = await h.start(
      live(
        [
          q,
          // The call the budget blocks carries URL credentials: the inbox shows them redacted.
          search('fetch https://carol:hunter2pass@intranet.example/doc'),
          search('console budget 3'),
          { tool: 'complete_task', args: { summary: 'done' } },
        ],
        {
          guard: { maxSteps: 1 },
          resumeWindowMs: 120_000,
        },
      ),
    );
    const w = await waitingIn(run.workflowId);
    expect(w).toMatchObject({
      reason: 'step_budget',
      needsApproval: false,
      raise: { key: 'maxSteps', current: 1 },
      blockedCall: { tool: 'search' },
    });
    expect(JSON.stringify(w)).not.toContain('hunter2pass');
    expect(JSON.stringify(w.blockedCall?.args)).toContain('[REDACTED]');
    const other = await answer(
      await post('resume', {
        runId: run.workflowId,
        stopRef: w.stopRef,
        reason: 'more',
        raise: { maxCostUsd: 5 },
      }),
    );
    expect(other).toMatchObject({
      status: 400,
      field: 'raise.maxCostUsd',
      message: expect.stringContaining('only raise.maxSteps'),
    });
    const stop = await answer(await post('stop', { runId: run.workflowId, reason: 'halt' }));
    expect(stop).toMatchObject({ status: 409, message: expect.stringContaining('already stopped') });
    const movedOn = await answer(
      await post('resume', { runId: run.workflowId, stopRef: 'checkpoint-0', reason: 'more' }),
    );
    expect(movedOn).toMatchObject({ status: 409, message: expect.stringContaining('has moved on') });

    const raised = await answer(
      await post('resume', {
        runId: run.workflowId,
        stopRef: w.stopRef,
        reason: 'three more',
        raise: { maxSteps: 10 },
      }),
    );
    expect(raised).toMatchObject({ status: 200, ok: true });
    expect((await runResult(run)).terminal_state).toBe('COMPLETED');
  });
});
