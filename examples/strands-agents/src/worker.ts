/**
 * The user's worker process: `@temporalio/strands-agents`' plugin (each scenario a model factory:
 * the Strands SDK's own `OpenAIModel`, exactly as documented, against MODEL_URL), the lookup
 * activity, and agent-loop-guard's plugin: the payment wrapped by the ledger, the activities a
 * resume / stop / approval is verified by, and the payload codec agentctl uses.
 * With KILL_AFTER_WRITE=1 the process SIGKILLs itself right after the first payment's side effect
 * was committed and before the activity reports back: Temporal retries the activity on the next
 * worker, and the ledger answers it without paying again. A payment of order T-1 hangs past its
 * activity's timeout on every attempt (after its side effect).
 *
 * Environment: TEMPORAL_ADDRESS, MODEL_URL, DATA_DIR, TASK_QUEUE, KILL_AFTER_WRITE.
 */
import { appendFileSync, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { OpenAIModel } from '@strands-agents/sdk/models/openai';
import { StrandsPlugin } from '@temporalio/strands-agents';
import { NativeConnection, Worker } from '@temporalio/worker';
import { openLedger } from 'agent-loop-guard';
import { ledgerWrites, StrandsGuardPlugin } from 'agent-loop-guard/strands-agents/worker';
import { SCENARIOS } from './model-server';

async function main(): Promise<void> {
  const dataDir = process.env.DATA_DIR ?? 'data';
  const ledger = await openLedger(`sqlite:${join(dataDir, 'ledger.db')}`);
  const killMark = join(dataDir, 'killed');
  const writes = ledgerWrites(ledger, {
    pay: async (i: { orderId: string; to: string; amount: number }) => {
      appendFileSync(join(dataDir, 'pay.log'), `${i.orderId} ${i.to} ${i.amount}\n`);
      return { paid: i.amount, to: i.to };
    },
  });
  const baseURL = process.env.MODEL_URL ?? '';
  const worker = await Worker.create({
    connection: await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS ?? 'localhost:7233' }),
    taskQueue: process.env.TASK_QUEUE ?? 'strands-agents',
    workflowsPath: require.resolve('./workflows'),
    activities: {
      lookup_order: async (i: { orderId: string }) => {
        appendFileSync(join(dataDir, 'lookup_order.log'), `${i.orderId}\n`);
        if (i.orderId === 'HOLD') await sleep(4000); // long enough for an agentctl stop
        return { orderId: i.orderId, status: 'unpaid', amount: 100 };
      },
      pay: async (
        i: { orderId: string; to: string; amount: number },
        meta: Parameters<typeof writes.pay>[1],
      ) => {
        const out = await writes.pay(i, meta);
        if (process.env.KILL_AFTER_WRITE === '1' && !existsSync(killMark)) {
          writeFileSync(killMark, 'killed after the first payment\n');
          process.kill(process.pid, 'SIGKILL');
        }
        if (i.orderId === 'T-1') await sleep(4000); // past the 3 s timeout, every attempt
        return out;
      },
    },
    plugins: [
      // The integration's plugin, as its README shows it: one model factory per name.
      new StrandsPlugin({
        models: Object.fromEntries(
          SCENARIOS.map((name) => [
            name,
            () => new OpenAIModel({ modelId: name, apiKey: 'local', clientConfig: { baseURL } }),
          ]),
        ),
      }),
      // agent-loop-guard: guardActivities (operators of AGENT_OPERATORS_FILE, none: open mode)
      // and the codec.
      new StrandsGuardPlugin({ ledger }),
    ],
  });
  process.on('SIGTERM', () => worker.shutdown());
  await worker.run();
  await ledger.close();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
