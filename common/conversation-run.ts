/**
 * A conversation is one durable run (docs/spec.md §7.16): the contract of a run
 * started with `conversation` — its settings, the built-in `ask_human` tool, the `message`
 * update a person sends, the `conversation` query that reads what the agent said, and the
 * state a conversation carries across continue-as-new. Sandbox-safe: the workflow, the plan
 * activity and the client read it.
 */
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import { z } from 'zod';

/**
 * The `AgentState` search attribute of a conversation while its agent waits for the person:
 * the console and `agentctl list --state` tell these runs from those waiting for an operator.
 */
export const WAITING_FOR_PERSON = 'WAITING_FOR_PERSON';

/** The built-in tool a model asks its person with (offered only in a conversation). */
export const ASK_HUMAN_TOOL = 'ask_human';

/** `ask_human` args (strict: anything else is `invalid_args`, and nothing waits). */
export const askHumanArgsSchema = z
  .object({
    /** What the model asks the person: shown to them as it is. */
    question: z.string().min(1).max(4000),
  })
  .strict();

/** What `ask_human` says to a planner (the model sees this description and the args' schema). */
export const ASK_HUMAN_DESCRIPTION =
  'Ask the person you are talking to a question and wait for their answer (their message is ' +
  "this call's result). Use it when you need something only they can give: an id, a choice, a " +
  'confirmation. A plain text reply also goes to them and waits for their answer.';

/** How long a conversation waits for the person before it ends `conversation_idle` by default (24 h). */
export const DEFAULT_IDLE_TIMEOUT_MS = 24 * 3600 * 1000;
/** The longest message a person may send by default (characters). */
export const DEFAULT_MAX_MESSAGE_CHARS = 4000;
/** How many messages may wait while the agent works, by default. */
export const DEFAULT_QUEUE_LIMIT = 10;

/** RunInput `conversation`: the run is a conversation with a person. */
export const conversationSettingsSchema = z
  .object({
    /** How long the run waits for the person's next message before it ends PARTIAL `conversation_idle`. */
    idleTimeoutMs: z
      .number({ error: 'conversation.idleTimeoutMs must be a number of milliseconds' })
      .int('conversation.idleTimeoutMs must be a whole number of milliseconds')
      .min(1000, 'conversation.idleTimeoutMs must be at least 1000 (1 s)')
      .max(90 * 24 * 3600 * 1000, 'conversation.idleTimeoutMs must be at most 90 days')
      .default(DEFAULT_IDLE_TIMEOUT_MS),
    /** The longest message a person may send (characters); a longer one is refused with the limit. */
    maxMessageChars: z.number().int().min(1).max(100_000).default(DEFAULT_MAX_MESSAGE_CHARS),
    /** Messages that may wait while the agent works; one more is refused until it turns to the person. */
    queueLimit: z.number().int().min(0).max(100).default(DEFAULT_QUEUE_LIMIT),
  })
  .strict();
/** Conversation settings with defaults filled. */
export type ConversationSettings = z.output<typeof conversationSettingsSchema>;

/** Payload of the `message` update: a person's message (or their close). */
export const messageRequestSchema = z
  .object({
    /** The message; may be empty only with `close`. */
    text: z.string().default(''),
    /** Idempotency id: a message sent again with the same id is answered as before, applied once. */
    messageId: z.string().min(1, 'messageId is required').max(200),
    /** Who wrote it (shown in the transcript; carries no authority). */
    from: z.string().max(200).optional(),
    /** Ends the conversation: the run ends PARTIAL `conversation_closed` (COMPLETED only by the finishing tool). */
    close: z.boolean().default(false),
  })
  .strict();
/** A person's message as a caller writes it. */
export type MessageRequest = z.input<typeof messageRequestSchema>;

/** What the run does with a message it took. A refusal is the update's validator failing (nothing recorded). */
export interface MessageAnswer {
  readonly accepted: boolean;
  /**
   * `answer`: the agent was waiting for it, it goes to the model now; `queued`: the agent is
   * working, the model reads it when it next turns to the person; `closing`: the conversation
   * ends. A message sent again with the same messageId gets its first answer (applied once).
   */
  readonly action: 'answer' | 'queued' | 'closing';
  readonly reason: string;
  /** The message's place in the transcript. */
  readonly seq: number;
  /** For `queued`: its place in the queue (1 = next). */
  readonly position?: number;
}

/** One line of the conversation between the agent and its person. */
export interface TranscriptEntry {
  /** 1, 2, 3, … across the whole conversation (continue-as-new included). */
  readonly seq: number;
  readonly from: 'agent' | 'person';
  /** `question` (ask_human), `reply` (a text reply), `message`, `close`, `end` (the run's last word). */
  readonly kind: 'question' | 'reply' | 'message' | 'close' | 'end';
  /** Redacted as the trace is. */
  readonly text: string;
  /** Workflow time, ms since the epoch. */
  readonly atMs: number;
  /** The person's name when they gave one. */
  readonly by?: string;
  /**
   * A person's `message` only, in views: `queued` (waiting for the model), `read`
   * (handed to the model) or `not_read` (the run ended before the model read it: it never will).
   */
  readonly delivery?: MessageDelivery;
}

/** What became of a person's message: {@link TranscriptEntry.delivery}. */
export type MessageDelivery = 'queued' | 'read' | 'not_read';

