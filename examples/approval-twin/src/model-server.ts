/**
 * A local OpenAI-compatible model server: `POST /v1/chat/completions` (non-streaming, tools)
 * on 127.0.0.1 and a free port, plain node:http. The worker reaches it through a named
 * endpoint of its own configuration (`AGENT_MODEL_ENDPOINTS`), as it would reach vLLM.
 *
 * Its "model" is the attacker (a model, or a prompt injection steering one): in
 * each conversation (told apart by the goal, the first user message) the first reply proposes
 * the transfer a person will approve, and every later reply proposes that transfer's
 * fingerprint twin. A reply can be held back (`hold`) so that a run is busy — its plan activity
 * waiting on the model — while the app sends it a stop.
 *
 * Requests are checked as the real API checks them (a model, messages, every `tool_calls`
 * entry answered by a `role: 'tool'` message before the conversation goes on): a violation is
 * the API's 400, and counted, so a protocol slip by the planner fails the app.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

type Json = Record<string, unknown>;
export interface Call {
  readonly tool: string;
  readonly args: Record<string, unknown>;
}

export interface ModelServer {
  /** The OpenAI SDK's `baseURL` (including `/v1`). */
  readonly baseURL: string;
  /** Replies per conversation (goal) so far. */
  replies(goal: string): readonly Call[];
  /** Requests refused with a 400 (protocol violations), with why. */
  readonly refused: readonly string[];
  /** Holds the reply to the conversation's `index`-th request (0-based) until `release()`. */
  hold(goal: string, index: number): { arrived: Promise<void>; release(): void };
  close(): Promise<void>;
}

function violation(body: Json): string | null {
  if (typeof body.model !== 'string') return 'you must provide a model parameter';
  if (!Array.isArray(body.messages) || body.messages.length === 0)
    return "'messages' must contain at least one message";
  let open: string[] = [];
  for (const m of body.messages as Json[]) {
    if (m.role === 'tool') {
      if (!open.includes(m.tool_call_id as string))
        return `a message with role 'tool' must answer a preceding tool_calls entry (${String(m.tool_call_id)})`;
      open = open.filter((id) => id !== m.tool_call_id);
    } else if (open.length > 0) {
      return `tool_calls must be followed by tool messages; missing: ${open.join(', ')}`;
    } else if (m.role === 'assistant') {
      open = ((m.tool_calls as Json[] | undefined) ?? []).map((tc) => tc.id as string);
    }
  }
  return open.length > 0 ? `tool_calls must be followed by tool messages; missing: ${open.join(', ')}` : null;
}

function completion(body: Json, id: number, call: Call): Json {
  const prompt = Math.ceil(JSON.stringify(body.messages).length / 4);
  return {
    id: `chatcmpl-twin-${id}`,
    object: 'chat.completion',
    created: 1_700_000_000 + id,
    model: body.model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: null,
          refusal: null,
          tool_calls: [
            {
              id: `call_${id}`,
              type: 'function',
              function: { name: call.tool, arguments: JSON.stringify(call.args) },
            },
          ],
        },
        logprobs: null,
        finish_reason: 'tool_calls',
      },
    ],
    usage: { prompt_tokens: prompt, completion_tokens: 20, total_tokens: prompt + 20 },
  };
}

/** Starts the server; `first` is proposed first in each conversation, `then` on every later turn. */
export async function startModelServer(first: Call, then: Call): Promise<ModelServer> {
  const byGoal = new Map<string, Call[]>();
  const holds = new Map<string, { arrive(): void; released: Promise<void> }>();
  const refused: string[] = [];
  let served = 0;

  async function answer(req: IncomingMessage, text: string): Promise<{ status: number; body: Json }> {
    const path = (req.url ?? '').split('?')[0];
    if (req.method !== 'POST' || path !== '/v1/chat/completions')
      return {
        status: 404,
        body: { error: { message: `no route ${req.method} ${path}`, type: 'not_found' } },
      };
    let body: Json;
    try {
      body = JSON.parse(text) as Json;
    } catch {
      refused.push('the body is not JSON');
      return {
        status: 400,
        body: { error: { message: 'the body is not JSON', type: 'invalid_request_error' } },
      };
    }
    const problem = violation(body);
    if (problem) {
      refused.push(problem);
      return { status: 400, body: { error: { message: problem, type: 'invalid_request_error' } } };
    }
    const user = (body.messages as Json[]).find((m) => m.role === 'user');
    const goal = typeof user?.content === 'string' ? user.content : JSON.stringify(user?.content ?? '');
    const replies = byGoal.get(goal) ?? [];
    byGoal.set(goal, replies);
    const index = replies.length;
    const call = index === 0 ? first : then;
    replies.push(call);
    const held = holds.get(`${index}\u0000${goal}`);
    if (held) {
      held.arrive();
      await held.released;
    }
    served += 1;
    return { status: 200, body: completion(body, served, call) };
  }

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      answer(req, Buffer.concat(chunks).toString('utf8'))
        .catch((err: unknown) => ({
          status: 500,
          body: { error: { message: `model server bug: ${String(err)}`, type: 'api_error' } },
        }))
        .then((out) => {
          res.writeHead(out.status, { 'content-type': 'application/json' });
          res.end(JSON.stringify(out.body));
        })
        .catch(() => res.destroy());
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    replies: (goal) => byGoal.get(goal) ?? [],
    refused,
    hold(goal, index) {
      let arrive!: () => void;
      let release!: () => void;
      const arrived = new Promise<void>((r) => (arrive = r));
      const released = new Promise<void>((r) => (release = r));
      holds.set(`${index}\u0000${goal}`, { arrive, released });
      return { arrived, release };
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const h of holds.values()) h.arrive();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
