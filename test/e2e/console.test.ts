/**
 * `agentctl console` in a real browser (issue 20 item 2): Debian's chromium driven by
 * playwright-core, against the shared dev server and an in-process worker that trusts only
 * signed operators (alice may approve; bob may lift stops but not approve).
 *
 *  - alice's console is open before the run starts: the page picks the run up by itself
 *    (polling), grouped under `approval_required`, with the blocked call's tool, fingerprint
 *    and args; the args carry HTML, which must show as text and never run;
 *  - bob's console: his approval is refused by the worker (it verifies his signed approval
 *    against its operators file) and the page says why; the transfer has not run;
 *  - alice approves in her page: the call runs exactly once (the runtime's tool counter), the
 *    run completes, and the card leaves the inbox;
 *  - bob's page, gone stale meanwhile, denies the call: refused, and the page says the run is closed.
 * Screenshots: console.png (the inbox), console-refused.png (bob's refusal), saved to
 * test-results/screenshots/, or to docs/ with UPDATE_SCREENSHOTS=1 (test/helpers/screenshots.ts).
 *
 * Needs /usr/bin/chromium (`apt-get install -y chromium`); skipped with a message when absent.
 */
import { chromium, type Browser, type Page } from 'playwright-core';
import type { ConsoleOperator } from '../../client/console/actions';
import { startConsoleServer, type ConsoleServerHandle } from '../../client/console/server';
import { statusQuery } from '../../common/contracts';
import { OperatorRegistry } from '../../operators/registry';
import type { OperatorKeyFile } from '../../operators/sign';
import { alice, bob, testOperators } from '../approvals/signing';
import { startHarness, type Harness } from '../helpers/run-harness';
import { live, waitFor } from '../helpers/run-inputs';
import { CHROMIUM, CHROMIUM_ARGS, HAVE_CHROMIUM } from '../helpers/chromium';
import { screenshotPath } from '../helpers/screenshots';
import { runResult } from '../helpers/run-result';

/** In the transfer's args: untrusted text that would run if the page rendered it as HTML. */
const HOSTILE = '<img src=x onerror="window.__pwned=1"><b>inv-2026-07</b>';

if (!HAVE_CHROMIUM) {
  console.warn(
    `[console.test] SKIPPED: ${CHROMIUM} not found — install it with "apt-get install -y chromium" (or set CHROMIUM_PATH)`,
  );
}

