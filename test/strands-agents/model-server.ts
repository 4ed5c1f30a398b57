/**
 * A local server speaking the OpenAI Responses API (`POST /v1/responses`), streaming
 * (server-sent events) when asked, what the Strands SDK's `OpenAIModel` calls by default. Its
 * reply is a function of the conversation it is sent (how many function calls it already
 * holds), so a retried model call gets the same answer. Every reply uses 100 input and 10
 * output tokens.
 */
import { createServer, type Server } from 'node:http';

/** One scripted function call (its call id default `call_<n>`), or a final text. */
export type Item =
  | { readonly call: string; readonly args: Record<string, unknown>; readonly callId?: string }
  | { readonly text: string }
  /** An HTTP error the model answers instead (400: the client does not retry it). */
  | { readonly error: number };
/** One scripted reply: an item, or several (a response with parallel calls). */
export type Step = Item | readonly Item[];

export interface ModelServer {
  readonly baseURL: string;
  /** The request bodies' `input`, in order. */
  readonly requests: () => ReadonlyArray<Array<Record<string, unknown>>>;
  close(): Promise<void>;
}

export const USAGE = { input_tokens: 100, output_tokens: 10, total_tokens: 110 };

const itemsOf = (s: Step): readonly Item[] => (Array.isArray(s) ? s : [s as Item]);

/** The step whose calls come after `calls` function calls of the script. */
function stepAt(script: readonly Step[], calls: number): readonly Item[] {
  let seen = 0;
  for (const step of script) {
    if (seen >= calls) return itemsOf(step);
    seen += itemsOf(step).filter((i) => 'call' in i).length;
  }
  return itemsOf(script[script.length - 1]!);
}

export async function startModelServer(script: readonly Step[]): Promise<ModelServer> {
  const requests: Array<Array<Record<string, unknown>>> = [];
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
      requests.push(input);
      const calls = input.filter((i) => i.type === 'function_call').length;
      const n = requests.length;
      const items = stepAt(script, calls);
      const failing = items.find((i): i is { error: number } => 'error' in i);
      if (failing) {
        res
          .writeHead(failing.error, { 'content-type': 'application/json' })
          .end('{"error":{"message":"scripted failure","type":"invalid_request_error"}}');
        return;
      }
      const output = (items as Array<Exclude<Item, { error: number }>>).map((it, k) =>
        'call' in it
          ? {
              type: 'function_call',
              id: `fc_${n}_${k}`,
              call_id: it.callId ?? `call_${calls + k}`,
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
      const usage = {
        ...USAGE,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens_details: { reasoning_tokens: 0 },
      };
      const response = {
        id: `resp_${n}`,
        object: 'response',
        created_at: 1_700_000_000 + n,
        status: 'completed',
        model: parsed.model,
        output,
        usage,
      };
      if (parsed.stream !== true) {
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
        }
        send('response.output_item.done', { output_index: k, item });
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
    requests: () => requests,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
