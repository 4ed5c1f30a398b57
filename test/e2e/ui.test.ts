/**
 * The Temporal Web UI shows why the guard stopped a run (issue 5 item 4), proven in a real
 * browser: Debian's chromium driven by playwright-core.
 *
 * The test starts its OWN dev server with the UI on a free port (the shared test server is
 * headless), a worker with the real workflow + activities on a fresh SQLite file, and a
 * fixture-mode scripted run that repeats `search` three times → STOPPED_LOOP_GUARD
 * `same_call_repeat`; the run then waits for `resume` (WAITING). It opens the workflow's
 * page, waits for it to render and checks that the page text carries the guard reason and
 * the blocked tool, and saves a screenshot to docs/temporal-ui.png.
 *
 * Needs /usr/bin/chromium (`apt-get install -y chromium`); skipped with a message when absent.
 */
import { existsSync, mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, type Worker } from '@temporalio/worker';
import { chromium, type Browser } from 'playwright-core';
import type { RunInput, RunStatus } from '../../common/contracts';
import { statusQuery } from '../../common/contracts';
import { freePort, startDevServer, type DevServerHandle } from '../../scripts/dev-server';
import { createAgentWorker, openWorkerDeps, type WorkerDeps } from '../../worker/create-worker';
import type { agentRun } from '../../workflows';
import { workflowBundle } from '../helpers/run-harness';
import { uniqueId, uniqueTaskQueue } from '../helpers/temporal-env';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const HAVE_CHROMIUM = existsSync(CHROMIUM);
const SCREENSHOT = resolve(__dirname, '../../docs/temporal-ui.png');
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

if (!HAVE_CHROMIUM) {
  console.warn(
    `[ui.test] SKIPPED: ${CHROMIUM} not found — install it with "apt-get install -y chromium" (or set CHROMIUM_PATH)`,
  );
}

try {
  Runtime.install({ logger: new DefaultLogger('WARN') });
} catch {
  // Already installed.
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

(HAVE_CHROMIUM ? describe : describe.skip)('Temporal Web UI shows a guard stop (real browser)', () => {
  let server: DevServerHandle | undefined;
  let native: NativeConnection | undefined;
  let connection: Connection | undefined;
  let deps: WorkerDeps | undefined;
  let worker: Worker | undefined;
  let running: Promise<void> | undefined;
  let browser: Browser | undefined;
  let client: Client;
  let taskQueue: string;

  beforeAll(async () => {
    const uiPort = await freePort();
    server = await startDevServer({
      ip: '127.0.0.1',
      port: 0,
      uiPort,
      headless: false,
      dbFile: null,
      quiet: true,
      logLevel: 'error',
    });
    native = await NativeConnection.connect({ address: server.address });
    connection = await Connection.connect({ address: server.address });
    client = new Client({ connection, namespace: server.namespace });
    const dbUrl = `sqlite:${join(mkdtempSync(join(tmpdir(), 'alg-ui-')), 'agent.db')}`;
    deps = await openWorkerDeps({ ledgerUrl: dbUrl, worldUrl: dbUrl });
    taskQueue = uniqueTaskQueue('ui');
    worker = await createAgentWorker({
      connection: native,
      namespace: server.namespace,
      taskQueue,
      deps,
      workflowBundle: await workflowBundle(),
    });
    running = worker.run();
  }, 90_000);

  afterAll(async () => {
    await browser?.close().catch(() => undefined);
    worker?.shutdown();
    await running?.catch(() => undefined);
    await deps?.close();
    await connection?.close();
    await native?.close();
    await server?.stop();
  }, 30_000);

  it('renders the workflow page with the guard reason and the blocked tool', async () => {
    const input: RunInput = {
      goal: 'research temporal (UI e2e)',
      planner: {
        kind: 'scripted',
        script: {
          calls: [
            { tool: 'search', args: { query: 'temporal' } },
            { tool: 'search', args: { query: 'temporal' } },
            { tool: 'search', args: { query: 'temporal' } },
          ],
        },
      },
      // Stays open, waiting for resume, while the browser looks at it.
      resumeWindowMs: 10 * 60_000,
    };
    const workflowId = uniqueId('ui-run');
    const handle = await client.workflow.start<typeof agentRun>('agentRun', {
      taskQueue,
      workflowId,
      args: [input],
      staticSummary: input.goal,
    });

    // Wait until the guard has stopped it and it waits for resume.
    let status: RunStatus | undefined;
    for (let i = 0; i < 100; i++) {
      // Until the first activity returns, the workflow has not registered its queries yet.
      status = await handle.query(statusQuery).catch(() => undefined);
      if (status?.phase === 'WAITING') break;
      await sleep(200);
    }
    expect(status?.phase).toBe('WAITING');
    expect(status?.guardReason).toBe('same_call_repeat');

    // startDevServer waits for the frontend; the UI server may answer a moment later.
    for (let i = 0; i < 60; i++) {
      const ok = await fetch(server!.uiUrl!).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) break;
      await sleep(250);
    }

    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, timeout: 30_000 });
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const url = `${server!.uiUrl}/namespaces/default/workflows/${encodeURIComponent(workflowId)}`;
    await page.goto(url, { waitUntil: 'domcontentloaded', timeout: 30_000 });

    // Text of the page AND of its iframes: UI 2.54 renders the user metadata (static summary,
    // current details) as markdown inside sandboxed iframes, which body.innerText skips.
    const allText = async (): Promise<string> => {
      const parts = await Promise.all(
        page
          .frames()
          .map((f) => f.evaluate<string>('document.body ? document.body.innerText : ""').catch(() => '')),
      );
      return parts.join('\n');
    };
    const waitForText = async (needles: string[], timeoutMs = 20_000): Promise<string> => {
      const deadline = Date.now() + timeoutMs;
      let text = '';
      while (Date.now() < deadline) {
        text = await allText();
        if (needles.every((n) => text.includes(n))) break;
        await sleep(250);
      }
      return text;
    };
    const openTab = async (name: string): Promise<void> => {
      const tab = page.getByRole('tab', { name });
      await ((await tab.count()) ? tab.first() : page.getByText(name, { exact: true }).first()).click();
    };

    // 1. The default (Timeline) view: each tool activity carries its summary `tool · fp`.
    const timeline = await waitForText(['agentRun', 'runTool', 'search ·']);
    expect(timeline).toContain('search ·');

    // 2. Search Attributes tab: the guard reason and state, as indexed for filtering.
    await openTab('Search Attributes');
    const attributes = await waitForText(['"AgentGuardReason": "same_call_repeat"']);
    expect(attributes).toContain('"AgentGuardReason": "same_call_repeat"');
    expect(attributes).toContain('"AgentState": "STOPPED_LOOP_GUARD"');

    // 3. User Metadata tab: static summary (the goal) and current details, with the guard
    //    reason and the blocked call `search:<hash>` (the tool that was refused).
    await openTab('User Metadata');
    const metadata = await waitForText([
      'research temporal (UI e2e)',
      'reason same_call_repeat',
      'blocked call search:',
    ]);
    mkdirSync(resolve(SCREENSHOT, '..'), { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    expect(metadata).toContain('research temporal (UI e2e)');
    expect(metadata).toContain('reason same_call_repeat');
    expect(metadata).toContain('blocked call search:');
  }, 90_000);
});
