/**
 * The user's worker process: `@temporalio/openai-agents`' plugin (model calls against
 * MODEL_URL through the OpenAI SDK), the lookup activity, and agent-loop-guard's plugin: the
 * payment wrapped by the ledger, the activities a resume / stop / approval is verified by, and
 * the payload codec agentctl uses.
 * With KILL_AFTER_WRITE=1 the process SIGKILLs itself right after the first payment's side effect
 * was committed and before the activity reports back: Temporal retries the activity on the next
 * worker, and the ledger answers it without paying again.
 *
 * Environment: TEMPORAL_ADDRESS, MODEL_URL, DATA_DIR, TASK_QUEUE, KILL_AFTER_WRITE,
 * AGENT_SPEND_LIMITS.
 */
import { appendFileSync, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { OpenAIProvider } from '@openai/agents-openai';
import { OpenAIAgentsPlugin } from '@temporalio/openai-agents';
import { NativeConnection, Worker } from '@temporalio/worker';
import { openLedger } from 'agent-loop-guard';
import { ledgerWrites, OpenAIAgentsGuardPlugin } from 'agent-loop-guard/openai-agents/worker';

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
  const worker = await Worker.create({
    connection: await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS ?? 'localhost:7233' }),
    taskQueue: process.env.TASK_QUEUE ?? 'openai-agents',
    workflowsPath: require.resolve('./workflows'),
    activities: {
      lookup_order: async (i: { orderId: string }) => {
        appendFileSync(join(dataDir, 'lookup_order.log'), `${i.orderId}\n`);
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
        return out;
      },
    },
    plugins: [
      new OpenAIAgentsPlugin({
        modelProvider: new OpenAIProvider({ baseURL: process.env.MODEL_URL ?? '', apiKey: 'local' }),
      }),
      // agent-loop-guard: guardActivities (operators of AGENT_OPERATORS_FILE, none: open mode;
      // the tenants' spend caps of AGENT_SPEND_LIMITS) and the codec.
      new OpenAIAgentsGuardPlugin({ ledger }),
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
