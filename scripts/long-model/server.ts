/**
 * A long-run model server: a local, deterministic "model" speaking OpenAI Chat Completions
 * (`POST /v1/chat/completions`, non-streaming, tools) AND the Anthropic Messages API
 * (`POST /v1/messages`) on one port, that writes one ~`noteChars` note per turn with the
 * demo tool `write_record` until it has written `turns` notes, then finishes. Used by
 * `npm run bench:long`, by scripts/long-run-check.ts, by test/long/* and by anyone who wants
 * to try a long run without a paid model (docs/long-runs.md).
 *
 *   npm run long-model-server -- --protocol openai --turns 600 --note-chars 3000 --window-chars 300000 --port 0
 *
 * prints the base URL to point the worker at (OpenAI: `OPENAI_BASE_URL=<origin>/v1`;
 * Anthropic: `ANTHROPIC_BASE_URL=<origin>`) on one line and serves until SIGINT/SIGTERM.
 *
 * What one request does:
 *  1. Protocol check, as the real APIs do (test/planners/servers/*): OpenAI — every assistant
 *     `tool_calls` entry answered by a `role: 'tool'` message before the next other message;
 *     Anthropic — roles alternate starting with user, every `tool_use` answered by a
 *     `tool_result` in the very next user message, the `anthropic-version` header present.
 *     A violation (or a body that is not JSON / has no model) is a 400 and counts in
 *     `protocolErrors`.
 *  2. Size = the number of characters (JavaScript string length) of the JSON of the request's
 *     conversation, re-serialised from the parsed body with `JSON.stringify` (no whitespace):
 *     OpenAI `JSON.stringify(body.messages)` (the system prompt is one of the messages);
 *     Anthropic `JSON.stringify(body.system)` (0 when absent) + `JSON.stringify(body.messages)`.
 *     Tool definitions, model name and max-tokens are NOT counted. Above `windowChars` the
 *     request is refused with the provider's own 400 `context_length_exceeded` /
 *     `prompt is too long` error (tokens in the message = ceil(chars / 4)), counted in
 *     `refusedForContext`.
 *  3. Otherwise the reply is a pure function of the request (a retried request gets the same
 *     reply; compaction cannot confuse it): n = the highest note number in the request, found
 *     in its own earlier `write_record` tool calls (args `{"id":"note-<n>"}`) and in ANY text
 *     mentioning `note-<n>` (e.g. a run-state note listing `record:note-12:…` operation keys).
 *     next = n + 1. If next > turns: a final text answer `All <turns> notes written.` (no tool
 *     call). Else exactly one `write_record` call `{"id":"note-<next>","body":<noteChars of
 *     deterministic text>}` with id `call_note_<next>` (`toolu_note_<next>` on Anthropic) and
 *     the text `Writing note-<next>.`. So the goal given to the run must NOT itself contain a
 *     literal `note-<digits>` (say "note-<n> for n = 1 … 600"), or the model starts after it.
 *     Usage: prompt/input tokens = ceil(chars / 4), completion/output = ceil(noteChars / 4).
 *
 * No request body is kept (a 1,000-turn run sends hundreds of MB): {@link LongModelStats}
 * holds counters and one small entry per request.
 *
 * `GET /`, `GET /v1` (the planner's health probe GETs the base URL) answer 200;
 * `GET /stats` answers the stats as JSON.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cliFlags, intFlag } from '../cli-args';
import { anthropicViolation, openaiViolation } from '../../testing/protocol';

/** Options of {@link startLongModelServer}. */
export interface LongModelServerOptions {
  /** Notes to write before the final answer. */
  readonly turns: number;
  /** Characters of each note's body (default 3000). */
  readonly noteChars?: number;
  /** The context window in characters of conversation JSON (default 300000). */
  readonly windowChars?: number;
  /** Port (default 0 = a free one). */
  readonly port?: number;
  /** Bind address (default 127.0.0.1). */
  readonly host?: string;
}