/** How a conversation ended, in the run's own words: its terminal state and reason, not Temporal's status. */
export interface ConversationEnding {
  /** The run's terminal state (`COMPLETED`, `PARTIAL`, …). */
  readonly state: string;
  /** The stop's reason (`conversation_idle`, `conversation_closed`, …); null for COMPLETED. */
  readonly reason: string | null;
  /** `COMPLETED` or `PARTIAL conversation_idle`: what a refusal and `status` quote. */
  readonly as: string;
}

/** The run's ending as refusals and views quote it: `COMPLETED`, `PARTIAL conversation_idle`. */
export function conversationEnding(state: string, reason: string | null): ConversationEnding {
  const why = state === 'COMPLETED' ? null : reason;
  return { state, reason: why, as: why ? `${state} ${why}` : state };
}

/** The refusal of a message to an ended conversation, in the run's words (docs/spec.md §7.16). */
export function closedRefusal(ending: string): string {
  return `the conversation is closed (run ${ending}): start a new conversation`;
}

/** What the `conversation` query answers. */
export interface ConversationView {
  /** False once the run closed the conversation (ended, closed, idle). */
  readonly open: boolean;
  /** What the agent waits on: its question or reply, and since when; null while it works. */
  readonly waiting: {
    readonly kind: 'question' | 'reply';
    readonly text: string;
    readonly sinceMs: number;
  } | null;
  /** Messages taken while the agent worked, not yet read by the model (0 once the run ended: see `notRead`). */
  readonly queued: number;
  /** Messages the run ended without reading: taken, never handed to the model. */
  readonly notRead: number;
  /** How the run ended, in its own words; null while it runs (or waits for an operator). */
  readonly ended: ConversationEnding | null;
  readonly queueLimit: number;
  readonly maxMessageChars: number;
  /** Times the agent turned to the person; messages the person sent (taken). */
  readonly turns: number;
  readonly received: number;
  /** The newest seq in the transcript (0: empty). */
  readonly lastSeq: number;
  /** The transcript entries after `after` that the run still holds (the newest 200). */
  readonly entries: readonly TranscriptEntry[];
}

/** What `status` says of a conversation run (RunStatus `conversation`). */
export type ConversationStatus = Pick<
  ConversationView,
  'open' | 'waiting' | 'queued' | 'turns' | 'received' | 'notRead' | 'ended'
>;

/** Arguments of the `conversation` query. */
export interface ConversationQueryArgs {
  /** Only entries with a seq above this (default 0: all the run holds). */
  readonly after?: number;
}

/** The `message` update: a person's message to a conversation run. */
export const messageUpdate = defineUpdate<MessageAnswer, [MessageRequest]>('message');
/** The `conversation` query: the transcript and what the agent waits on. */
export const conversationQuery = defineQuery<ConversationView, [ConversationQueryArgs?]>('conversation');

/** What the agent waits on (carried across continue-as-new and stops). */
export type PendingTurn =
  | {
      readonly kind: 'question';
      readonly callId: string | null;
      readonly text: string;
      readonly sinceMs: number;
    }
  | { readonly kind: 'reply'; readonly text: string; readonly sinceMs: number };

/** A message taken while the agent worked. */
export interface QueuedMessage {
  readonly seq: number;
  readonly text: string;
}

/** A conversation's state in a checkpoint (sealed with it; docs/spec.md §7.16). */
export interface ConversationCheckpoint {
  readonly v: 1;
  readonly pending: PendingTurn | null;
  readonly queue: QueuedMessage[];
  /** Answers of the newest message ids (a message sent again across continue-as-new is applied once). */
  readonly answered: Array<[string, MessageAnswer]>;
  readonly transcript: TranscriptEntry[];
  readonly seq: number;
  readonly turns: number;
  readonly received: number;
  /** The person's message delivered after a text reply that no plan has taken yet. */
  readonly unread?: string;
}

const answerSchema = z
  .object({
    accepted: z.boolean(),
    action: z.enum(['answer', 'queued', 'closing']),
    reason: z.string(),
    seq: z.number().int().nonnegative(),
    position: z.number().int().positive().optional(),
  })
  .strict();
const entrySchema = z
  .object({
    seq: z.number().int().positive(),
    from: z.enum(['agent', 'person']),
    kind: z.enum(['question', 'reply', 'message', 'close', 'end']),
    text: z.string(),
    atMs: z.number(),
    by: z.string().optional(),
  })
  .strict();

/** The shape of {@link ConversationCheckpoint} (checked by `openCheckpoint` with the rest). */
export const conversationCheckpointSchema = z
  .object({
    v: z.literal(1),
    pending: z
      .union([
        z
          .object({
            kind: z.literal('question'),
            callId: z.string().nullable(),
            text: z.string(),
            sinceMs: z.number(),
          })
          .strict(),
        z.object({ kind: z.literal('reply'), text: z.string(), sinceMs: z.number() }).strict(),
      ])
      .nullable(),
    queue: z.array(z.object({ seq: z.number().int().positive(), text: z.string() }).strict()).max(100),
    answered: z.array(z.tuple([z.string(), answerSchema])).max(1000),
    transcript: z.array(entrySchema).max(1000),
    seq: z.number().int().nonnegative(),
    turns: z.number().int().nonnegative(),
    received: z.number().int().nonnegative(),
    unread: z.string().optional(),
  })
  .strict();
