/**
 * (a) A runaway read: the model asks for the same readDoc call on every turn. No limits
 * (the defaults). The bench caps it: the model server answers a final text at request CAP
 * (default 300), else nothing would end the run before the server's history limits.
 */
import { bench, describe, sleep } from './harness.ts';

const CAP = Number(process.env.CAP ?? 300);
const b = await bench('runaway', (_req, i) =>
  i >= CAP - 1 ? [{ text: 'capped by the bench' }] : [{ call: 'readDoc', args: { path: '/docs/a.md' } }],
);
await b.startWorker();
const id = `runaway-${Date.now()}`;
const t0 = Date.now();
const handle = await b.client.workflow.start('agentWorkflow', {
  taskQueue: b.queue,
  workflowId: id,
  args: ['summarise /docs/a.md', {}],
});
let last = 0;
const outcome = await Promise.race([
  handle.result().then(
    (r) => ({ ok: r }),
    (e: Error) => ({ failed: `${e.name}: ${e.message} / ${(e.cause as Error | undefined)?.message}` }),
  ),
  (async () => {
    for (;;) {
      await sleep(10_000);
      if (b.server.requests.length !== last) {
        last = b.server.requests.length;
        console.error(
          `[runaway] ${Math.round((Date.now() - t0) / 1000)} s: ${last} model requests, ${b.lines('reads.log')} reads`,
        );
      }
    }
  })(),
]);
const d = await describe(b, id);
console.log(
  JSON.stringify(
    {
      scenario: '(a) runaway read, defaults (no limits)',
      cap: `model server answers a final text at request ${CAP}`,
      seconds: Math.round((Date.now() - t0) / 1000),
      toolRuns: b.lines('reads.log'),
      modelRequests: b.server.requests.length,
      inputTokensReported: b.server.inputTokens(),
      lastRequestBytes: b.server.requests.at(-1)?.bytes,
      status: d.status,
      historyLength: d.historyLength,
      historySizeBytes: d.historySizeBytes,
      outcome,
    },
    null,
    2,
  ),
);
await b.close();