/** One request, compactly. */
export interface LongModelRequest {
  /** Conversation characters (see the module comment), 0 when the body was not JSON. */
  readonly chars: number;
  /** The note this reply wrote; 0 = the final answer; null = refused (context or protocol). */
  readonly note: number | null;
  /** ms since the server started. */
  readonly atMs: number;
  readonly protocol: 'openai' | 'anthropic';
  /** HTTP status of the answer. */
  readonly status: number;
}

/** The server's counters. */
export interface LongModelStats {
  readonly turns: number;
  readonly noteChars: number;
  readonly windowChars: number;
  /** Model requests (POSTs to either model route). */
  readonly requests: number;
  /** Requests answered 200. */
  readonly accepted: number;
  /** Requests refused because the conversation exceeded `windowChars`. */
  readonly refusedForContext: number;
  /** Requests refused for a broken tool protocol or a malformed body. */
  readonly protocolErrors: number;
  /** The last protocol error's message (null when none). */
  readonly lastProtocolError: string | null;
  /** Final answers given (next note > turns). */
  readonly finished: number;
  readonly maxRequestChars: number;
  readonly maxAcceptedRequestChars: number;
  /** The highest note a reply has written so far (0 = none). */
  readonly lastNote: number;
  readonly perRequest: readonly LongModelRequest[];
}

/** A running long-run model server. */
export interface LongModelServer {
  /** `http://host:port`: the Anthropic SDK's `baseURL` (ANTHROPIC_BASE_URL). */
  readonly origin: string;
  /** `origin + '/v1'`: the OpenAI SDK's `baseURL` (OPENAI_BASE_URL). */
  readonly baseURL: string;
  stats(): LongModelStats;
  close(): Promise<void>;
}

type Json = Record<string, unknown>;

interface Reply {
  readonly status: number;
  readonly body: unknown;
}

// ---------------------------------------------------------------- the model
const NOTE_RE = /(?<![A-Za-z0-9_])note-(\d{1,9})(?!\d)/g;

/** The highest `note-<n>` mentioned anywhere in `text` (0 when none). */
export function highestNoteIn(text: string): number {
  let max = 0;
  for (const m of text.matchAll(NOTE_RE)) {
    const n = Number(m[1]);
    if (n > max) max = n;
  }
  return max;
}

function noteOfArgs(args: unknown): number {
  if (!args || typeof args !== 'object') return 0;
  const id = (args as Json).id;
  const m = typeof id === 'string' ? /^note-(\d{1,9})$/.exec(id) : null;
  return m ? Number(m[1]) : 0;
}

const WORDS = [
  'durable',
  'history',
  'ledger',
  'guard',
  'turn',
  'record',
  'workflow',
  'activity',
  'replay',
  'window',
  'context',
  'budget',
  'progress',
  'operation',
  'key',
  'idempotent',
];

/** The deterministic body of note `n`: exactly `chars` characters, no other note's id in it. */
export function noteBody(n: number, chars: number): string {
  let s = `Note ${n} of the long run.`;
  let x = (n * 2654435761) >>> 0;
  while (s.length < chars) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    s += ` ${WORDS[x % WORDS.length]}`;
  }
  return s.slice(0, chars);
}

/** Highest note written by an OpenAI conversation: its own write_record calls, then any text. */
function openaiHighestNote(messages: readonly Json[], text: string): number {
  let max = 0;
  for (const m of messages) {
    if (m.role !== 'assistant' || !Array.isArray(m.tool_calls)) continue;
    for (const tc of m.tool_calls as Json[]) {
      const fn = tc.function as Json | undefined;
      if (fn?.name !== 'write_record' || typeof fn.arguments !== 'string') continue;
      try {
        max = Math.max(max, noteOfArgs(JSON.parse(fn.arguments)));
      } catch {
        // not JSON: the text scan below still sees it
      }
    }
  }
  return Math.max(max, highestNoteIn(text));
}

