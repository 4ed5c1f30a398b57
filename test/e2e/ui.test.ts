/**
 * The Temporal Web UI tells why the guard stopped a run, by default (issue 5 item 4, issue 38
 * item 2), and shows payloads only through the codec server (issue 10 item 2), proven in a real
 * browser: Debian's chromium driven by playwright-core.
 *
 * The test starts its OWN two dev servers with the UI on free ports (the shared test server
 * is headless):
 *  - A is the demo's stack as `npm run demo -- --once` starts it (demo/stack.ts: the dev server
 *    with the codec server it starts by default, the demo's worker), on a free port. A
 *    fixture-mode scripted run whose `search` args carry a marker string proposes the same call
 *    three times → STOPPED_LOOP_GUARD `same_call_repeat`; the run then waits for `resume`. Its
 *    page carries the goal (summary), the guard reason, the blocked call and the command that
 *    lets the run go on (current details) and the marker (input), with no flag given; the Workflows list, with the AgentState and
 *    AgentGuardReason columns added (docs/ui.md), says the run is stopped and why.
 *  - B is a dev server started with the codec server turned off (`npm run dev:server --
 *    --no-codec`): the raw history (a client without the keys) and the page carry no trace of
 *    the marker.
 *  - the `temporal` CLI shows the marker only with `--codec-endpoint` and the bearer token.
 * Screenshots temporal-ui.png, ui-decoded.png, ui-list.png, ui-waiting.png, ui-marks.png,
 * ui-list-ended.png (A) and ui-encrypted.png (B) go to
 * test-results/screenshots/, or to docs/ with UPDATE_SCREENSHOTS=1 (test/helpers/screenshots.ts).
 *
 * Needs /usr/bin/chromium (`apt-get install -y chromium`); skipped with a message when absent.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { DefaultLogger, NativeConnection, Runtime, type Worker } from '@temporalio/worker';
import { chromium, type Browser, type Page } from 'playwright-core';
import type { RunInput, RunStatus } from '../../common/contracts';
import { statusQuery } from '../../common/contracts';
import { loadPayloadCodec, startCodecServer, type CodecServerHandle } from '../../codec';
import { startStack, type DemoStack } from '../../demo/stack';
import { freePort, startDevServer } from '../../devserver/dev-server';
import { uiListLink } from '../../client/format';
import { WAITING_FOR_OPERATOR_QUERY } from '../../common/search-attributes';
import { ensureTemporalCli } from '../../devserver/temporal-cli';
import { createAgentWorker, type WorkerDeps } from '../../worker/create-worker';
import type { agentRun } from '../../workflows';
import { workflowBundle } from '../helpers/run-harness';
import { CHROMIUM, CHROMIUM_ARGS, HAVE_CHROMIUM } from '../helpers/chromium';
import { screenshotPath } from '../helpers/screenshots';
import { testDataConverter, uniqueId, uniqueTaskQueue } from '../helpers/temporal-env';
import { openDemoWorkerDeps } from '../../demo/deps';

/** In the tool args of every run here; must never reach the server in plain text. */
const MARKER = 'marker-ui-5ecret-7d2a';
const CLI_TOKEN = 'ui-test-cli-token';

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

/** A dev server with its UI, and an encrypted worker and client on it. */
interface Side {
  /** The Web UI's base URL. */
  uiUrl: string;
  address: string;
  connection: Connection;
  client: Client;
  taskQueue: string;
  stop(): Promise<void>;
}

/**
 * A: the demo's own stack (demo/stack.ts), as `npm run demo -- --once` brings it up, on free
 * ports chosen through the variables the demo reads (TEMPORAL_ADDRESS, TEMPORAL_UI_PORT).
 */
async function startDemoSide(): Promise<Side & { stack: DemoStack }> {
  process.env.TEMPORAL_ADDRESS = `127.0.0.1:${await freePort()}`;
  process.env.TEMPORAL_UI_PORT = String(await freePort());
  const stack = await startStack({
    once: true,
    dataDir: mkdtempSync(join(tmpdir(), 'alg-ui-demo-')),
    say: () => undefined,
  });
  const { client, connection, address, taskQueue } = stack.connected;
  return { stack, uiUrl: stack.uiBase, address, connection, client, taskQueue, stop: () => stack.stop() };
}

