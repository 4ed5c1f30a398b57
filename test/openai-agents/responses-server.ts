/**
 * A local server speaking the OpenAI Responses API (`POST /v1/responses`, non-streaming), what
 * the OpenAI Agents SDK's default provider calls, with a scripted model. Its reply is a function
 * of the request (how many function calls the conversation already holds), so a retried model
 * call gets the same answer.
 */
import { createServer, type Server } from 'node:http';

/** One scripted reply: a function call (its call id default `call_<turn>`), or a final text. */
export type ResponsesStep =
  | { readonly call: string; readonly args: Record<string, unknown>; readonly callId?: string }
  | { readonly text: string };

export interface ResponsesServer {
  readonly baseURL: string;
  /** The request bodies, in order. */
  readonly requests: () => ReadonlyArray<{ input: Array<Record<string, unknown>> }>;
  close(): Promise<void>;
}

/** Usage of every reply: 100 in, 10 out. */
export const USAGE = { input_tokens: 100, output_tokens: 10, total_tokens: 110 };

export async function startResponsesServer(script: readonly ResponsesStep[]): Promise<ResponsesServer> {
  const requests: Array<{ input: Array<Record<string, unknown>> }> = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/responses') {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
        return;
      }
      const request = JSON.parse(body) as { input: unknown; model: string };
      const input = Array.isArray(request.input) ? (request.input as Array<Record<string, unknown>>) : [];
      requests.push({ input });
      const turn = input.filter((i) => i.type === 'function_call').length;
      const step = script[Math.min(turn, script.length - 1)]!;
      const output =
        'call' in step
          ? [
              {
                type: 'function_call',
                id: `fc_${turn}`,
                call_id: step.callId ?? `call_${turn}`,
                name: step.call,
                arguments: JSON.stringify(step.args),
                status: 'completed',
              },
            ]
          : [
              {
                type: 'message',
                id: `msg_${turn}`,
                role: 'assistant',
                status: 'completed',
                content: [{ type: 'output_text', text: step.text, annotations: [] }],
              },
            ];
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          id: `resp_${requests.length}`,
          object: 'response',
          created_at: 1_700_000_000 + turn,
          status: 'completed',
          model: request.model,
          output,
          usage: {
            ...USAGE,
            input_tokens_details: { cached_tokens: 0 },
            output_tokens_details: { reasoning_tokens: 0 },
          },
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
