/**
 * A local OpenAI-compatible server (`POST /v1/chat/completions`) whose model files a ticket,
 * re-sends the same write, then repeats one search (or, for a `[hold]` prompt, searches twice in
 * one step). Its reply is a function of the request
 * (how many assistant turns it already holds), so a retried model call gets the same answer.
 */
import { createServer, type Server } from 'node:http';

type Call = { name: string; args: Record<string, unknown> };

/** The triage run: each turn one call (null: the final text). */
const SCRIPT: Array<Call[] | null> = [
  [{ name: 'file_ticket', args: { title: 'disk full on db-1' } }],
  [{ name: 'file_ticket', args: { title: 'disk full on db-1' } }],
  [{ name: 'search_tickets', args: { query: 'disk full' } }],
  [{ name: 'search_tickets', args: { query: 'disk full' } }],
  [{ name: 'search_tickets', args: { query: 'disk full' } }],
  null,
];

/**
 * A run whose prompt starts with `[hold]`: one step with two searches, the first held by the
 * worker until the example lets it go (an operator stops the run meanwhile), then the final text.
 */
const HOLD_SCRIPT: Array<Call[] | null> = [
  [
    { name: 'search_tickets', args: { query: 'hold:db-2' } },
    { name: 'search_tickets', args: { query: 'db-3' } },
  ],
  null,
];

export interface ModelServer {
  readonly baseURL: string;
  readonly requests: () => number;
  close(): Promise<void>;
}

export async function startModelServer(): Promise<ModelServer> {
  let requests = 0;
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
        res.writeHead(404).end();
        return;
      }
      requests += 1;
      const { messages, model } = JSON.parse(body) as {
        messages: Array<{ role: string; content?: unknown }>;
        model: string;
      };
      const turn = messages.filter((m) => m.role === 'assistant').length;
      const first = messages.find((m) => m.role === 'user')?.content;
      const script = JSON.stringify(first ?? '').includes('[hold]') ? HOLD_SCRIPT : SCRIPT;
      const step = script[Math.min(turn, script.length - 1)];
      const message = step
        ? {
            role: 'assistant',
            content: null,
            tool_calls: step.map((c, i) => ({
              id: `call_${turn}_${i}`,
              type: 'function',
              function: { name: c.name, arguments: JSON.stringify(c.args) },
            })),
          }
        : { role: 'assistant', content: script === HOLD_SCRIPT ? 'Looked.' : 'Filed the ticket.' };
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          id: `chatcmpl-${turn}`,
          object: 'chat.completion',
          created: 1_700_000_000 + turn,
          model,
          choices: [{ index: 0, message, finish_reason: step ? 'tool_calls' : 'stop' }],
          usage: { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110 },
        }),
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests: () => requests,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
