/**
 * A local server speaking the OpenAI Responses API (`POST /v1/responses`, server-sent events when
 * asked), what the Strands SDK's `OpenAIModel` calls by default, with one scripted model per
 * scenario (the request's `model`). Its reply is a function of the request (how many function
 * calls the conversation holds), so a retried model call gets the same answer.
 */
import { createServer, type Server } from 'node:http';

type Item = { call: string; args: Record<string, unknown>; callId?: string } | { text: string };
/** One reply: an item, or several (parallel calls in one response). */
type Step = Item | Item[];

const payArgs = (orderId: string, to: string, amount: number, requestId: string) => ({
  call: 'pay',
  args: { orderId, to, amount, requestId },
});

const SCRIPTS: Record<string, Step[]> = {
  // A runaway read: the same lookup on every turn, forever.
  'lookup-model': [{ call: 'lookup_order', args: { orderId: 'A-1' } }],
  // Pays (the worker dies after the side effect), then re-sends the payment with a new request id.
  'pay-model': [
    payArgs('A-7', 'acme', 100, 'req-1'),
    payArgs('A-7', 'acme', 100, 'req-2'),
    { text: 'Paid A-7.' },
  ],
  // Pays; every attempt times out after the side effect; the model re-plans with a new request id.
  'timeout-model': [
    payArgs('T-1', 'initech', 100, 'req-1'),
    payArgs('T-1', 'initech', 100, 'req-2'),
    { text: 'Tried T-1.' },
  ],
  // One response, two payments under the same call id: alice's, and a twin to mallory.
  'approval-twin': [
    [
      { ...payArgs('B-1', 'alice', 1000, 'r1'), callId: 'call_pay' },
      { ...payArgs('B-1', 'mallory', 500000, 'r2'), callId: 'call_pay' },
    ],
    { text: 'Paid.' },
  ],
  // A slow lookup (an operator stops the run during it), then others after the resume.
  'stop-model': [
    { call: 'lookup_order', args: { orderId: 'HOLD' } },
    { call: 'lookup_order', args: { orderId: 'C-2' } },
    { call: 'lookup_order', args: { orderId: 'C-3' } },
    { text: 'Looked C-2 and C-3 up.' },
  ],
};

/** The scenarios, each a model factory of the worker's StrandsPlugin. */
export const SCENARIOS = Object.keys(SCRIPTS);

const itemsOf = (s: Step): Item[] => (Array.isArray(s) ? s : [s]);

/** The reply after `calls` function calls of the script. */
function replyAt(script: Step[], calls: number): Item[] {
  let seen = 0;
  for (const step of script) {
    if (seen >= calls) return itemsOf(step);
    seen += itemsOf(step).filter((i) => 'call' in i).length;
  }
  return itemsOf(script[script.length - 1]!);
}

export interface ModelServer {
  readonly baseURL: string;
  /** Requests received for one scenario's model. */
  requests(model: string): number;
  close(): Promise<void>;
}

export async function startModelServer(): Promise<ModelServer> {
  const counts: Record<string, number> = {};
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      const parsed = JSON.parse(body || '{}') as { input?: unknown; model?: string; stream?: boolean };
      const script = SCRIPTS[parsed.model ?? ''];
      if (req.method !== 'POST' || !req.url?.endsWith('/responses') || !script) {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
        return;
      }
      const model = parsed.model!;
      const n = (counts[model] = (counts[model] ?? 0) + 1);
      const input = Array.isArray(parsed.input) ? (parsed.input as Array<{ type?: string }>) : [];
      const calls = input.filter((i) => i.type === 'function_call').length;
      const output = replyAt(script, calls).map((it, k) =>
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
        input_tokens: 100,
        output_tokens: 10,
        total_tokens: 110,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens_details: { reasoning_tokens: 0 },
      };
      const response = {
        id: `resp_${n}`,
        object: 'response',
        created_at: 1_700_000_000 + n,
        status: 'completed',
        model,
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
          const text = (item.content as Array<{ text: string }>)[0]!.text;
          send('response.output_item.added', { output_index: k, item: { ...item, content: [] } });
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
    requests: (model) => counts[model] ?? 0,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
