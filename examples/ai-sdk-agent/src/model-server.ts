/**
 * A local OpenAI-compatible server (`POST /v1/chat/completions`) whose model files a ticket,
 * re-sends the same write, then repeats one search. Its reply is a function of the request
 * (how many assistant turns it already holds), so a retried model call gets the same answer.
 */
import { createServer, type Server } from 'node:http';

const SCRIPT: Array<{ name: string; args: Record<string, unknown> } | null> = [
  { name: 'file_ticket', args: { title: 'disk full on db-1' } },
  { name: 'file_ticket', args: { title: 'disk full on db-1' } },
  { name: 'search_tickets', args: { query: 'disk full' } },
  { name: 'search_tickets', args: { query: 'disk full' } },
  { name: 'search_tickets', args: { query: 'disk full' } },
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
      const { messages, model } = JSON.parse(body) as { messages: Array<{ role: string }>; model: string };
      const turn = messages.filter((m) => m.role === 'assistant').length;
      const step = SCRIPT[Math.min(turn, SCRIPT.length - 1)];
      const message = step
        ? {
            role: 'assistant',
            content: null,
            tool_calls: [
              {
                id: `call_${turn}`,
                type: 'function',
                function: { name: step.name, arguments: JSON.stringify(step.args) },
              },
            ],
          }
        : { role: 'assistant', content: 'Filed the ticket.' };
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
