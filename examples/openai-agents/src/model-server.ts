/**
 * A local server speaking the OpenAI Responses API (`POST /v1/responses`), what the OpenAI
 * Agents SDK's default provider calls, with one scripted model per scenario (the request's
 * `model`). Its reply is a function of the request (how many function calls the conversation
 * holds), so a retried model call gets the same answer.
 */
import { createServer, type Server } from 'node:http';

type Step = { call: string; args: Record<string, unknown>; callId?: string } | { text: string };

const SCRIPTS: Record<string, Step[]> = {
  // Never asked: the tenant's cap has no room for its first call.
  'spend-model': [{ call: 'lookup_order', args: { orderId: 'S-1' } }, { text: 'Order S-1 is unpaid.' }],
  // Repeats one lookup: stopped before the tool's third run.
  'lookup-model': [
    { call: 'lookup_order', args: { orderId: 'A-1' } },
    { call: 'lookup_order', args: { orderId: 'A-1' } },
    { call: 'lookup_order', args: { orderId: 'A-1' } },
    { text: 'Order A-1 is unpaid.' },
  ],
  // Pays (the worker dies after the side effect), then re-sends the payment with a new request id.
  'pay-model': [
    { call: 'pay', args: { orderId: 'A-7', to: 'acme', amount: 100, requestId: 'req-1' } },
    { call: 'pay', args: { orderId: 'A-7', to: 'acme', amount: 100, requestId: 'req-2' } },
    { text: 'Paid A-7.' },
  ],
  // An approved payment, then its twin (another payee and amount) under the approved call id.
  'approval-same-id': [
    { call: 'pay', args: { orderId: 'B-1', to: 'bob', amount: 100, requestId: 'r1' }, callId: 'call_pay' },
    {
      call: 'pay',
      args: { orderId: 'B-1', to: 'mallory', amount: 49999, requestId: 'r2' },
      callId: 'call_pay',
    },
    { text: 'Paid bob.' },
  ],
  // The same twin under a new call id.
  'approval-new-id': [
    { call: 'pay', args: { orderId: 'B-2', to: 'bob', amount: 100, requestId: 'r1' }, callId: 'call_pay' },
    {
      call: 'pay',
      args: { orderId: 'B-2', to: 'mallory', amount: 49999, requestId: 'r2' },
      callId: 'call_new',
    },
    { text: 'Paid bob.' },
  ],
};

export interface ModelServer {
  readonly baseURL: string;
  /** Requests per model. */
  readonly requests: (model: string) => number;
  close(): Promise<void>;
}

export async function startModelServer(): Promise<ModelServer> {
  const counts: Record<string, number> = {};
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      const request = JSON.parse(body || '{}') as { model?: string; input?: unknown };
      const script = request.model ? SCRIPTS[request.model] : undefined;
      if (req.method !== 'POST' || req.url !== '/v1/responses' || !script) {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
        return;
      }
      counts[request.model!] = (counts[request.model!] ?? 0) + 1;
      const input = Array.isArray(request.input) ? (request.input as Array<{ type?: string }>) : [];
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
          id: `resp_${turn}`,
          object: 'response',
          created_at: 1_700_000_000 + turn,
          status: 'completed',
          model: request.model,
          output,
          usage: {
            input_tokens: 100,
            output_tokens: 10,
            total_tokens: 110,
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
    requests: (model) => counts[model] ?? 0,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