function anthropicHighestNote(messages: readonly Json[], text: string): number {
  let max = 0;
  for (const m of messages) {
    if (m.role !== 'assistant' || !Array.isArray(m.content)) continue;
    for (const b of m.content as Json[]) {
      if (b.type === 'tool_use' && b.name === 'write_record') max = Math.max(max, noteOfArgs(b.input));
    }
  }
  return Math.max(max, highestNoteIn(text));
}

// ---------------------------------------------------------------- replies
const tokensOf = (chars: number): number => Math.ceil(chars / 4);

function openaiError(status: number, message: string, code: string | null, param: string | null): Reply {
  return { status, body: { error: { message, type: 'invalid_request_error', param, code } } };
}

function anthropicError(status: number, type: string, message: string): Reply {
  return { status, body: { type: 'error', error: { type, message } } };
}

function openaiReply(
  body: Json,
  index: number,
  chars: number,
  note: number | null,
  o: Required<Opts>,
): Reply {
  // The last turn finishes the task with the finishing tool: a text reply is not completion.
  const toolCalls =
    note === null
      ? [
          {
            id: `call_done_${index}`,
            type: 'function',
            function: {
              name: 'complete_task',
              arguments: JSON.stringify({ summary: `All ${o.turns} notes written.` }),
            },
          },
        ]
      : [
          {
            id: `call_note_${note}`,
            type: 'function',
            function: {
              name: 'write_record',
              arguments: JSON.stringify({ id: `note-${note}`, body: noteBody(note, o.noteChars) }),
            },
          },
        ];
  const prompt = tokensOf(chars);
  const completion = note === null ? 8 : tokensOf(o.noteChars);
  return {
    status: 200,
    body: {
      id: `chatcmpl-long-${index}`,
      object: 'chat.completion',
      created: 1_700_000_000 + index,
      model: body.model,
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: note === null ? `All ${o.turns} notes written.` : `Writing note-${note}.`,
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
    },
  };
}

function anthropicReply(
  body: Json,
  index: number,
  chars: number,
  note: number | null,
  o: Required<Opts>,
): Reply {
  const content =
    note === null
      ? [
          { type: 'text', text: `All ${o.turns} notes written.`, citations: null },
          {
            type: 'tool_use',
            id: `toolu_done_${index}`,
            name: 'complete_task',
            input: { summary: `All ${o.turns} notes written.` },
          },
        ]
      : [
          { type: 'text', text: `Writing note-${note}.`, citations: null },
          {
            type: 'tool_use',
            id: `toolu_note_${note}`,
            name: 'write_record',
            input: { id: `note-${note}`, body: noteBody(note, o.noteChars) },
          },
        ];
  return {
    status: 200,
    body: {
      id: `msg_long_${index}`,
      type: 'message',
      role: 'assistant',
      model: body.model,
      content,
      stop_reason: 'tool_use',
      stop_sequence: null,
      usage: {
        input_tokens: tokensOf(chars),
        output_tokens: note === null ? 8 : tokensOf(o.noteChars),
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
        service_tier: 'standard',
      },
    },
  };
}

type Opts = Omit<LongModelServerOptions, 'port' | 'host'>;

/**
 * The goal of a long note-writing run against this server: it names the ids as a pattern,
 * never a literal `note-<digits>` (the model would take that as already written).
 */
export function longRunGoal(turns: number): string {
  return `Write ${turns} notes with write_record, one per turn: ids note-<n> for n = 1 … ${turns}, any body. Then finish with a short summary.`;
}

