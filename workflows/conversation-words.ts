/**
 * What a conversation tells its person, as pure functions (docs/spec.md
 * §7.16): the answer to each message (never a read the run cannot give), the finishing call held
 * back for the person's messages, the run's ending in its own words and the `conversation`
 * view with each message's delivery. Workflow code (no I/O); workflows/conversation.ts holds
 * the state.
 */
import {
  conversationEnding,
  type ConversationEnding,
  type ConversationSettings,
  type ConversationView,
  type PendingTurn,
  type QueuedMessage,
  type TranscriptEntry,
} from '../common/conversation-run';
import type { Observation } from '../common/planner';
import type { RunPhase } from '../common/contracts';
import { redactText } from '../common/redact';
import { GuardReason, TerminalState } from '../guard';
import { isTerminal } from '../core/phase';

/** How much of a text a trace note or an answer quotes. */
export const QUOTE = 120;
/** Transcript entries a view holds at most. */
export const TRANSCRIPT_KEPT = 200;

/** `text` cut to `max` characters (with an ellipsis). */
export const cut = (text: string, max: number): string =>
  text.length > max ? `${text.slice(0, max)}…` : text;

/** The answer's reason for a message the waiting agent takes (`answer`). */
export function answerReason(p: PendingTurn, queued: number): string {
  return queued === 1
    ? `the agent was waiting for this: it goes to the model as your answer to its ${p.kind} "${cut(p.text, QUOTE)}"`
    : 'the agent was waiting: this goes to the model together with the message before it';
}

/** The end's words for a person's close (the unmet precondition of its StopReport). */
export function closedText(closing: { readonly text: string; readonly by: string | null } | null): string {
  const by = closing?.by ? ` (${closing.by})` : '';
  const last = closing?.text ? `: "${cut(redactText(closing.text), QUOTE)}"` : '';
  return `the person closed the conversation${by}${last}`;
}

/** The answer's reason for a close; the messages still queued are never read. */
export function closingReason(unread: number): string {
  return (
    'the conversation closes: the run ends PARTIAL conversation_closed' +
    (unread > 0 ? ` (${unread} queued message(s) will not be read)` : '')
  );
}

/**
 * What a queued message is told: never a read the run cannot give. While the
 * finishing tool runs, the run may complete without the model reading it; while another call
 * is in flight, that call might end the run too (a tool whose result is `terminal`). Either
 * way `replies` and `status` say `not read` afterwards. `finishing`: the worker's finishing
 * tool (`complete_task`, renamed or replaced), null while the run has not said.
 */
export function queuedReason(
  calling: string | null,
  finishing: string | null,
  position: number,
  limit: number,
): string {
  const at = `your message is queued (${position} of ${limit})`;
  const unless = '(if the run ends first, replies and status show it not read)';
  if (calling !== null && calling === finishing)
    return (
      `the agent is finishing (${finishing} is running): ${at}, but if the run completes now the ` +
      'model will not read it (replies and status then show it not read); if the run goes on, the ' +
      'model reads it when it next turns to you'
    );
  const working = calling ? `the agent is working (${calling} is running)` : 'the agent is working';
  const before = finishing ? `before it calls ${finishing}` : 'before it calls its finishing tool';
  return `${working}: ${at}; the model reads it when it next turns to you or ${before} ${unless}`;
}

/**
 * The result of a finishing call held back because the person wrote meanwhile: it
 * did not run; the messages are its `answer`, as `ask_human`'s would be.
 */
export function personWrote(
  callId: string | undefined,
  tool: string,
  taken: readonly QueuedMessage[],
): Observation {
  return {
    ...(callId ? { callId } : {}),
    tool,
    kind: 'PRECONDITION',
    code: 'person_wrote',
    unmet:
      `not run: the person wrote to you before you finished (${taken.length} message(s)); read them, ` +
      `answer them if they need it, then call ${tool} again when the conversation is done`,
    data: { answer: taken.map((m) => m.text).join('\n\n') },
  };
}

/**
 * How the conversation ended, in the run's own words: its terminal state and
 * reason once it ended, or the stop that ends it (idle or closed, between its stop and its
 * end), or the person's close not yet applied. Null while it goes on or waits for an operator.
 */
export function endingOf(
  phase: RunPhase,
  stop: { readonly terminalState: string; readonly reason: string } | null,
  closed: boolean,
  closing: boolean,
): ConversationEnding | null {
  if (isTerminal(phase)) return conversationEnding(phase, stop?.reason ?? null);
  if (closed && stop) return conversationEnding(stop.terminalState, stop.reason);
  if (closing) return conversationEnding(TerminalState.PARTIAL, GuardReason.CONVERSATION_CLOSED);
  return null;
}

/** The end entry's note of the messages the run ended without reading (empty when none). */
function notReadText(queue: readonly QueuedMessage[]): string {
  if (queue.length === 0) return '';
  return ` (${queue.length} message(s) of the person not read: ${queue.map((m) => `#${m.seq}`).join(', ')})`;
}

/** What the `conversation` view is built from. */
export interface ViewParts {
  readonly settings: ConversationSettings;
  readonly pending: PendingTurn | null;
  readonly queue: readonly QueuedMessage[];
  readonly transcript: readonly TranscriptEntry[];
  /** The conversation is over (closed, idle, or the run ended). */
  readonly over: boolean;
  /** The run's ending once it ended (null before). */
  readonly ended: ConversationEnding | null;
  readonly turns: number;
  readonly received: number;
  readonly seq: number;
  readonly nowMs: number;
}

/**
 * The `conversation` query's answer: each person's message with its delivery (`queued`,
 * `read`, or `not_read` once it is over), and an ended run's `end` entry in its own words.
 */
export function viewOf(v: ViewParts, after: number): ConversationView {
  const waitingSeqs = new Set(v.queue.map((m) => m.seq));
  const entries = v.transcript.map((e): TranscriptEntry =>
    e.from === 'person' && e.kind === 'message'
      ? { ...e, delivery: waitingSeqs.has(e.seq) ? (v.over ? 'not_read' : 'queued') : 'read' }
      : e,
  );
  let lastSeq = v.seq;
  const last = entries[entries.length - 1];
  if (v.ended && last?.kind === 'end')
    entries[entries.length - 1] = { ...last, text: `${last.text}${notReadText(v.queue)}` };
  // A run that ended without a word of the conversation's own (the finishing tool, a stop never
  // resumed) still says how: one `end` entry, from its terminal state and reason.
  else if (v.ended) {
    lastSeq += 1;
    const text = `the conversation ended: run ${v.ended.as}${notReadText(v.queue)}`;
    entries.push({ seq: lastSeq, from: 'agent', kind: 'end', text, atMs: v.nowMs });
  }
  const p = v.pending;
  return {
    open: !v.over,
    waiting: p && !v.over ? { kind: p.kind, text: p.text, sinceMs: p.sinceMs } : null,
    queued: v.over ? 0 : v.queue.length,
    notRead: v.over ? v.queue.length : 0,
    ended: v.ended,
    queueLimit: v.settings.queueLimit,
    maxMessageChars: v.settings.maxMessageChars,
    turns: v.turns,
    received: v.received,
    lastSeq,
    entries: entries.filter((e) => e.seq > after).slice(-TRANSCRIPT_KEPT),
  };
}