/** B: a dev server whose UI has no codec server (`npm run dev:server -- --no-codec`). */
async function startSide(dataConverter: DataConverter): Promise<Side> {
  const server = await startDevServer({
    ip: '127.0.0.1',
    port: 0,
    uiPort: await freePort(),
    headless: false,
    dbFile: null,
    quiet: true,
    logLevel: 'error',
  });
  const native = await NativeConnection.connect({ address: server.address });
  const connection = await Connection.connect({ address: server.address });
  const client = new Client({ connection, namespace: server.namespace, dataConverter });
  const dbUrl = `sqlite:${join(mkdtempSync(join(tmpdir(), 'alg-ui-')), 'agent.db')}`;
  const deps: WorkerDeps & { close(): Promise<void> } = await openDemoWorkerDeps({
    ledgerUrl: dbUrl,
    worldUrl: dbUrl,
  });
  const taskQueue = uniqueTaskQueue('ui');
  const worker: Worker = await createAgentWorker({
    connection: native,
    namespace: server.namespace,
    taskQueue,
    deps,
    dataConverter,
    workflowBundle: await workflowBundle(),
  });
  const running = worker.run();
  return {
    uiUrl: server.uiUrl!,
    address: server.address,
    connection,
    client,
    taskQueue,
    async stop() {
      worker.shutdown();
      await running.catch(() => undefined);
      await deps.close();
      await connection.close();
      await native.close();
      await server.stop();
    },
  };
}

/** Starts the search loop on `side` and waits until the guard stopped it (WAITING for resume). */
async function startStoppedRun(
  side: Side,
  goal: string,
  resumeWindowMs = 10 * 60_000,
): Promise<{ workflowId: string; handle: WorkflowHandle }> {
  const call = { tool: 'search', args: { query: `temporal ${MARKER}` } };
  const input: RunInput = {
    goal,
    planner: { kind: 'scripted', script: { calls: [call, call, call] } },
    // Stays open, waiting for resume, while the browser looks at it (unless told otherwise).
    resumeWindowMs,
  };
  const workflowId = uniqueId('ui-run');
  const handle = await side.client.workflow.start<typeof agentRun>('agentRun', {
    taskQueue: side.taskQueue,
    workflowId,
    args: [input],
    staticSummary: input.goal,
  });
  let status: RunStatus | undefined;
  for (let i = 0; i < 100; i++) {
    // Until the first activity returns, the workflow has not registered its queries yet.
    status = await handle.query(statusQuery).catch(() => undefined);
    if (status?.phase === 'WAITING') break;
    await sleep(200);
  }
  expect(status?.phase).toBe('WAITING');
  expect(status?.guardReason).toBe('same_call_repeat');
  return { workflowId, handle };
}

/** Opens the run's page once the UI answers. */
async function openRunPage(browser: Browser, side: Side, workflowId: string): Promise<Page> {
  // startDevServer waits for the frontend; the UI server may answer a moment later.
  for (let i = 0; i < 60; i++) {
    const ok = await fetch(side.uiUrl).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    await sleep(250);
  }
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const url = `${side.uiUrl}/namespaces/default/workflows/${encodeURIComponent(workflowId)}`;
  await page.goto(url, { waitUntil: 'domcontentloaded', timeout: 30_000 });
  return page;
}

/**
 * The Workflows list with the AgentState and AgentGuardReason columns, added as docs/ui.md has a
 * user add them once: Configure Columns → the attribute's + button (the UI keeps them in the
 * browser for the namespace).
 */
async function openListWithAgentColumns(browser: Browser, side: Side): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1600, height: 500 } });
  await page.goto(`${side.uiUrl}/namespaces/default/workflows`, {
    waitUntil: 'domcontentloaded',
    timeout: 30_000,
  });
  await page.getByRole('button', { name: 'Configure Columns', exact: true }).click({ timeout: 20_000 });
  for (const attribute of ['AgentState', 'AgentGuardReason'])
    await page.getByRole('button', { name: `Add ${attribute} column`, exact: true }).click();
  // Room for them in the screenshot (the run id is in the link; an open run has no end).
  for (const column of ['Run ID', 'Start', 'End'])
    await page.getByRole('button', { name: `Remove ${column} column`, exact: true }).click();
  await page.getByRole('button', { name: 'Close Workflows Table configuration' }).click();
  await page.getByText('Configure Workflows Table').waitFor({ state: 'hidden' });
  return page;
}

/**
 * Text of the page AND of its iframes: UI 2.54 renders the user metadata (static summary,
 * current details) as markdown inside sandboxed iframes, which body.innerText skips.
 */
async function allText(page: Page): Promise<string> {
  const parts = await Promise.all(
    page
      .frames()
      .map((f) => f.evaluate<string>('document.body ? document.body.innerText : ""').catch(() => '')),
  );
  return parts.join('\n');
}

async function waitForText(page: Page, needles: string[], timeoutMs = 20_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  let text = '';
  while (Date.now() < deadline) {
    text = await allText(page);
    if (needles.every((n) => text.includes(n))) break;
    await sleep(250);
  }
  return text;
}