// ---------------------------------------------------------------- server
/** Starts the server; resolves once it listens. */
export async function startLongModelServer(options: LongModelServerOptions): Promise<LongModelServer> {
  const o: Required<Opts> = {
    turns: options.turns,
    noteChars: options.noteChars ?? 3000,
    windowChars: options.windowChars ?? 300_000,
  };
  for (const [k, v] of Object.entries(o))
    if (!Number.isInteger(v) || v < 1)
      throw new Error(`long-model server: ${k} must be an integer >= 1, got ${v}`);

  const t0 = performance.now();
  const perRequest: LongModelRequest[] = [];
  let requests = 0;
  let accepted = 0;
  let refusedForContext = 0;
  let protocolErrors = 0;
  let lastProtocolError: string | null = null;
  let finished = 0;
  let maxRequestChars = 0;
  let maxAcceptedRequestChars = 0;
  let lastNote = 0;

  const stats = (): LongModelStats => ({
    turns: o.turns,
    noteChars: o.noteChars,
    windowChars: o.windowChars,
    requests,
    accepted,
    refusedForContext,
    protocolErrors,
    lastProtocolError,
    finished,
    maxRequestChars,
    maxAcceptedRequestChars,
    lastNote,
    perRequest: perRequest.slice(),
  });

  function model(protocol: 'openai' | 'anthropic', req: IncomingMessage, text: string): Reply {
    requests += 1;
    const index = requests;
    const record = (chars: number, note: number | null, status: number): void => {
      perRequest.push({ chars, note, atMs: Math.round(performance.now() - t0), protocol, status });
    };
    const protocolError = (message: string): Reply => {
      protocolErrors += 1;
      lastProtocolError = message;
      record(0, null, 400);
      return protocol === 'openai'
        ? openaiError(400, message, null, null)
        : anthropicError(400, 'invalid_request_error', message);
    };
    let body: Json;
    try {
      const parsed: unknown = JSON.parse(text);
      if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
      body = parsed as Json;
    } catch {
      return protocolError(
        protocol === 'openai' ? 'We could not parse the JSON body of your request.' : 'body: invalid JSON',
      );
    }
    if (protocol === 'anthropic' && !req.headers['anthropic-version'])
      return protocolError('anthropic-version: header is required');
    const violation = protocol === 'openai' ? openaiViolation(body) : anthropicViolation(body);
    if (violation) return protocolError(violation);

    const messages = body.messages as Json[];
    const messagesJson = JSON.stringify(messages);
    const systemJson =
      protocol === 'anthropic' && body.system !== undefined ? JSON.stringify(body.system) : '';
    const chars = messagesJson.length + systemJson.length;
    maxRequestChars = Math.max(maxRequestChars, chars);
    if (chars > o.windowChars) {
      refusedForContext += 1;
      record(chars, null, 400);
      return protocol === 'openai'
        ? openaiError(
            400,
            `This model's maximum context length is ${tokensOf(o.windowChars)} tokens. However, your messages resulted in ${tokensOf(chars)} tokens. Please reduce the length of the messages.`,
            'context_length_exceeded',
            'messages',
          )
        : anthropicError(
            400,
            'invalid_request_error',
            `prompt is too long: ${tokensOf(chars)} tokens > ${tokensOf(o.windowChars)} maximum`,
          );
    }
    const scanText = systemJson + messagesJson;
    const highest =
      protocol === 'openai'
        ? openaiHighestNote(messages, scanText)
        : anthropicHighestNote(messages, scanText);
    const next = highest + 1;
    const note = next > o.turns ? null : next;
    accepted += 1;
    maxAcceptedRequestChars = Math.max(maxAcceptedRequestChars, chars);
    if (note === null) finished += 1;
    else lastNote = Math.max(lastNote, note);
    record(chars, note ?? 0, 200);
    return protocol === 'openai'
      ? openaiReply(body, index, chars, note, o)
      : anthropicReply(body, index, chars, note, o);
  }

  function route(req: IncomingMessage, text: string): Reply {
    const path = (req.url ?? '').split('?')[0] ?? '';
    const method = req.method ?? '';
    if (method === 'GET' && (path === '/' || path === '/v1' || path === '/v1/'))
      return { status: 200, body: { ok: true, server: 'long-model', turns: o.turns } };
    if (method === 'GET' && (path === '/stats' || path === '/v1/stats'))
      return { status: 200, body: stats() };
    if (method === 'POST' && path === '/v1/chat/completions') return model('openai', req, text);
    if (method === 'POST' && path === '/v1/messages') return model('anthropic', req, text);
    return {
      status: 404,
      body: { error: { type: 'not_found_error', message: `no route ${method} ${path}` } },
    };
  }

  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      let reply: Reply;
      try {
        reply = route(req, Buffer.concat(chunks).toString('utf8'));
      } catch (err) {
        reply = {
          status: 500,
          body: { error: { type: 'api_error', message: `long-model server bug: ${String(err)}` } },
        };
      }
      res.writeHead(reply.status, {
        'content-type': 'application/json',
        'x-request-id': `req_long_${requests}`,
      });
      res.end(JSON.stringify(reply.body));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const { address, port } = server.address() as AddressInfo;
  const host = address.includes(':') ? `[${address}]` : address;
  const origin = `http://${host}:${port}`;
  let closed: Promise<void> | null = null;
  return {
    origin,
    baseURL: `${origin}/v1`,
    stats,
    close: () =>
      (closed ??= new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      })),
  };
}

