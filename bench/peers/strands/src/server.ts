/**
 * A local model server speaking the OpenAI Responses API (`POST /v1/responses`), streaming
 * (server-sent events) when the request asks for `stream: true`, what the Strands SDK's
 * `OpenAIModel` calls by default (`api: 'responses'`). Its reply is a function of the
 * conversation it is sent (the function calls and outputs already in `input`), so a retried
 * model call gets the same answer.
 */
import { createServer, type Server } from 'node:http';

/** One output item of a scripted reply. */
export type Item =
  | { readonly call: string; readonly args: Record<string, unknown>; readonly callId?: string }
  | { readonly text: string };

export interface Request {
  readonly input: Array<Record<string, unknown>>;
  readonly bytes: number;
  readonly stream: boolean;
}

/** The script: the conversation so far (this request) → the reply's output items. */
export type Script = (req: Request, index: number) => Item[];

export interface ModelServer {
  readonly baseURL: string;
  readonly requests: Request[];
  /** Input tokens the server reported in total (its own count: request bytes / 4). */
  inputTokens(): number;
  close(): Promise<void>;
}

/** Count the function_call items a conversation already holds. */
export const callsIn = (req: Request): number => req.input.filter((i) => i.type === 'function_call').length;

export async function startModelServer(script: Script): Promise<ModelServer> {
  const requests: Request[] = [];
  let inputTokens = 0;
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      if (req.method !== 'POST' || !req.url?.endsWith('/responses')) {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
        return;
      }
      const parsed = JSON.parse(body) as { input: unknown; model: string; stream?: boolean };
      const input = Array.isArray(parsed.input) ? (parsed.input as Array<Record<string, unknown>>) : [];
      const request: Request = { input, bytes: Buffer.byteLength(body), stream: parsed.stream === true };
      requests.push(request);
      const items = script(request, requests.length - 1);
      const n = requests.length;
      const usage = {
        input_tokens: Math.ceil(request.bytes / 4),
        output_tokens: 10,
        total_tokens: Math.ceil(request.bytes / 4) + 10,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens_details: { reasoning_tokens: 0 },
      };
      inputTokens += usage.input_tokens;
      const output = items.map((it, k) =>
        'call' in it
          ? {
              type: 'function_call',
              id: `fc_${n}_${k}`,
              call_id: it.callId ?? `call_${n}_${k}`,
              name: it.call,
              arguments: JSON.stringify(it.args),
              status: 'completed',
            }
          : {
              type: 'message',
              id: `msg_${n}_${k}`,
              role: 'assistant',
              status: 'completed',
              content: [{ type: 'output_text', text: it.text, annotations: [] }],
            },
      );
      const response = {
        id: `resp_${n}`,
        object: 'response',
        created_at: 1_700_000_000 + n,
        status: 'completed',
        model: parsed.model,
        output,
        usage,
      };
      if (!request.stream) {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(response));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      let seq = 0;
      const send = (type: string, data: Record<string, unknown>): void => {
        res.write(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: seq++, ...data })}\n\n`);
      };
      send('response.created', { response: { ...response, status: 'in_progress', output: [] } });
      output.forEach((item, k) => {
        if (item.type === 'function_call') {
          send('response.output_item.added', {
            output_index: k,
            item: { ...item, arguments: '', status: 'in_progress' },
          });
          send('response.function_call_arguments.delta', {
            output_index: k,
            item_id: item.id,
            delta: item.arguments,
          });
          send('response.function_call_arguments.done', {
            output_index: k,
            item_id: item.id,
            arguments: item.arguments,
          });
          send('response.output_item.done', { output_index: k, item });
        } else {
          send('response.output_item.added', { output_index: k, item: { ...item, content: [] } });
          const text = (item.content as Array<{ text: string }>)[0]!.text;
          send('response.output_text.delta', {
            output_index: k,
            item_id: item.id,
            content_index: 0,
            delta: text,
          });
          send('response.output_text.done', { output_index: k, item_id: item.id, content_index: 0, text });
          send('response.output_item.done', { output_index: k, item });
        }
      });
      send('response.completed', { response });
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    inputTokens: () => inputTokens,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
