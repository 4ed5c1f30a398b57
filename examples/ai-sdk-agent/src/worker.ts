/**
 * The user's worker process, set up as docs/ai-sdk.md shows it: `@temporalio/ai-sdk`'s plugin
 * (model calls against MODEL_URL) and agent-loop-guard's plugin with `aiSdk` — the payload codec
 * agentctl uses (so `agentctl stop` / `resume` reach this worker), the write activity run through
 * the ledger with a `reconcile` probe, and the guard's activities (what a stop or resume is
 * verified by).
 * With KILL_MID_WRITE=1 the process SIGKILLs itself in the middle of its first write: after the
 * side effect (the ticket is in file_ticket.log), before the ledger commits it. Temporal retries
 * the activity on the next worker, whose ledger asks the probe and settles the write without
 * running it again and without a person.
 * `search_tickets` for a query starting with `hold:` waits while DATA_DIR/hold exists (so an
 * operator can stop the run in the middle of a step).
 *
 * Environment: TEMPORAL_ADDRESS, MODEL_URL, DATA_DIR, TASK_QUEUE, KILL_MID_WRITE, and the
 * payload key of every agent-loop-guard process (AGENT_CODEC_KEYS / the default key file).
 */
import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { AiSdkPlugin } from '@temporalio/ai-sdk';
import { NativeConnection, Worker } from '@temporalio/worker';
import { openLedger } from 'agent-loop-guard';
import { AgentLoopGuardPlugin, type ReconcileAnswer } from 'agent-loop-guard/ai-sdk/worker';

async function main(): Promise<void> {
  const dataDir = process.env.DATA_DIR ?? 'data';
  const tickets = join(dataDir, 'file_ticket.log');
  const killMark = join(dataDir, 'killed');
  const ledger = await openLedger(`sqlite:${join(dataDir, 'ledger.db')}`);

  // The write: files the ticket (one line per call: the tool's own counter), keyed by the guard.
  async function fileTicket(input: { title: string }, ctx: { operationKey: string }) {
    appendFileSync(tickets, `${ctx.operationKey}\n`);
    if (process.env.KILL_MID_WRITE === '1' && !existsSync(killMark)) {
      writeFileSync(killMark, 'killed in the middle of the first write\n');
      process.kill(process.pid, 'SIGKILL');
    }
    return { id: 'INC-7', title: input.title };
  }
  // The probe: the ticket system knows whether a ticket with this key was filed.
  async function ticketFiled(key: string): Promise<ReconcileAnswer> {
    const filed = existsSync(tickets) && readFileSync(tickets, 'utf8').split('\n').includes(key);
    return filed ? { status: 'succeeded', result: { id: 'INC-7', key } } : { status: 'not_found' };
  }

  const worker = await Worker.create({
    connection: await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS ?? 'localhost:7233' }),
    taskQueue: process.env.TASK_QUEUE ?? 'ai-sdk-agent',
    workflowsPath: require.resolve('./workflows'),
    activities: {
      searchTickets: async (query: string) => {
        appendFileSync(join(dataDir, 'search_tickets.log'), `${query}\n`);
        while (query.startsWith('hold:') && existsSync(join(dataDir, 'hold'))) await sleep(100);
        return ['INC-2: disk full on db-2 (closed)'];
      },
    },
    plugins: [
      new AiSdkPlugin({
        modelProvider: createOpenAICompatible({ name: 'local', baseURL: process.env.MODEL_URL ?? '' }),
      }),
      new AgentLoopGuardPlugin({
        aiSdk: {
          ledger,
          writes: { fileTicket: { execute: fileTicket, reconcile: ticketFiled } },
          // A dead worker's claim is taken over after 2 s (the write itself takes milliseconds).
          leaseMs: 2_000,
        },
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
