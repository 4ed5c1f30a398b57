/**
 * A local OpenAI-compatible model server (`POST /v1/chat/completions`, non-streaming, tools) on
 * 127.0.0.1 and a free port, answered by a scripted "model" that talks to a person:
 *  1. nothing asked yet → `ask_human {question: QUESTION}`;
 *  2. the person's answer (the `ask_human` call's result) is the customer id and
 *     `update_address` has not succeeded → `update_address {customer_id, address: ADDRESS}`;
 *  3. the write succeeded and no confirmation asked → a text reply (CONFIRM): the turn goes to
 *     the person;
 *  4. the person's last message is "yes" → `complete_task {summary}`; anything else → asks again.
 * Every request is recorded (what it offered, what the reply did), so the example can check the
 * model saw exactly the turns the conversation needed.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

type Json = Record<string, unknown>;

export const QUESTION = 'What is your customer id?';
export const ADDRESS = '1 Main St, Springfield';
export const CONFIRM = `I changed the address to ${ADDRESS}. Is that all? (yes/no)`;

export interface SeenRequest {
  readonly tools: readonly string[];
  /** The tool the reply called, or `text` for a text reply. */
  readonly did: string;
}

export interface ModelServer {
  readonly baseURL: string;
  readonly requests: readonly SeenRequest[];
  close(): Promise<void>;
}

const parse = (text: unknown): unknown => {
  try {
    return typeof text === 'string' ? (JSON.parse(text) as unknown) : undefined;
  } catch {
    return undefined;
  }
};

/** The answer inside an `ask_human` result, wherever the planner put it. */
function answerOf(content: unknown): string | null {
  const v = parse(content) as Json | undefined;
  const data = (v?.data as Json | undefined) ?? v;
  if (typeof data?.answer === 'string') return data.answer;
  return typeof content === 'string' && content.length > 0 && !v ? content : null;
}

function decide(messages: readonly Json[]): { tool: string; args: Json } | string {
  const calls = new Map<string, string>(); // tool_call_id → tool name
  let answer: string | null = null;
  let updated = false;
  let confirmAsked = false;
  let lastUser: string | null = null;
  for (const m of messages) {
    if (m.role === 'assistant') {
      for (const tc of (m.tool_calls as Json[] | undefined) ?? [])
        calls.set(String(tc.id), String((tc.function as Json).name));
      if (typeof m.content === 'string' && m.content === CONFIRM) confirmAsked = true;
    } else if (m.role === 'tool') {
      const name = calls.get(String(m.tool_call_id));
      if (name === 'ask_human') answer = answerOf(m.content) ?? answer;
      if (name === 'update_address' && (parse(m.content) as Json | undefined)?.kind === 'SUCCESS')
        updated = true;
    } else if (m.role === 'user') {
      lastUser = typeof m.content === 'string' ? m.content : JSON.stringify(m.content);
    }
  }
  if (answer === null) return { tool: 'ask_human', args: { question: QUESTION } };
  if (!updated) return { tool: 'update_address', args: { customer_id: answer.trim(), address: ADDRESS } };
  if (confirmAsked && lastUser !== null && /^\s*yes\b/i.test(lastUser))
    return { tool: 'complete_task', args: { summary: `address of ${answer.trim()} changed` } };
  return CONFIRM;
}

export async function startModelServer(): Promise<ModelServer> {
  const requests: SeenRequest[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = parse(Buffer.concat(chunks).toString('utf8')) as Json | undefined;
      if (req.method !== 'POST' || !req.url?.startsWith('/v1/chat/completions') || !body) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: 'no such route', type: 'not_found' } }));
        return;
      }
      const tools = ((body.tools as Json[] | undefined) ?? []).map((t) => String((t.function as Json).name));
      const next = decide(body.messages as Json[]);
      requests.push({ tools, did: typeof next === 'string' ? 'text' : next.tool });
      const index = requests.length;
      const toolCalls =
        typeof next === 'string'
          ? undefined
          : [
              {
                id: `call_${index}`,
                type: 'function',
                function: { name: next.tool, arguments: JSON.stringify(next.args) },
              },
            ];
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: `chatcmpl-conv-${index}`,
          object: 'chat.completion',
          created: 1_700_000_000 + index,
          model: body.model,
          choices: [
            {
              index: 0,
              message: {
                role: 'assistant',
                content: typeof next === 'string' ? next : null,
                refusal: null,
                ...(toolCalls ? { tool_calls: toolCalls } : {}),
              },
              logprobs: null,
              finish_reason: toolCalls ? 'tool_calls' : 'stop',
            },
          ],
          usage: { prompt_tokens: 100, completion_tokens: 12, total_tokens: 112 },
        }),
      );
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
