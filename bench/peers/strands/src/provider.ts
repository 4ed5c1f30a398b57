/**
 * The SDK's OpenAIModel exactly as documented, under the plugin: does one model request reach
 * the server? Runs ~45 s, then prints the model activity's attempts and last failure.
 */
import { bench, describe, sleep } from './harness.ts';

const provider = process.argv[2] ?? 'documented';
/** Optional: the model activity's retry maximumAttempts (default Temporal's: unlimited). */
const attempts = process.argv[3] ? Number(process.argv[3]) : undefined;
const b = await bench(`provider-${provider}${attempts ? `-${attempts}` : ''}`, () => [{ text: 'hello' }]);
await b.startWorker({ PROVIDER: provider });
const id = `provider-${Date.now()}`;
await b.client.workflow.start('agentWorkflow', {
  taskQueue: b.queue,
  workflowId: id,
  args: ['say hello', attempts ? { modelMaxAttempts: attempts } : {}],
});
const t0 = Date.now();
let d = await describe(b, id);
while (Date.now() - t0 < Number(process.env.PROVIDER_SECONDS ?? 45) * 1000 && d.status === 'RUNNING') {
  await sleep(3000);
  d = await describe(b, id);
}
async function lastWorkflowTaskFailure(): Promise<string | undefined> {
  let last: string | undefined;
  for (const e of (await b.client.workflow.getHandle(id).fetchHistory()).events ?? []) {
    const f = e.workflowTaskFailedEventAttributes?.failure;
    if (f) last = `${f.message}`.slice(0, 300);
  }
  return last;
}
console.log(
  JSON.stringify(
    {
      scenario: `provider: ${provider}${attempts ? `, model activity maximumAttempts ${attempts}` : ''}`,
      lastWorkflowTaskFailure: await lastWorkflowTaskFailure(),
      result: d.status === 'COMPLETED' ? await b.client.workflow.getHandle(id).result() : undefined,
      seconds: Math.round((Date.now() - t0) / 1000),
      modelRequestsReachingServer: b.server.requests.length,
      status: d.status,
      pending: d.pending,
    },
    null,
    2,
  ),
);
if (d.status === 'RUNNING') await b.client.workflow.getHandle(id).terminate('bench: provider check done');
await b.close();
