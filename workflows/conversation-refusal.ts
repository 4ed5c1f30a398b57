/**
 * Why a conversation refuses a person's message (docs/spec.md §7.16): the `message`
 * update's validator, as a pure function of what the run is doing, so a refusal is decided
 * before anything enters history. Workflow code (no I/O).
 */
import {
  closedRefusal,
  messageRequestSchema,
  type ConversationSettings,
  type MessageRequest,
} from '../common/conversation-run';
import type { RunPhase } from '../common/contracts';
import { isTerminal } from '../core/phase';

/** What the validator reads of the run and its conversation. */
export interface InboxState {
  readonly settings: ConversationSettings;
  /** The message id was taken before: it gets its first answer, never a refusal. */
  readonly known: (messageId: string) => boolean;
  /** The conversation ended or the person asked to close it. */
  readonly closed: boolean;
  /** How it ended (or ends), in the run's words: `PARTIAL conversation_idle`. */
  readonly ending: string | null;
  readonly phase: RunPhase;
  readonly stop: { readonly terminalState: string; readonly reason: string } | null;
  /** The agent waits on the person (a question or a reply is pending). */
  readonly waiting: boolean;
  readonly queued: number;
}

/** The parsed message, or throws the refusal with its reason. */
export function refuseOrParse(raw: unknown, s: InboxState): MessageRequest & { text: string } {
  const parsed = messageRequestSchema.safeParse(raw);
  if (!parsed.success)
    throw new Error(
      parsed.error.issues.map((i) => `${i.path.join('.') || '(message)'}: ${i.message}`).join('; '),
    );
  const req = parsed.data;
  if (s.known(req.messageId)) return req;
  if (s.closed || isTerminal(s.phase)) throw new Error(closedRefusal(s.ending ?? s.phase));
  if (s.stop)
    throw new Error(
      `the run is ${s.phase} (${s.stop.terminalState} ${s.stop.reason}): it waits for an operator, not a ` +
        `person; a message cannot resume it (an operator can: agentctl resume / approvals)`,
    );
  if (req.close) return req;
  const max = s.settings.maxMessageChars;
  if (req.text.trim() === '')
    throw new Error(`empty message: a message needs 1 to ${max} characters of text`);
  if (req.text.length > max)
    throw new Error(
      `message is ${req.text.length} characters; the limit is ${max} (conversation.maxMessageChars)`,
    );
  // Bounded always: while the agent waits, the queue is taken at once (at least one message fits).
  const cap = s.waiting ? Math.max(1, s.settings.queueLimit) : s.settings.queueLimit;
  if (s.queued >= cap)
    throw new Error(
      `the agent is ${s.waiting ? 'taking the messages already sent' : 'working'} and ${s.queued} message(s) ` +
        `already wait for it (the queue limit is ${s.settings.queueLimit}): send again once it turns to you`,
    );
  return req;
}
