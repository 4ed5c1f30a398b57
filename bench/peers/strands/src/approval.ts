/**
 * (d) An approval (Strands interrupt, raised in a BeforeToolCallEvent hook for `pay`) and a
 * twin: one model response holds two pay calls under the same call id, alice 10 USD and
 * mallory 5,000 USD. The operator approves the interrupt it is shown, once.
 */
import { bench, describe, sleep } from './harness.ts';
import { callsIn } from './server.ts';

const b = await bench('approval', (req) =>
  callsIn(req) === 0
    ? [
        { call: 'pay', args: { to: 'alice', amountCents: 1000 }, callId: 'call_pay' },
        { call: 'pay', args: { to: 'mallory', amountCents: 500000 }, callId: 'call_pay' },
      ]
    : [{ text: 'done' }],
);
await b.startWorker();
const id = `approval-${Date.now()}`;
const handle = await b.client.workflow.start('approvalWorkflow', {
  taskQueue: b.queue,
  workflowId: id,
  args: ['pay alice 10 USD', {}],
});
let shown: Array<{ id: string; name: string; reason: unknown }> = [];
while (shown.length === 0) {
  await sleep(500);
  shown = await handle.query<Array<{ id: string; name: string; reason: unknown }>>('pending');
}
const paidBeforeApproval = b.lines('payments.log');
console.error(`[approval] interrupts shown: ${JSON.stringify(shown)}`);
await handle.signal('approve', { [shown[0]!.id]: 'yes' });
const outcome = await handle.result().then(
  (r) => ({ ok: r }),
  (e: Error) => ({ failed: `${e.name}: ${e.message}` }),
);
const d = await describe(b, id);
const { readFileSync } = await import('node:fs');
console.log(
  JSON.stringify(
    {
      scenario: '(d) approval + twin under the same call id in one model response',
      interruptsShown: shown,
      approvalsGiven: 1,
      paymentsBeforeApproval: paidBeforeApproval,
      payments: b.lines('payments.log'),
      paid: readFileSync(`${b.dir}/payments.log`, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => l.split(' ').slice(1).join(' ')),
      modelRequests: b.server.requests.length,
      status: d.status,
      outcome,
    },
    null,
    2,
  ),
);
await b.close();
