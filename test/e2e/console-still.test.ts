/**
 * The console in a real browser (issue 31 items 5-7): Debian's chromium via playwright-core,
 * the shared dev server, an in-process worker in open mode.
 *
 *  - the token: `?token=` is traded for an HttpOnly, SameSite=Strict cookie and a redirect, and
 *    spent: Chromium's own history database (its `History` file) keeps the redirect's source URL,
 *    so what it holds opens nothing (403), and the live token is nowhere in it;
 *  - look-alike payees: a Cyrillic one is marked with its code points and warned about; the
 *    amount shows in the unit the tool declares (125.00 EUR);
 *  - a page that holds still: a focused reason field keeps focus and its text across refreshes
 *    and new runs; a new run does not move the "Approve & resume" button under the pointer
 *    (it is held, a badge says "1 new"), and appears once the pointer leaves.
 *
 * Needs /usr/bin/chromium (`apt-get install -y chromium`); skipped with a message when absent.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import type { ConsoleOperator } from '../../client/console/actions';
import { startConsoleServer, type ConsoleServerHandle } from '../../client/console/server';
import { statusQuery } from '../../common/contracts';
import { openSqlite } from '../../storage/sqlite-driver';
import { OperatorRegistry } from '../../operators/registry';
import { startHarness, type Harness } from '../helpers/run-harness';
import { live, waitFor } from '../helpers/run-inputs';
import { CHROMIUM, CHROMIUM_ARGS, HAVE_CHROMIUM } from '../helpers/chromium';

if (!HAVE_CHROMIUM)
  console.warn(`[console-still.test] SKIPPED: ${CHROMIUM} not found (apt-get install -y chromium)`);

const transfer = (to: string, reference: string) =>
  live(
    [
      { tool: 'transfer_funds', args: { from: 'acc-1', to, amountCents: 12_500, reference } },
      { tool: 'complete_task', args: { summary: 'paid' } },
    ],
    { resumeWindowMs: 180_000 },
  );

(HAVE_CHROMIUM ? describe : describe.skip)(
  'the console holds still and shows what to check (real browser)',
  () => {
    let h: Harness;
    let server: ConsoleServerHandle;
    let context: BrowserContext;
    const profile = mkdtempSync(join(tmpdir(), 'alg-chromium-'));

    beforeAll(async () => {
      h = await startHarness();
      const operator: ConsoleOperator = {
        key: null,
        actor: 'dana',
        operators: OperatorRegistry.open(),
        env: { LEDGER_URL: h.dbUrl },
      };
      server = await startConsoleServer({
        client: h.env.client,
        operator,
        linkOf: (id) => id,
        port: 0,
        refreshMs: 300,
        taskQueue: h.taskQueue,
        display: { transfer_funds: { amountCents: { unit: 'EUR', scale: 100 } } },
      });
      // A profile on disk: the browser's history database is read back below.
      context = await chromium.launchPersistentContext(profile, {
        executablePath: CHROMIUM,
        args: CHROMIUM_ARGS,
        viewport: { width: 1100, height: 900 },
        timeout: 30_000,
      });
    }, 120_000);
    afterAll(async () => {
      await context?.close().catch(() => undefined);
      await server?.close();
      await h?.close();
    }, 30_000);

    const waiting = async (to: string, reference: string) => {
      const run = await h.start(transfer(to, reference));
      await waitFor(
        () => run.handle.query(statusQuery),
        (s) => s.waitingForResume,
      );
      return run;
    };

    it('keeps the token out of history, marks a look-alike payee, holds focus and the pointer', async () => {
      const a = await waiting('\u0430cc-vend\u043er-7', 'still-a');
      const page: Page = await context.newPage();
      const url0 = server.url;
      await page.goto(url0, { waitUntil: 'domcontentloaded', timeout: 30_000 });
      expect(page.url()).toBe(`${server.base}/`);
      const spent = new URL(url0).searchParams.get('token') as string;
      const cookie = (await context.cookies()).find((c) => c.name === server.cookieName);
      expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict' });
      // The URL's token was spent by the exchange: the one the history keeps opens nothing.
      expect(server.token).not.toBe(spent);
      expect((await fetch(url0, { redirect: 'manual' })).status).toBe(403);
      expect(await page.evaluate('document.cookie')).toBe('');

      const card = page.locator(`.card[data-run="${a.workflowId}"]`);
      await card.waitFor({ timeout: 20_000 });
      // Item 5: the Cyrillic letters are marked with their code points, a warning names them,
      // the amount shows in its unit.
      expect(await card.locator('.warn').innerText()).toContain(
        'args.to: U+0430 Cyrillic at 0, U+043E Cyrillic at 8',
      );
      expect(await card.locator('pre.args .nonascii').allInnerTexts()).toEqual([
        'а\u2009U+0430',
        'о\u2009U+043E',
      ]);
      expect(await card.locator('.amounts').innerText()).toContain('amountCents = 125.00 EUR');

      // Item 7: type into the reason field; refreshes (every 300 ms) and a new run keep focus and text.
      const reason = card.locator('input[name="reason"]');
      await reason.click();
      await page.keyboard.type('half a sen');
      const b = await waiting('acc-vendor-8', 'still-b');
      await page.locator('#held', { hasText: '1 new' }).waitFor({ timeout: 20_000 });
      await page.waitForTimeout(1000);
      expect(
        await page.evaluate("document.activeElement && document.activeElement.getAttribute('name')"),
      ).toBe('reason');
      expect(await reason.evaluate((e) => e.matches(':focus'))).toBe(true);
      await page.keyboard.type('tence');
      expect(await reason.inputValue()).toBe('half a sentence');
      expect(await page.locator(`.card[data-run="${b.workflowId}"]`).count()).toBe(0);

      // Blur, hover the Approve button: a newer run must not move it.
      await page.evaluate('document.activeElement.blur()');
      await page.mouse.move(1, 1);
      const approve = card.getByRole('button', { name: 'Approve & resume' });
      await page.locator(`.card[data-run="${b.workflowId}"]`).waitFor({ timeout: 20_000 });
      await approve.hover();
      const before = await approve.boundingBox();
      const c = await waiting('acc-vendor-9', 'still-c');
      await page.locator('#held', { hasText: '1 new' }).waitFor({ timeout: 20_000 });
      await page.waitForTimeout(1000);
      expect(await approve.boundingBox()).toEqual(before);
      expect(await page.locator(`.card[data-run="${c.workflowId}"]`).count()).toBe(0);
      // The text typed earlier is still there after all those redraws.
      expect(await reason.inputValue()).toBe('half a sentence');
      // The pointer leaves: the new run appears, below the cards already shown.
      await page.mouse.move(1, 1);
      await page.locator(`.card[data-run="${c.workflowId}"]`).waitFor({ timeout: 20_000 });
      const order = await page
        .locator('section[data-reason="approval_required"] .card')
        .evaluateAll((cs) => cs.map((x) => x.getAttribute('data-run')));
      expect(order).toEqual([a.workflowId, b.workflowId, c.workflowId]);
      expect(await approve.boundingBox()).toEqual(before);
      await page.close();

      // Item 6: the browser's history holds the clean URL, never the token.
      await context.close();
      const db = openSqlite(join(profile, 'Default', 'History'), { readOnly: true });
      try {
        const urls = (db.prepare('SELECT url FROM urls').all() as unknown as { url: string }[]).map(
          (r) => r.url,
        );
        expect(urls).toContain(`${server.base}/`);
        // Chromium keeps a redirect's source URL: what it holds is the spent token, never a live one.
        const kept = urls.filter((u) => u.includes('token='));
        expect(kept.every((u) => u === url0)).toBe(true);
        expect(readFileSync(join(profile, 'Default', 'History')).includes(server.token)).toBe(false);
        expect(
          (await fetch(`${server.base}/api/inbox`, { headers: { authorization: `Bearer ${spent}` } })).status,
        ).toBe(403);
      } finally {
        db.close();
      }
      for (const r of [a, b, c]) await r.handle.terminate('test done');
    }, 150_000);
  },
);
