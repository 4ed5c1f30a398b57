/** (e) The same runaway read with the SDK's opt-in `limits: { turns: TURNS }` on invoke. */
import { bench, describe } from './harness.ts';

const TURNS = Number(process.env.TURNS ?? 5);
const b = await bench('turns', () => [{ call: 'readDoc', args: { path: '/docs/a.md' } }]);
await b.startWorker();
const id = `turns-${Date.now()}`;
const handle = await b.client.workflow.start('agentWorkflow', {
  taskQueue: b.queue,
  workflowId: id,
  args: ['summarise /docs/a.md', { turns: TURNS }],
});
const outcome = await handle.result().then(
  (r) => ({ ok: r }),
  (e: Error) => ({ failed: `${e.name}: ${e.message} / ${(e.cause as Error | undefined)?.message}` }),
);
const d = await describe(b, id);
console.log(
  JSON.stringify(
    {
      scenario: `(e) runaway read with limits: { turns: ${TURNS} }`,
      toolRuns: b.lines('reads.log'),
      modelRequests: b.server.requests.length,
      status: d.status,
      outcome,
    },
    null,
    2,
  ),
);
await b.close();
