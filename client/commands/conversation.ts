/**
 * `agentctl conversation <workflowId>`: what an LLM run's planner said and was told. The
 * conversation lives in the worker's database (the ledger's, `LEDGER_URL`), not in workflow
 * history, so the Temporal UI shows only references; this prints the messages, newest last. Exit codes: 0 ok, 1 error (unreachable database), 3 no conversation stored for the run.
 */
import { Command } from 'commander';
import { DEFAULT_LEDGER_URL, ledgerUrlFromEnv, openLedger, type Ledger } from '../../storage/ledger';
import { ConversationStore } from '../../storage/conversation-store';
import { RowCodec } from '../../storage/row-codec';
import { loadPayloadCodec } from '../../codec';
import { CliError, Exit } from '../format';
import type { Ctx } from './common';

/** One message as a line: its position, role and the start of its content. */
export function messageLine(position: number, message: unknown, width: number): string {
  const m = (message ?? {}) as { role?: unknown; content?: unknown; tool_calls?: unknown };
  const role = typeof m.role === 'string' ? m.role : '?';
  const parts: unknown[] = [];
  if (m.content !== undefined && m.content !== null) parts.push(m.content);
  if (m.tool_calls !== undefined) parts.push({ tool_calls: m.tool_calls });
  const text = parts.map((p) => (typeof p === 'string' ? p : JSON.stringify(p))).join(' ');
  const flat = text.replace(/\s+/g, ' ');
  return `#${position} ${role}: ${flat.length > width ? `${flat.slice(0, width)}… (${flat.length} chars)` : flat}`;
}

/** Builds the `conversation` command. */
export function conversationCommand(ctx: Ctx): Command {
  return new Command('conversation')
    .description(
      `Print an LLM run's conversation from the worker's database (LEDGER_URL, default ${DEFAULT_LEDGER_URL})`,
    )
    .argument('<workflowId>', 'the run')
    .option('--last <n>', 'only the newest n messages', '20')
    .option('--width <chars>', 'characters of each message shown (0: all)', '160')
    .option('--json', 'the messages as one JSON array')
    .action(async (workflowId: string, o: { last: string; width: string; json?: boolean }) => {
      const last = Number(o.last);
      const width = Number(o.width);
      if (!Number.isInteger(last) || last < 1)
        throw new CliError(Exit.USAGE, '--last must be a positive integer');
      if (!Number.isInteger(width) || width < 0)
        throw new CliError(Exit.USAGE, '--width must be an integer ≥ 0');
      let ledger: Ledger | undefined;
      try {
        ledger = await openLedger(ledgerUrlFromEnv(ctx.env));
        // The workers seal rows with their payload codec: the same keys open them here.
        const { codec } = loadPayloadCodec(ctx.env);
        const store = ConversationStore.over(ledger, new RowCodec(codec ? [codec] : []));
        if (!store) throw new CliError(Exit.ERROR, 'the ledger is not a SQL ledger: no conversation store');
        const ref = await store.latest(workflowId);
        if (!ref) throw new CliError(Exit.REFUSED, `no conversation stored for ${workflowId}`);
        const messages = (await store.tail(ref, Number.MAX_SAFE_INTEGER)).slice(-last);
        if (o.json) {
          ctx.io.out(
            `${JSON.stringify(
              messages.map((m) => ({ position: m.position, message: m.message })),
              null,
              2,
            )}\n`,
          );
          return;
        }
        ctx.io.out(
          `${workflowId}: ${ref.length} messages, ${ref.chars} characters; the newest ${messages.length}:\n`,
        );
        for (const m of messages)
          ctx.io.out(`${messageLine(m.position, m.message, width === 0 ? Infinity : width)}\n`);
      } catch (err) {
        if (err instanceof CliError) throw err;
        throw new CliError(Exit.ERROR, `conversation: ${(err as Error)?.message ?? String(err)}`, {
          cause: err,
        });
      } finally {
        await ledger?.close().catch(() => undefined);
      }
    });
}
