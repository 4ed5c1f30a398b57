/**
 * (c) A payment whose activity times out on every attempt (startToCloseTimeout 60 s; the
 * activity pays, then outlives it). MODE=default: Temporal's default retry (unlimited);
 * the bench watches OBSERVE seconds (default 300), then terminates the run.
 * MODE=readme: the README's `retry: { maximumAttempts: 3 }` on the tool's activity options;
 * the model re-plans once after the tool's error (a second pay call, new call id).
 */
import { bench, describe, sleep } from './harness.ts';
import { callsIn } from './server.ts';

const MODE = process.argv[2] ?? 'default';
const OBSERVE = Number(process.env.OBSERVE ?? 300);
const pay = { call: 'pay', args: { to: 'alice', amountCents: 1000 } };
const b = await bench(`timeouts-${MODE}`, (req) =>
  callsIn(req) < (MODE === 'readme' ? 2 : 1) ? [pay] : [{ text: 'done' }],
);
await b.startWorker({ PAY_MODE: 'slow' });
const id = `timeouts-${MODE}-${Date.now()}`;
const t0 = Date.now();
const handle = await b.client.workflow.start('agentWorkflow', {
  taskQueue: b.queue,
  workflowId: id,
  args: [
    'pay alice 10 USD',
    { payTimeout: '60 seconds', ...(MODE === 'readme' ? { payMaxAttempts: 3 } : {}) },
  ],
});
let outcome: unknown = 'still running';
const done = handle.result().then(
  (r) => (outcome = { ok: r }),
  (e: Error) => (outcome = { failed: `${e.name}: ${e.message}` }),
);
const timeline: string[] = [];
let seen = 0;
while (outcome === 'still running' && (MODE === 'readme' || Date.now() - t0 < OBSERVE * 1000)) {
  await Promise.race([done, sleep(2000)]);
  const n = b.lines('payments.log');
  if (n !== seen) {
    seen = n;
    timeline.push(`${Math.round((Date.now() - t0) / 1000)} s: payment ${n}`);
    console.error(`[timeouts-${MODE}] ${timeline.at(-1)}`);
  }
}
const d = await describe(b, id);
console.log(
  JSON.stringify(
    {
      scenario: `(c) payment timing out on every attempt (60 s), retry: ${MODE === 'readme' ? 'maximumAttempts 3 + one re-plan' : 'default (unlimited)'}`,
      seconds: Math.round((Date.now() - t0) / 1000),
      payments: b.lines('payments.log'),
      timeline,
      modelRequests: b.server.requests.length,
      status: d.status,
      pending: d.pending,
      outcome,
    },
    null,
    2,
  ),
);
if (d.status === 'RUNNING') await handle.terminate('bench: observed long enough');
await b.close();