async function openTab(page: Page, name: string): Promise<void> {
  const tab = page.getByRole('tab', { name });
  await ((await tab.count()) ? tab.first() : page.getByText(name, { exact: true }).first()).click();
}

/** The run's start input as `temporal workflow show --output json` prints it, base64-decoded. */
function cliInput(json: string): string {
  const shown = JSON.parse(json) as {
    events: Array<{
      workflowExecutionStartedEventAttributes?: { input?: { payloads?: Array<{ data?: string }> } };
    }>;
  };
  const data = shown.events[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0]?.data ?? '';
  return Buffer.from(data, 'base64').toString('latin1');
}

/** `temporal workflow show` on `side`, with extra flags; resolves to stdout. */
async function cliShow(side: Side, workflowId: string, extra: string[]): Promise<string> {
  const cli = await ensureTemporalCli({ quiet: true });
  return new Promise((resolvePromise, reject) => {
    const child = spawn(
      cli,
      ['workflow', 'show', '-w', workflowId, '--address', side.address, '--output', 'json', ...extra],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    let err = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr.on('data', (b: Buffer) => (err += b.toString()));
    child.once('error', reject);
    child.once('close', (code) =>
      code === 0 ? resolvePromise(out) : reject(new Error(`exit ${code}: ${err}`)),
    );
  });
}

(HAVE_CHROMIUM ? describe : describe.skip)('Temporal Web UI (real browser)', () => {
  let demo: (Side & { stack: DemoStack }) | undefined; // A: the demo's default stack
  let opaque: Side | undefined; // B: no codec server
  let cliCodec: CodecServerHandle | undefined;
  let browser: Browser | undefined;

  beforeAll(async () => {
    const codec = loadPayloadCodec(process.env).codec!;
    cliCodec = await startCodecServer({ codec, port: 0, token: CLI_TOKEN });
    [demo, opaque] = await Promise.all([startDemoSide(), startSide(testDataConverter())]);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, timeout: 30_000 });
  }, 180_000);

  afterAll(async () => {
    await browser?.close().catch(() => undefined);
    await Promise.all([demo?.stop(), opaque?.stop()]);
    await cliCodec?.close();
  }, 30_000);

  it("the demo's default stack: the UI decodes through its codec server, no flag given", () => {
    expect(demo!.stack.server?.uiCodecUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it("on the demo's default stack: the summary and details say why the run stopped, the input is readable", async () => {
    const { workflowId } = await startStoppedRun(demo!, 'research temporal (UI e2e)');
    const page = await openRunPage(browser!, demo!, workflowId);

    // 1. The default (Timeline) view: the tool activities (a read's without a summary; a
    //    write's says `tool · fp`), and the run's input, decoded by the codec server, shows the
    //    tool args.
    const timeline = await waitForText(page, ['agentRun', 'runTool', MARKER]);
    expect(timeline).not.toContain('search ·');
    expect(timeline).toContain(MARKER);
    await page.screenshot({ path: screenshotPath('ui-decoded.png'), fullPage: true });

    // 2. Search Attributes tab: the guard reason and state, as indexed for filtering.
    await openTab(page, 'Search Attributes');
    const attributes = await waitForText(page, ['"AgentGuardReason": "same_call_repeat"']);
    expect(attributes).toContain('"AgentGuardReason": "same_call_repeat"');
    expect(attributes).toContain('"AgentState": "STOPPED_LOOP_GUARD"');

    // 3. User Metadata tab: static summary (the goal) and current details, with the guard
    //    reason, the blocked call as its tool and args, and the command that lets it go on.
    await openTab(page, 'User Metadata');
    const metadata = await waitForText(page, [
      'research temporal (UI e2e)',
      'reason same_call_repeat',
      'blocked call search {',
      `to go on agentctl resume ${workflowId}`,
    ]);
    await page.screenshot({ path: screenshotPath('temporal-ui.png'), fullPage: true });
    expect(metadata).toContain('research temporal (UI e2e)');
    expect(metadata).toContain('STOPPED_LOOP_GUARD');
    expect(metadata).toContain('reason same_call_repeat');
    expect(metadata).toContain('blocked call search {"query":');
    expect(metadata).toContain(`to go on agentctl resume ${workflowId}`);
    // It waits; it has not ended.
    expect(metadata).toContain('waits for a resume until');
    expect(metadata).not.toContain('ended stopped before the task was done');

    // 4. The Workflows list, with the agent columns: the run reads as stopped, and why.
    const list = await openListWithAgentColumns(browser!, demo!);
    const row = list.locator('tr', { hasText: workflowId });
    await row.waitFor({ timeout: 20_000 });
    const rowText = await row.innerText();
    expect(rowText).toContain('STOPPED_LOOP_GUARD');
    expect(rowText).toContain('same_call_repeat');
    await list.screenshot({ path: screenshotPath('ui-list.png') });

    // 5. The link `agentctl list --waiting` and the demo print: the list filtered to runs that
    //    wait for an operator holds this one.
    const waiting = await browser!.newPage({ viewport: { width: 1600, height: 500 } });
    await waiting.goto(uiListLink(demo!.uiUrl, 'default', WAITING_FOR_OPERATOR_QUERY), {
      waitUntil: 'domcontentloaded',
      timeout: 30_000,
    });
    await waiting.locator('tr', { hasText: workflowId }).waitFor({ timeout: 20_000 });
    await waiting.screenshot({ path: screenshotPath('ui-waiting.png') });

    // 6. The refused third call left its mark in the history (nothing ran, yet it shows): a
    //    `markHistory` row on the Timeline, its words in the Event History.
    await page.goto(`${demo!.uiUrl}/namespaces/default/workflows/${encodeURIComponent(workflowId)}`);
    await waitForText(page, ['markHistory']);
    await openTab(page, 'Event History');
    const marked = await waitForText(page, ['refused search', 'same_call_repeat · not run, the run stops']);
    await page.screenshot({ path: screenshotPath('ui-marks.png'), fullPage: true });
    expect(marked).toContain('refused search {"query":');
    expect(marked).toContain('same_call_repeat · not run, the run stops');

    // The CLI decodes through a codec server too, with its bearer token.
    const shown = await cliShow(demo!, workflowId, [
      '--codec-endpoint',
      cliCodec!.url,
      '--codec-auth',
      `Bearer ${CLI_TOKEN}`,
    ]);
    expect(cliInput(shown)).toContain(MARKER);
  }, 120_000);

  it('after its resume window a stopped run reads as Failed in the list, never Completed', async () => {
    const { workflowId, handle } = await startStoppedRun(
      demo!,
      'research temporal (UI e2e, window ends)',
      8_000,
    );
    await expect(handle.result()).rejects.toMatchObject({ cause: { type: 'AgentRunNotCompleted' } });
    const list = await openListWithAgentColumns(browser!, demo!);
    const row = list.locator('tr', { hasText: workflowId });
    await row.waitFor({ timeout: 20_000 });
    let rowText = '';
    for (let i = 0; i < 40 && !/Failed/i.test(rowText); i++) {
      await list.reload({ waitUntil: 'domcontentloaded' });
      await row.waitFor({ timeout: 20_000 });
      rowText = await row.innerText();
      if (!/Failed/i.test(rowText)) await sleep(250);
    }
    expect(rowText).toMatch(/Failed/i);
    expect(rowText).not.toMatch(/Completed/i);
    expect(rowText).toContain('STOPPED_LOOP_GUARD');
    await list.screenshot({ path: screenshotPath('ui-list-ended.png') });
  }, 120_000);

  it('without a codec server: neither the raw history nor the run page shows the tool args', async () => {
    const { workflowId } = await startStoppedRun(opaque!, 'research temporal (UI e2e, no codec)');

    // (a) The raw history, as a client without the keys fetches it: no marker anywhere.
    const plain = new Client({ connection: opaque!.connection, namespace: 'default' });
    const history = await plain.workflow.getHandle(workflowId).fetchHistory();
    const bytes = Buffer.from(temporal.api.history.v1.History.encode(history).finish());
    expect(bytes.includes(MARKER)).toBe(false);
    const raw = cliInput(await cliShow(opaque!, workflowId, []));
    expect(raw.length).toBeGreaterThan(100);
    expect(raw).not.toContain(MARKER);

    // (b) The page: the same run page as above, payloads shown as the server holds them.
    const page = await openRunPage(browser!, opaque!, workflowId);
    const text = await waitForText(page, ['agentRun', 'Input', 'runTool']);
    expect(text).toContain('agentRun');
    expect(text).toContain('runTool');
    expect(text).not.toContain(MARKER);
    expect(text).not.toContain('no codec)'); // the static summary is a payload too
    await page.screenshot({ path: screenshotPath('ui-encrypted.png'), fullPage: true });
    // The guard's search attributes are plain: an operator still sees why it stopped.
    await openTab(page, 'Search Attributes');
    const attributes = await waitForText(page, ['"AgentGuardReason": "same_call_repeat"']);
    expect(attributes).toContain('"AgentGuardReason": "same_call_repeat"');
    expect(await allText(page)).not.toContain(MARKER);
  }, 90_000);
});
