/**
 * `agentctl send RUN "text"` and `agentctl replies RUN`: a person's side of a conversation run
 * (docs/spec.md §7.16). `send` prints what the run will do with the message, or why
 * it refused it; `replies` prints what the agent said (and can wait for its next word). Neither
 * needs an operator key: a message is text for the model, never an operator action.
 * Exit codes: 0 taken, 1 no such run, 2 bad input, 3 refused by the run.
 */
import { Command } from 'commander';
import { getReplies, sendMessage, waitForReply } from '../conversation';
import { CliError, Exit, json } from '../format';
import { describeRun, isClosed } from '../runs';
import { requireWorker } from '../workers';
import type { TranscriptEntry } from '../../common/conversation-run';
import { nonNegativeInt, positiveNumber, type Ctx } from './common';

/** What a person's message line says of its delivery: a message never read says so. */
const DELIVERY: Record<NonNullable<TranscriptEntry['delivery']>, string> = {
  queued: ' [queued]',
  read: '',
  not_read: ' [not read: the run ended before the model read it]',
};

/** One transcript entry as a line. */
export function entryLine(e: TranscriptEntry): string {
  const who = e.from === 'agent' ? `agent ${e.kind}` : `${e.by ?? 'person'} ${e.kind}`;
  return `#${e.seq} ${who}${e.delivery ? DELIVERY[e.delivery] : ''}: ${e.text}`;
}

/** Builds the `send` command. */
export function sendCommand(ctx: Ctx): Command {
  return new Command('send')
    .description("Send a person's message to a conversation run (no operator key: it is text for the model)")
    .argument('<workflowId>', 'the conversation run')
    .argument('[text]', 'the message (empty only with --close)', '')
    .option('--close', 'end the conversation (the run ends PARTIAL conversation_closed)')
    .option('--from <name>', 'who writes (shown in the transcript)')
    .option('--id <messageId>', 'idempotency id: the same id is applied once (default random)')
    .option('--wait-reply [seconds]', "then wait for the agent's next reply and print it", positiveNumber)
    .option('--json', 'print the answer as JSON')
    .action(
      async (
        workflowId: string,
        text: string,
        o: { close?: boolean; from?: string; id?: string; waitReply?: number | true; json?: boolean },
      ) => {
        const c = await ctx.connect();
        const { client } = c;
        // An open run's message waits for a worker to answer it: with none on the run's queue, say so now.
        const { desc } = await describeRun(client, workflowId);
        if (!isClosed(desc))
          await requireWorker(c, desc.taskQueue, 'Nothing was sent: the message would wait unanswered.');
        const out = await sendMessage(client, workflowId, text, {
          ...(o.id ? { messageId: o.id } : {}),
          ...(o.from ? { from: o.from } : {}),
          ...(o.close ? { close: true } : {}),
        });
        if (o.json) ctx.io.out(`${json(out)}\n`);
        else if (out.accepted) ctx.io.out(`${out.action} (#${out.seq}): ${out.reason}\n`);
        if (!out.accepted) throw new CliError(Exit.REFUSED, `refused: ${out.reason}`, { reported: !!o.json });
        if (o.waitReply === undefined || o.close) return;
        const timeoutMs = o.waitReply === true ? 300_000 : o.waitReply * 1000;
        const { reply } = await waitForReply(client, workflowId, { after: out.seq ?? 0, timeoutMs });
        if (reply) ctx.io.out(o.json ? `${json(reply)}\n` : `${entryLine(reply)}\n`);
      },
    );
}

/** Builds the `replies` command. */
export function repliesCommand(ctx: Ctx): Command {
  return new Command('replies')
    .description("Print what a conversation run's agent said to its person (its questions and replies)")
    .argument('<workflowId>', 'the conversation run')
    .option('--after <seq>', 'only entries after this seq', nonNegativeInt, 0)
    .option('--all', "the person's messages too")
    .option('--wait [seconds]', 'wait for the next reply after --after', positiveNumber)
    .option('--json', 'the entries as one JSON array')
    .action(
      async (
        workflowId: string,
        o: { after: number; all?: boolean; wait?: number | true; json?: boolean },
      ) => {
        const { client } = await ctx.connect();
        let entries: TranscriptEntry[];
        if (o.wait !== undefined) {
          const timeoutMs = o.wait === true ? 300_000 : o.wait * 1000;
          const { reply } = await waitForReply(client, workflowId, { after: o.after, timeoutMs });
          entries = reply ? [reply] : [];
        } else if (o.all) {
          const { readConversation } = await import('../conversation');
          entries = [...(await readConversation(client, workflowId, { after: o.after })).entries];
        } else {
          entries = await getReplies(client, workflowId, { after: o.after });
        }
        ctx.io.out(o.json ? `${json(entries)}\n` : entries.map((e) => `${entryLine(e)}\n`).join(''));
      },
    );
}