// ---------------------------------------------------------------- CLI
function parseCli(argv: readonly string[]): LongModelServerOptions & { protocol: 'openai' | 'anthropic' } {
  const out = {
    protocol: 'openai' as 'openai' | 'anthropic',
    turns: 600,
    noteChars: 3000,
    windowChars: 300_000,
    port: 0,
    host: '127.0.0.1',
  };
  const int = intFlag;
  for (const { flag, value } of cliFlags(argv)) {
    switch (flag) {
      case '--protocol': {
        const v = value();
        if (v !== 'openai' && v !== 'anthropic')
          throw new Error(`--protocol: expected openai or anthropic, got ${v}`);
        out.protocol = v;
        break;
      }
      case '--turns':
        out.turns = int(flag, value(), 1);
        break;
      case '--note-chars':
        out.noteChars = int(flag, value(), 1);
        break;
      case '--window-chars':
        out.windowChars = int(flag, value(), 1);
        break;
      case '--port':
        out.port = int(flag, value(), 0);
        break;
      case '--host':
        out.host = value() ?? '127.0.0.1';
        break;
      case '-h':
      case '--help':
        process.stdout.write(
          'usage: npm run long-model-server -- [--protocol openai|anthropic] [--turns 600] [--note-chars 3000] [--window-chars 300000] [--port 0] [--host 127.0.0.1]\n' +
            'Prints the base URL (OpenAI: OPENAI_BASE_URL, Anthropic: ANTHROPIC_BASE_URL) on one line; GET <origin>/stats for the counters.\n',
        );
        process.exit(0);
        break;
      default:
        throw new Error(`unknown flag ${flag} (try --help)`);
    }
  }
  return out;
}

async function main(): Promise<void> {
  const o = parseCli(process.argv.slice(2));
  const server = await startLongModelServer(o);
  process.stdout.write(`${o.protocol === 'openai' ? server.baseURL : server.origin}\n`);
  process.stderr.write(
    `[long-model] ${o.turns} notes of ${o.noteChars} chars, window ${o.windowChars} chars; stats: GET ${server.origin}/stats; Ctrl-C to stop\n`,
  );
  const shutdown = (signal: NodeJS.Signals): void => {
    const s = server.stats();
    process.stderr.write(
      `[long-model] ${signal}: ${s.requests} requests, ${s.accepted} accepted, ${s.refusedForContext} refused for context, ${s.protocolErrors} protocol errors, last note ${s.lastNote}\n`,
    );
    void server.close().then(() => process.exit(0));
  };
  process.on('SIGINT', shutdown);
  process.on('SIGTERM', shutdown);
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`[long-model] ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(2);
  });
}