(HAVE_CHROMIUM ? describe : describe.skip)('agentctl console (real browser)', () => {
  let h: Harness;
  let browser: Browser;
  const consoles: ConsoleServerHandle[] = [];

  beforeAll(async () => {
    h = await startHarness({ operators: testOperators() });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, timeout: 30_000 });
  }, 120_000);
  afterAll(async () => {
    await browser?.close().catch(() => undefined);
    for (const c of consoles) await c.close();
    await h?.close();
  }, 30_000);

  /** A console signing with `key`, as `agentctl console --key` starts it (the ledger of the harness). */
  async function consoleOf(key: OperatorKeyFile, refreshMs = 500): Promise<ConsoleServerHandle> {
    const operator: ConsoleOperator = {
      key,
      actor: key.operator,
      operators: OperatorRegistry.open(),
      env: { LEDGER_URL: h.dbUrl },
    };
    const server = await startConsoleServer({
      client: h.env.client,
      operator,
      linkOf: (id) => `http://localhost:8233/namespaces/default/workflows/${encodeURIComponent(id)}`,
      port: 0,
      refreshMs,
      // This test's runs only: the shared dev server also holds other test files' runs.
      taskQueue: h.taskQueue,
    });
    consoles.push(server);
    return server;
  }

  async function openPage(server: ConsoleServerHandle): Promise<Page> {
    const page = await browser.newPage({ viewport: { width: 1100, height: 760 } });
    await page.goto(server.url, { waitUntil: 'domcontentloaded', timeout: 30_000 });
    return page;
  }

  const card = (page: Page, runId: string) => page.locator(`.card[data-run="${runId}"]`);

  it('a run stopped approval_required: refused for bob in his page, approved once by alice in hers', async () => {
    const alicePage = await openPage(await consoleOf(alice.keyFile));
    // The token was exchanged for an HttpOnly cookie before the page existed (issue 31 item 6).
    expect(alicePage.url()).toBe(`${(await alicePage.evaluate('location.origin')) as string}/`);
    expect(await alicePage.evaluate('document.cookie')).toBe('');

    const run = await h.start(
      live(
        [
          {
            tool: 'transfer_funds',
            args: { from: 'acc-1', to: 'acc-9', amountCents: 12_500, reference: HOSTILE },
          },
          { tool: 'complete_task', args: { summary: 'paid' } },
        ],
        { goal: 'pay invoice inv-2026-07', resumeWindowMs: 180_000 },
      ),
    );
    await waitFor(
      () => run.handle.query(statusQuery),
      (s) => s.waitingForResume,
    );

    // alice's page shows the run without a reload (it polls), under its reason.
    const aliceCard = card(alicePage, run.workflowId);
    await aliceCard.waitFor({ timeout: 20_000 });
    const group = alicePage.locator('section[data-reason="approval_required"]');
    expect(await group.locator('h2').innerText()).toMatch(/^approval_required \(\d+\)$/);
    const text = await aliceCard.innerText();
    expect(text).toContain('NEEDS_HUMAN · approval_required');
    expect(text).toContain('blocked call: transfer_funds');
    // The guard's fingerprint is labelled for what it is, not as a security hash.
    expect(text).toMatch(
      /repeat-counting fingerprint \(the guard's, not a security hash\): transfer_funds:[0-9a-f]+/,
    );
    // What is approved is named by its SHA-256 digest (issue 31).
    expect(text).toMatch(/approves exactly the call with digest sha256:[0-9a-f]{64}/);
    expect(text).toContain('goal: pay invoice inv-2026-07');
    expect(await aliceCard.locator('pre.args').innerText()).toContain(JSON.stringify(HOSTILE));
    expect(await aliceCard.locator('a').getAttribute('href')).toBe(
      `http://localhost:8233/namespaces/default/workflows/${encodeURIComponent(run.workflowId)}`,
    );
    // Shown as text, never run: no element came out of the args.
    expect(await alicePage.locator('.card img, .card b').count()).toBe(0);
    expect(await alicePage.evaluate('window.__pwned')).toBeUndefined();
    await aliceCard.locator('input[name="reason"]').fill('invoice inv-2026-07 matches the purchase order');
    // The StopReport, opened, stays open across the page's refreshes.
    await aliceCard.locator('summary', { hasText: 'StopReport' }).click();
    await alicePage.waitForTimeout(1200);
    const report = await aliceCard.locator('details[open] pre').innerText();
    expect(report).toContain('"guard_reason": "approval_required"');
    expect(report).toContain('"blocked_call"');
    await alicePage.screenshot({ path: screenshotPath('console.png') });

    // bob (may lift stops, may not approve) approves in his own console: the worker refuses.
    // bob's page refreshes only after his own actions here: it goes stale below.
    const bobPage = await openPage(await consoleOf(bob.keyFile, 600_000));
    const bobCard = card(bobPage, run.workflowId);
    await bobCard.waitFor({ timeout: 20_000 });
    await bobCard.locator('input[name="reason"]').fill('looks fine to me');
    await bobCard.getByRole('button', { name: 'Approve & resume' }).click();
    const refusal = bobCard.locator('.msg.bad');
    await refusal.waitFor({ timeout: 20_000 });
    const why = await refusal.innerText();
    expect(why).toContain('the run refused the resume');
    expect(why).toContain('unverified');
    await bobPage.screenshot({ path: screenshotPath('console-refused.png') });
    expect(await h.counters(run.workflowId)).not.toHaveProperty('transfer_funds');
    expect((await run.handle.query(statusQuery)).waitingForResume).toBe(true);

    // alice approves in her page (her reason is still in the field across refreshes).
    expect(await aliceCard.locator('input[name="reason"]').inputValue()).toBe(
      'invoice inv-2026-07 matches the purchase order',
    );
    await aliceCard.locator('input[name="ttl"]').fill('10m');
    await aliceCard.getByRole('button', { name: 'Approve & resume' }).click();
    const flash = alicePage.locator('#flash .good');
    await flash.waitFor({ timeout: 20_000 });
    expect(await flash.innerText()).toContain('the run resumed');
    const result = await runResult(run);
    expect(result.terminal_state).toBe('COMPLETED');
    expect((await h.counters(run.workflowId)).transfer_funds).toBe(1);
    // The run left the inbox once the pointer is off the list (it held still under it).
    await alicePage.mouse.move(1, 1);
    await aliceCard.waitFor({ state: 'detached', timeout: 20_000 });

    // bob's stale page still shows the call; denying it now is refused, and the page says why.
    await bobCard.locator('input[name="reason"]').fill('changed my mind');
    await bobCard.getByRole('button', { name: 'Deny' }).click();
    const stale = bobPage.locator('#flash .bad', { hasText: 'is closed' });
    await stale.waitFor({ timeout: 20_000 });
    expect(await stale.innerText()).toContain(`refused: run ${run.workflowId} is closed (COMPLETED)`);
    expect((await h.counters(run.workflowId)).transfer_funds).toBe(1);
    await alicePage.close();
    await bobPage.close();
  }, 120_000);
});
