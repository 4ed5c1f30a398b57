/**
 * A local OpenAI-compatible model server for run (e): `POST /v1/chat/completions`
 * (non-streaming, tools) on 127.0.0.1, a free port, answered by a deterministic "model"
 * instead of a paid one. The worker reaches it through a named endpoint of its own
 * configuration (`AGENT_MODEL_ENDPOINTS`), as it would reach vLLM or Ollama.
 *
 * The model triages the disk incident with the tools it is offered, one call per reply,
 * deciding from the tool results already in the conversation:
 *  1. no successful `search_tickets` yet → `search_tickets {query: 'disk'}`;
 *  2. the search did not find INC-7 and no `file_ticket` succeeded → `file_ticket {id: 'INC-7', title: 'disk full'}`;
 *  3. then → `complete_task {summary}` (the worker's built-in finishing tool) naming what it
 *     filed and the other disk tickets it saw;
 *  4. after that (never reached: `complete_task` ends the run) → a text answer.
 * A tool it needs but is not offered is a text answer saying so (the run finishes without it).
 * The request is checked as the real API checks it (a model, messages, every `tool_calls`
 * entry answered by a `role: 'tool'` message): a violation is the API's 400.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

type Json = Record<string, unknown>;

/** What the server saw of one request. */
export interface SeenRequest {
  readonly status: number;
  /** The tool names the request offered the model. */
  readonly tools: readonly string[];
  /** The tool the reply called, or null for a text answer or an error. */
  readonly called: string | null;
  /** The request's `authorization` header (the SDK sends `Bearer no-api-key` when the endpoint has no key). */
  readonly auth: string | null;
  /** The error the request was refused with, if it was. */
  readonly error?: string;
}

export interface ModelServer {
  /** The OpenAI SDK's `baseURL` (including `/v1`). */
  readonly baseURL: string;
  /** The model requests so far (POSTs to /v1/chat/completions). */
  readonly requests: readonly SeenRequest[];
  close(): Promise<void>;
}

/** The summary the model closes the triage with. */
export function triageSummary(filed: string | null, related: readonly string[]): string {
  const others = related.length > 0 ? `; related: ${related.join(', ')}` : '';
  return `${filed ? `filed ${filed}` : 'INC-7 already open'} (disk full)${others}`;
}

interface Call {
  readonly name: string;
  readonly args: unknown;
  /** The tool result (the planner's JSON text, parsed), or undefined while unanswered. */
  result?: Json;
}

/** The protocol the real API enforces: the violation, or null. */
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

const parse = (text: unknown): unknown => {
  try {
    return typeof text === 'string' ? (JSON.parse(text) as unknown) : undefined;
  } catch {
    return undefined;
  }
};

/** The conversation's tool calls in order, each with its result once answered. */
function callsOf(messages: readonly Json[]): Call[] {
  const calls: Call[] = [];
  const byId = new Map<string, Call>();
  for (const m of messages) {
    if (m.role === 'assistant') {
      for (const tc of (m.tool_calls as Json[] | undefined) ?? []) {
        const fn = tc.function as Json;
        const call: Call = { name: String(fn.name), args: parse(fn.arguments) };
        calls.push(call);
        byId.set(String(tc.id), call);
      }
    } else if (m.role === 'tool') {
      const call = byId.get(String(m.tool_call_id));
      if (call) call.result = parse(m.content) as Json | undefined;
    }
  }
  return calls;
}

/** The model: the next call (tool and args), or a text answer. */
function decide(calls: readonly Call[], offered: readonly string[]): { tool: string; args: Json } | string {
  const ok = (name: string) => calls.filter((c) => c.name === name && c.result?.kind === 'SUCCESS');
  const [search] = ok('search_tickets');
  const [filed] = ok('file_ticket');
  const found = Array.isArray(search?.result?.data)
    ? (search.result.data as Json[]).map((row) => String(row.id))
    : [];
  let next: { tool: string; args: Json };
  if (!search) next = { tool: 'search_tickets', args: { query: 'disk' } };
  else if (!found.includes('INC-7') && !filed)
    next = { tool: 'file_ticket', args: { id: 'INC-7', title: 'disk full' } };
  else if (ok('complete_task').length === 0) {
    const related = found.filter((id) => id !== 'INC-7');
    next = { tool: 'complete_task', args: { summary: triageSummary(filed ? 'INC-7' : null, related) } };
  } else return 'Triage closed.';
  return offered.includes(next.tool) ? next : `I cannot triage: the tool ${next.tool} is not offered.`;
}

function reply(body: Json, index: number, seen: (called: string | null, tools: string[]) => void): Json {
  const messages = body.messages as Json[];
  const offered = ((body.tools as Json[] | undefined) ?? []).map((t) => String((t.function as Json).name));
  const calls = callsOf(messages);
  const next = decide(calls, offered);
  const toolCalls =
    typeof next === 'string'
      ? []
      : [
          {
            id: `call_${calls.length + 1}`,
            type: 'function',
            function: { name: next.tool, arguments: JSON.stringify(next.args) },
          },
        ];
  seen(typeof next === 'string' ? null : next.tool, offered);
  const prompt = Math.ceil(JSON.stringify(messages).length / 4);
  const completion = 12;
  return {
    id: `chatcmpl-own-${index}`,
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
          ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
        },
        logprobs: null,
        finish_reason: toolCalls.length > 0 ? 'tool_calls' : 'stop',
      },
    ],
    usage: {
      prompt_tokens: prompt,
      completion_tokens: completion,
      total_tokens: prompt + completion,
      prompt_tokens_details: { cached_tokens: 0 },
    },
  };
}

/** Starts the server on 127.0.0.1 and a free port; resolves once it listens. */
export async function startModelServer(): Promise<ModelServer> {
  const requests: SeenRequest[] = [];
  const answer = (req: IncomingMessage, text: string): { status: number; body: unknown } => {
    const path = (req.url ?? '').split('?')[0];
    if (req.method === 'GET' && (path === '/v1' || path === '/v1/'))
      return { status: 200, body: { ok: true } };
    if (req.method !== 'POST' || path !== '/v1/chat/completions')
      return {
        status: 404,
        body: { error: { message: `no route ${req.method} ${path}`, type: 'not_found' } },
      };
    const auth = req.headers.authorization ?? null;
    const body = parse(text) as Json | undefined;
    const problem = body && typeof body === 'object' ? violation(body) : 'the body is not a JSON object';
    if (problem || !body) {
      requests.push({ status: 400, tools: [], called: null, auth, error: problem ?? 'no body' });
      return {
        status: 400,
        body: { error: { message: problem, type: 'invalid_request_error', param: null, code: null } },
      };
    }
    const index = requests.length + 1;
    return {
      status: 200,
      body: reply(body, index, (called, tools) => requests.push({ status: 200, tools, called, auth })),
    };
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      let out: { status: number; body: unknown };
      try {
        out = answer(req, Buffer.concat(chunks).toString('utf8'));
      } catch (err) {
        out = {
          status: 500,
          body: { error: { message: `model server bug: ${String(err)}`, type: 'api_error' } },
        };
      }
      res.writeHead(out.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(out.body));
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
