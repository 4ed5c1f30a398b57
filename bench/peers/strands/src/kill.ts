/**
 * (b) A payment across a worker SIGKILL after its side effect: the pay activity appends its
 * payment, then the bench SIGKILLs the worker and starts a fresh one. Tool activity options as
 * the README's (startToCloseTimeout 30 s, Temporal's default retry).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { bench, describe, sleep } from './harness.ts';
import { callsIn } from './server.ts';

const b = await bench('kill', (req) =>
  callsIn(req) === 0 ? [{ call: 'pay', args: { to: 'alice', amountCents: 1000 } }] : [{ text: 'paid' }],
);
const first = await b.startWorker({ PAY_MODE: 'kill' });
const id = `kill-${Date.now()}`;
const t0 = Date.now();
const handle = await b.client.workflow.start('agentWorkflow', {
  taskQueue: b.queue,
  workflowId: id,
  args: ['pay alice 10 USD', {}],
});
while (!existsSync(join(b.dir, 'paid.marker'))) await sleep(100);
first.kill('SIGKILL');
const paidBeforeKill = b.lines('payments.log');
console.error(`[kill] SIGKILLed the worker after ${paidBeforeKill} payment(s); starting a fresh worker`);
await b.startWorker({ PAY_MODE: 'ok' });
const outcome = await handle.result().then(
  (r) => ({ ok: r }),
  (e: Error) => ({ failed: `${e.name}: ${e.message}` }),
);
const d = await describe(b, id);
console.log(
  JSON.stringify(
    {
      scenario: '(b) payment across a worker SIGKILL after its side effect',
      seconds: Math.round((Date.now() - t0) / 1000),
      paymentsBeforeKill: paidBeforeKill,
      payments: b.lines('payments.log'),
      modelRequests: b.server.requests.length,
      status: d.status,
      outcome,
    },
    null,
    2,
  ),
);
await b.close();
