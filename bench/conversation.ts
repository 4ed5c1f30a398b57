/**
 * `npm run bench:conversation`: one long conversation, end to end.
 *
 * In-process and throwaway like bench:long: an in-memory dev server with fast dispatch, one
 * worker on a temp SQLite file, and a local OpenAI-compatible server that answers every request
 * with a short text reply (the agent talking to its person) and, once the person says `FINISH`,
 * with `complete_task`. ONE conversation run; the bench is its person: for turns 1 … N it waits
 * for the agent's reply (the `conversation` query) and sends the next message (the `message`
 * update), then `FINISH`. Measured after the result:
 *  - terminal state, turns and messages taken (the `conversation` query), model requests;
 *  - runs in the continue-as-new chain;
 *  - history bytes per turn over the whole chain (a turn = the events up to and including the
 *    acceptance of its message, bench/long-history.ts `isMessageAccepted`), over the first and the
 *    last 100 turns, and their ratio (target ≤ 1.1×); the same without the continue-as-new
 *    boundary events;
 *  - seconds per turn around turn 100 and around the last turn.
 *
 * Flags: --turns N (1000)  --max-history N (continue-as-new after N events; default the run's 10,000)
 *        --timeout-s N (1800)  --json
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { quietWorkflowBundle } from '../scripts/workflow-bundle';
import type { RunInput, RunResult } from '../common/contracts';
import type { agentRun } from '../workflows';
import { readConversation, sendMessage } from '../client/conversation';
import {
  bytesOfTurns,
  CONTINUE_AS_NEW_KINDS,
  isMessageAccepted,
  kindBytesOfTurns,
  measureChain,
  secondsPerTurnAround,
} from './long-history';
import { cliFlags, intFlag } from '../scripts/cli-args';
import { startLongBenchStack } from './long-ops';
import { agentRunResult } from '../client/runs';

interface Options {
  turns: number;
  maxHistory: number | null;
  timeoutS: number;
  json: boolean;
}

function parse(argv: readonly string[]): Options {
  const o: Options = { turns: 1000, maxHistory: null, timeoutS: 1800, json: false };
  for (const { flag, value } of cliFlags(argv)) {
    if (flag === '--turns') o.turns = intFlag(flag, value(), 1);
    else if (flag === '--max-history') o.maxHistory = intFlag(flag, value(), 100);
    else if (flag === '--timeout-s') o.timeoutS = intFlag(flag, value(), 1);
    else if (flag === '--json') o.json = true;
    else throw new Error(`unknown flag ${flag}`);
  }
  return o;
}

/** The agent's model: a short text reply to every message; `complete_task` after FINISH. */
async function startChatModel(): Promise<{
  baseURL: string;
  requests: () => number;
  close(): Promise<void>;
}> {
  let n = 0;
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      n += 1;
      const msgs =
        (JSON.parse(body || '{}') as { messages?: Array<{ role: string; content?: unknown }> }).messages ??
        [];
      const last = msgs[msgs.length - 1];
      const said = typeof last?.content === 'string' ? last.content : '';
      const finish = last?.role === 'user' && said.includes('FINISH');
      const message = finish
        ? {
            role: 'assistant',
            content: null,
            tool_calls: [
              {
                id: `call_${n}`,
                type: 'function',
                function: { name: 'complete_task', arguments: '{"summary":"talked it through"}' },
              },
            ],
          }
        : { role: 'assistant', content: `Noted (${said.slice(0, 40)}). What else?` };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: `chatcmpl-${n}`,
          object: 'chat.completion',
          created: 1_700_000_000 + n,
          model: 'gpt-4o-mini',
          choices: [{ index: 0, message, finish_reason: finish ? 'tool_calls' : 'stop', logprobs: null }],
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
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main(): Promise<void> {
  const o = parse(process.argv.slice(2));
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const log = (m: string) => (o.json ? process.stderr : process.stdout).write(`${m}\n`);
  const bundle = await quietWorkflowBundle();
  const model = await startChatModel();
  process.env.OPENAI_BASE_URL = model.baseURL;
  process.env.OPENAI_API_KEY = 'dummy';
  const stack = await startLongBenchStack('conversation', bundle);
  try {
    const { client, taskQueue } = stack.bench;
    const input: RunInput = {
      goal: 'Talk with the person until they say they are done, then call complete_task.',
      planner: { kind: 'openai', model: 'gpt-4o-mini', maxTokens: 256 },
      conversation: {},
      guard: { maxTokens: 1e12, maxCostUsd: 1e9 },
      resumeWindowMs: 1000,
      ...(o.maxHistory ? { maxHistoryEvents: o.maxHistory } : {}),
    };
    const workflowId = `bench-conversation-${randomUUID()}`;
    const handle = await client.workflow.start<typeof agentRun>('agentRun', {
      taskQueue,
      workflowId,
      args: [input],
    });
    const started = Date.now();
    const deadline = started + o.timeoutS * 1000;
    let after = 0;
    for (let t = 1; t <= o.turns + 1; t++) {
      // Wait for the agent's reply, then answer it.
      for (;;) {
        const view = await readConversation(client, workflowId, { after });
        const reply = view.entries.find((e) => e.from === 'agent');
        if (reply) break;
        if (!view.open) throw new Error(`the conversation closed at turn ${t}`);
        if (Date.now() > deadline) throw new Error(`timed out waiting for the agent at turn ${t}`);
        await sleep(5);
      }
      const text = t > o.turns ? 'FINISH' : `message ${t}: ${'x'.repeat(60)}`;
      const sent = await sendMessage(client, workflowId, text, { messageId: `bench-${t}` });
      if (!sent.accepted) throw new Error(`message ${t} refused: ${sent.reason}`);
      after = sent.seq!;
      if (t % 100 === 0) log(`  turn ${t} (${Math.round((Date.now() - started) / 1000)} s)`);
    }
    const result: RunResult = await agentRunResult(handle);
    const view = await readConversation(client, workflowId, { after: Number.MAX_SAFE_INTEGER });
    const m = await measureChain(client, workflowId, isMessageAccepted);
    const n = o.turns;
    const w = Math.min(100, Math.floor(n / 2));
    const early = bytesOfTurns(m, 0, w);
    const late = bytesOfTurns(m, n - w, n);
    const without = (from: number, to: number) => {
      const k = kindBytesOfTurns(m, from, to);
      return Object.entries(k).reduce(
        (s, [kind, b]) => (CONTINUE_AS_NEW_KINDS.includes(kind) ? s : s + b),
        0,
      );
    };
    const earlyNo = without(0, w);
    const lateNo = without(n - w, n);
    // The continue-as-new boundaries, spread evenly over every turn (as bench:long --ops does).
    const boundary = (m.bytes - without(0, m.turns + 1)) * (w / Math.max(1, m.turns));
    const out = {
      terminal_state: result.terminal_state,
      reason: result.reason,
      turns: view.turns,
      messages_received: view.received,
      model_requests: model.requests(),
      runs: m.runs,
      continued_after_turns: m.continuedAtTurn,
      history_bytes: m.bytes,
      history_events: m.events,
      bytes_per_turn: Math.round(m.bytes / Math.max(1, m.turns)),
      [`first_${w}_turns_bytes`]: early,
      [`last_${w}_turns_bytes`]: late,
      ratio: +(late / early).toFixed(3),
      ratio_without_boundaries: +(lateNo / earlyNo).toFixed(3),
      ratio_boundaries_spread: +((lateNo + boundary) / (earlyNo + boundary)).toFixed(3),
      s_per_turn_at_100: secondsPerTurnAround(m, Math.min(100, n)),
      s_per_turn_at_last: secondsPerTurnAround(m, n),
      seconds: Math.round((Date.now() - started) / 1000),
    };
    if (o.json) process.stdout.write(`${JSON.stringify(out)}\n`);
    else for (const [k, v] of Object.entries(out)) log(`${k.padEnd(28)} ${JSON.stringify(v)}`);
  } finally {
    await stack.close();
    await model.close();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(
    `bench:conversation: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  process.exitCode = 1;
});
