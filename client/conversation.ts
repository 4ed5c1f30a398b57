/**
 * A person's side of a conversation run (issue 33, docs/spec.md §7.16): send a message (the
 * `message` update), read what the agent said (the `conversation` query) and wait for its next
 * reply. None of it needs operator rights: a message carries no authority (it is text for the
 * model), and operator actions — resume, stop, approvals — stay signed. Errors are
 * {@link CliError}s: no such run (exit 1), bad input (exit 2); a refusal is an answer.
 */
import { randomUUID } from 'node:crypto';
import {
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  type Client,
  type WorkflowHandle,
} from '@temporalio/client';
import {
  conversationQuery,
  messageUpdate,
  type ConversationView,
  type MessageAnswer,
  type MessageRequest,
  type TranscriptEntry,
} from '../common/conversation-run';
import { CliError, Exit } from './format';
import { DEFAULT_CONFIRM_MS, describeRun, isClosed, isDeadline, unconfirmedReason } from './runs';

/** What {@link sendMessage} sends besides the text. */
export interface SendMessageOptions {
  /** Idempotency id (default random): sent again with the same id, the message is applied once. */
  readonly messageId?: string;
  /** Who writes (shown in the transcript; no authority). */
  readonly from?: string;
  /** Ends the conversation (the text, if any, is its last message). */
  readonly close?: boolean;
  /** How long to wait for the worker's answer, ms (default 30 s); then `unconfirmed`. */
  readonly confirmMs?: number;
}

/** What became of a message: the run's answer, or why it was refused. */
export interface MessageOutcome {
  readonly accepted: boolean;
  /** `answer` | `queued` | `closing` when accepted; `refused` or `unconfirmed` otherwise. */
  readonly action: MessageAnswer['action'] | 'refused' | 'unconfirmed';
  readonly reason: string;
  readonly messageId: string;
  /** The message's place in the transcript (accepted only). */
  readonly seq?: number;
  /** Its place in the queue while the agent works (1 = next). */
  readonly position?: number;
}

/**
 * Sends a person's message to a conversation run (the `message` update, validated by the run).
 * A refusal — the run is not waiting for a person, is closed, the message is empty or too long,
 * the queue is full — is `accepted: false` with the run's reason; an unknown run is exit 1.
 */
export async function sendMessage(
  client: Client,
  workflowId: string,
  text: string,
  o: SendMessageOptions = {},
): Promise<MessageOutcome> {
  const messageId = o.messageId ?? randomUUID();
  const refused = (reason: string): MessageOutcome => ({
    accepted: false,
    action: 'refused',
    reason,
    messageId,
  });
  const { handle, desc } = await describeRun(client, workflowId);
  if (isClosed(desc)) return refused(`the conversation is closed (run ${desc.status.name})`);
  const req: MessageRequest = {
    text,
    messageId,
    ...(o.from ? { from: o.from } : {}),
    ...(o.close ? { close: true } : {}),
  };
  const ms = o.confirmMs ?? DEFAULT_CONFIRM_MS;
  const deadline = Date.now() + ms;
  try {
    // The update id is the message id: the server too takes a retried message once.
    const a = await handle.client.withDeadline(deadline, () =>
      handle.executeUpdate(messageUpdate, { args: [req], updateId: `message-${messageId}` }),
    );
    return { ...a, messageId };
  } catch (err) {
    if (err instanceof WorkflowUpdateFailedError) return refused(err.cause?.message ?? err.message);
    if (err instanceof WorkflowNotFoundError) return refused('the conversation is closed');
    if (isDeadline(err, deadline))
      return { accepted: false, action: 'unconfirmed', reason: unconfirmedReason(ms), messageId };
    throw err;
  }
}

/** What {@link readConversation} reads. */
export interface ReadConversationOptions {
  /** Only entries with a seq above this (default 0). */
  readonly after?: number;
}

/** The conversation as the run holds it: the transcript after `after`, and what the agent waits on. */
export async function readConversation(
  client: Client,
  workflowId: string,
  o: ReadConversationOptions = {},
): Promise<ConversationView> {
  const { handle } = await describeRun(client, workflowId);
  return queryConversation(handle, o.after ?? 0);
}

async function queryConversation(handle: WorkflowHandle, after: number): Promise<ConversationView> {
  try {
    return await handle.query(conversationQuery, { after });
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    if (/not a conversation/.test(message))
      throw new CliError(Exit.USAGE, `run ${handle.workflowId} is not a conversation`);
    throw err;
  }
}

/** The agent's replies (its questions, text replies and last word) after `after`. */
export async function getReplies(
  client: Client,
  workflowId: string,
  o: ReadConversationOptions = {},
): Promise<TranscriptEntry[]> {
  const view = await readConversation(client, workflowId, o);
  return view.entries.filter((e) => e.from === 'agent');
}

/** What {@link waitForReply} waits for. */
export interface WaitForReplyOptions extends ReadConversationOptions {
  /** Give up after this long, ms (default 5 minutes): a CliError (exit 1). */
  readonly timeoutMs?: number;
  /** How often the run is asked, ms (default 250). */
  readonly pollMs?: number;
}

/**
 * Waits for the agent's next entry after `after` (a question, a reply, or the conversation's
 * end) and returns it with the view it came in. A query per poll: nothing enters history.
 */
export async function waitForReply(
  client: Client,
  workflowId: string,
  o: WaitForReplyOptions = {},
): Promise<{ reply: TranscriptEntry | null; view: ConversationView }> {
  const { handle } = await describeRun(client, workflowId);
  const after = o.after ?? 0;
  const deadline = Date.now() + (o.timeoutMs ?? 300_000);
  for (;;) {
    const view = await queryConversation(handle, after);
    const reply = view.entries.find((e) => e.from === 'agent') ?? null;
    if (reply || !view.open) return { reply, view };
    if (Date.now() >= deadline)
      throw new CliError(Exit.ERROR, `no reply from the agent of ${workflowId} after seq ${after} in time`);
    await new Promise((r) => setTimeout(r, o.pollMs ?? 250));
  }
}
