/**
 * The user's worker process: `@temporalio/ai-sdk`'s plugin (model calls against MODEL_URL),
 * their search activity, and their write activity wrapped by agent-loop-guard's `ledgerWrites`.
 * With KILL_AFTER_WRITE=1 the process SIGKILLs itself right after the first write committed and
 * before the activity reports back: Temporal retries the activity on the next worker, and the
 * ledger answers it without writing again.
 *
 * Environment: TEMPORAL_ADDRESS, MODEL_URL, DATA_DIR, TASK_QUEUE, KILL_AFTER_WRITE.
 */
import { appendFileSync, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { AiSdkPlugin } from '@temporalio/ai-sdk';
import { NativeConnection, Worker } from '@temporalio/worker';
import { openLedger } from 'agent-loop-guard';
import { ledgerWrites } from 'agent-loop-guard/ai-sdk/worker';

async function main(): Promise<void> {
  const dataDir = process.env.DATA_DIR ?? 'data';
  const ledger = await openLedger(`sqlite:${join(dataDir, 'ledger.db')}`);
  const writes = ledgerWrites(ledger, {
    fileTicket: async (input: { title: string }) => {
      appendFileSync(join(dataDir, 'file_ticket.log'), `${input.title}\n`);
      return { id: 'INC-7', title: input.title };
    },
  });
  const killMark = join(dataDir, 'killed');
  const worker = await Worker.create({
    connection: await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS ?? 'localhost:7233' }),
    taskQueue: process.env.TASK_QUEUE ?? 'ai-sdk-agent',
    workflowsPath: require.resolve('./workflows'),
    activities: {
      searchTickets: async (query: string) => {
        appendFileSync(join(dataDir, 'search_tickets.log'), `${query}\n`);
        return ['INC-2: disk full on db-2 (closed)'];
      },
      fileTicket: async (input: { title: string }, meta: Parameters<typeof writes.fileTicket>[1]) => {
        const out = await writes.fileTicket(input, meta);
        if (process.env.KILL_AFTER_WRITE === '1' && !existsSync(killMark)) {
          writeFileSync(killMark, 'killed after the first write\n');
          process.kill(process.pid, 'SIGKILL');
        }
        return out;
      },
    },
    plugins: [
      new AiSdkPlugin({
        modelProvider: createOpenAICompatible({ name: 'local', baseURL: process.env.MODEL_URL ?? '' }),
      }),
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
