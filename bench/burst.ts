/**
 * `npm run bench:burst`: 1,000 people's messages sent at once to ONE conversation from 50
 * clients. Too slow for the suite (test/conversation/honest-answers.test.ts
 * sends 200 from 10); this prints the 1,000 figure.
 *
 * In-process and throwaway: a fast-dispatch dev server, one worker on a temp SQLite file, a
 * local Chat Completions server that answers every request with a short text reply (the agent
 * talks to its person, then waits). Each client connects with `connectClient` of
 * `agent-loop-guard/client` (the workers' payload codec, from AGENT_CODEC_KEYS), each on its own
 * connection. Once the agent first waits for its person, every message is sent at once
 * (`sendMessage`, one id each). Printed: how each was answered (answer / queued / refused for the
 * queue limit / refused busy with a retry-after / other refusal / unconfirmed / thrown) and the
 * checks: each accepted message has its own seq (none applied twice), the run took exactly
 * the accepted ones, and once the agent waits with nothing queued each accepted message reached
 * the model exactly once and no refused one did (none lost, none invented).
 *
 * Then the people follow the hint for up to --follow-s: each message refused busy is sent again,
 * same id, after its retryAfterMs. A busy refusal after a try that ran out of time says the
 * server may have taken it: those are the only refused messages the run may hold.
 *
 * Flags: --messages N (1000)  --clients N (50)  --queue-limit N (10)  --confirm-s N (30)
 *        --follow-s N (120)  --json
 * Exit 1 when a check fails.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { randomBytes, randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { quietWorkflowBundle } from '../scripts/workflow-bundle';
import type { RunInput } from '../common/contracts';
import type { agentRun } from '../workflows';
import { connectClient, readConversation, sendMessage, type Connected } from '../client/api';
import { dataConverterOf, loadPayloadCodec } from '../codec';
import { createAgentWorker } from '../worker/create-worker';
import { openDemoWorkerDeps } from '../demo/deps';
import { FAST_DISPATCH_DYNAMIC_CONFIG, startThrowawayDevServer } from '../devserver/dev-server';
import { cliFlags, intFlag } from '../scripts/cli-args';
import { burst, followHints, timesSeen } from './burst-core';

interface Options {
  messages: number;
  clients: number;
  queueLimit: number;
  confirmS: number;
  followS: number;
  json: boolean;
}

function parse(argv: readonly string[]): Options {
  const o: Options = {
    messages: 1000,
    clients: 50,
    queueLimit: 10,
    confirmS: 30,
    followS: 120,
    json: false,
  };
  for (const { flag, value } of cliFlags(argv)) {
    if (flag === '--messages') o.messages = intFlag(flag, value(), 1);
    else if (flag === '--clients') o.clients = intFlag(flag, value(), 1);
    else if (flag === '--queue-limit') o.queueLimit = intFlag(flag, value(), 0);
    else if (flag === '--confirm-s') o.confirmS = intFlag(flag, value(), 1);
    else if (flag === '--follow-s') o.followS = intFlag(flag, value(), 0);
    else if (flag === '--json') o.json = true;
    else throw new Error(`unknown flag ${flag}`);
  }
  return o;
}

/** The agent's model: a short text reply to every request; remembers the last request's texts. */
async function startChatModel() {
  let n = 0;
  let last = '';
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      n += 1;
      const msgs =
        (JSON.parse(body || '{}') as { messages?: Array<{ role: string; content?: unknown }> }).messages ??
        [];
      last = msgs
        .filter((m) => m.role === 'user' || m.role === 'tool')
        .map((m) => (typeof m.content === 'string' ? m.content : ''))
        .join('\n');
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: `chatcmpl-${n}`,
          object: 'chat.completion',
          created: 1_700_000_000 + n,
          model: 'gpt-4o-mini',
          choices: [
            {
              index: 0,
              message: { role: 'assistant', content: `Noted (${n}). What else?` },
              finish_reason: 'stop',
              logprobs: null,
            },
          ],
          usage: { prompt_tokens: 20, completion_tokens: 8, total_tokens: 28 },
        }),
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests: () => n,
    lastText: () => last,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main(): Promise<void> {
  const o = parse(process.argv.slice(2));
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const log = (m: string) => (o.json ? process.stderr : process.stdout).write(`${m}\n`);
  const model = await startChatModel();
  process.env.OPENAI_BASE_URL = model.baseURL;
  process.env.OPENAI_API_KEY = 'dummy';
  process.env.AGENT_CHECKPOINT_KEY ??= randomBytes(32).toString('base64');
  const server = await startThrowawayDevServer({ dynamicConfig: FAST_DISPATCH_DYNAMIC_CONFIG });
  const dir = mkdtempSync(join(tmpdir(), 'alg-bench-burst-'));
  const dbUrl = `sqlite:${join(dir, 'agent.db')}`;
  // Workers and the people's clients share one fresh key ring, as a deployment's do.
  const env = {
    ...process.env,
    TEMPORAL_ADDRESS: server.address,
    TEMPORAL_NAMESPACE: server.namespace,
    AGENT_CODEC_KEYS: `bench:${randomBytes(32).toString('base64')}`,
  };
  const deps = await openDemoWorkerDeps({ ledgerUrl: dbUrl, worldUrl: dbUrl, configPath: null });
  const native = await NativeConnection.connect({ address: server.address });
  const taskQueue = `bench-burst-${randomUUID()}`;
  const worker = await createAgentWorker({
    dataConverter: dataConverterOf(loadPayloadCodec(env)),
    connection: native,
    namespace: server.namespace,
    taskQueue,
    deps,
    workflowBundle: await quietWorkflowBundle(),
  });
  const running = worker.run();
  const conns: Connected[] = [];
  let failed = false;
  try {
    for (let i = 0; i < o.clients; i++) conns.push(await connectClient(env));
    const client = conns[0]!.client;
    const input: RunInput = {
      goal: 'Talk with the person.',
      planner: { kind: 'openai', model: 'gpt-4o-mini', maxTokens: 256 },
      conversation: { queueLimit: o.queueLimit },
      guard: { maxTokens: 1e12, maxCostUsd: 1e9 },
    };
    const workflowId = `bench-burst-${randomUUID()}`;
    const handle = await client.workflow.start<typeof agentRun>('agentRun', {
      taskQueue,
      workflowId,
      args: [input],
    });
    // The agent's first reply: it waits for its person.
    for (;;) {
      const v = await readConversation(client, workflowId);
      if (v.waiting) break;
      await sleep(50);
    }
    log(`sending ${o.messages} messages at once from ${o.clients} clients …`);
    const { figures, outcomes, errors } = await burst(
      conns.map((c) => c.client),
      workflowId,
      o.messages,
      'b',
      o.confirmS * 1000,
    );
    const first = { ...figures };
    // The people follow the hint: busy ones are sent again with the same id after retryAfterMs.
    const t0 = Date.now();
    // Messages some answer said the server may have taken (a try ran out of time).
    const MAYBE = /may have been taken/;
    const everMaybe = new Set(outcomes.flatMap((x, i) => (x && MAYBE.test(x.reason) ? [i] : [])));
    const followed = await followHints(
      conns.map((c) => c.client),
      workflowId,
      'b',
      outcomes,
      Date.now() + o.followS * 1000,
      (i, x) => {
        if (MAYBE.test(x.reason)) everMaybe.add(i);
      },
    );
    const followSeconds = Math.round((Date.now() - t0) / 1000);
    const accepted = outcomes.filter((x) => x?.accepted);
    const seqs = new Set(accepted.map((x) => x!.seq));
    // Settle: the agent waits for its person again with nothing queued.
    const settleBy = Date.now() + 120_000;
    let view = await readConversation(client, workflowId, { after: Number.MAX_SAFE_INTEGER });
    while (!(view.waiting && view.queued === 0) && Date.now() < settleBy) {
      await sleep(200);
      view = await readConversation(client, workflowId, { after: Number.MAX_SAFE_INTEGER });
    }
    await sleep(500);
    // The same ids again: their first answers, nothing taken twice.
    const again = await Promise.all(
      accepted.slice(0, 20).map((x) => sendMessage(client, workflowId, 'again', { messageId: x!.messageId })),
    );
    const seen = timesSeen(outcomes, 'b', model.lastText());
    const text = model.lastText();
    const readIt = (i: number) => new RegExp(`burst-b-${i}(?!\\d)`).test(text);
    // A message refused every time with "not taken" (never a "may have been taken") was not taken.
    const notApplied = outcomes.flatMap((x, i) => (x && !x.accepted && !everMaybe.has(i) ? [i] : []));
    const maybeTaken = outcomes.filter((x, i) => x && !x.accepted && everMaybe.has(i));
    const after = await readConversation(client, workflowId, { after: Number.MAX_SAFE_INTEGER });
    const checks = {
      every_message_answered:
        figures.threw === 0 &&
        figures.unconfirmed === 0 &&
        figures.withoutReason === 0 &&
        outcomes.every((x) => x !== null && x.reason.trim() !== '' && x.action !== 'unconfirmed'),
      none_applied_twice: seqs.size === accepted.length && again.every((a, k) => a.seq === accepted[k]!.seq),
      run_took_the_accepted_and_at_most_the_maybe_taken:
        after.received >= accepted.length && after.received <= accepted.length + maybeTaken.length,
      each_accepted_read_once: seen.size === accepted.length && [...seen.values()].every((n) => n === 1),
      none_said_not_applied_was_read: notApplied.filter(readIt).length === 0,
    };
    failed = Object.values(checks).some((v) => !v);
    const count = (f: (x: NonNullable<(typeof outcomes)[number]>) => boolean) =>
      outcomes.filter((x) => x !== null && f(x)).length;
    const out = {
      first_answers: first,
      follow_rounds: followed.rounds,
      follow_seconds: followSeconds,
      still_busy: followed.stillBusy,
      final_answer: count((x) => x.action === 'answer'),
      final_queued: count((x) => x.action === 'queued'),
      final_refused_queue_full: count((x) => x.action === 'refused' && /the queue limit is/.test(x.reason)),
      final_refused_other: count(
        (x) => x.action === 'refused' && x.retryAfterMs === undefined && !/the queue limit is/.test(x.reason),
      ),
      accepted: accepted.length,
      model_requests: model.requests(),
      busy_reason_example: outcomes.find((x) => x?.retryAfterMs !== undefined)?.reason ?? null,
      thrown_example: errors[0] ?? null,
      checks,
    };
    if (o.json) process.stdout.write(`${JSON.stringify(out)}\n`);
    else for (const [k, v] of Object.entries(out)) log(`${k.padEnd(24)} ${JSON.stringify(v)}`);
    await handle.terminate('bench over');
  } finally {
    await Promise.all(conns.map((c) => c.close()));
    worker.shutdown();
    await running.catch(() => undefined);
    await deps.close();
    await native.close();
    await server.stop();
    await model.close();
    rmSync(dir, { recursive: true, force: true });
  }
  if (failed) process.exitCode = 1;
}

main().catch((err: unknown) => {
  process.stderr.write(
    `bench:burst failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  process.exit(1);
});
