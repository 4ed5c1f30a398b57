/**
 * The LLM planners' memory: the conversation inline (v1) or a reference into the
 * conversation store (v2), with the call awaiting its result and the queue of the rest of
 * the same reply; read at the start of a turn and written at its end (llm-common.ts).
 */
import { z } from 'zod';
import type { ConversationRef, StoredMessage } from '../common/conversation';
import type { PlannerInput } from '../common/planner';
import { PlannerProtocolError } from './errors';
/**
 * The LLM planner kinds, each with its own message format in the memory: the two
 * hand-written wires and the AI SDK's `ModelMessage` (planners/ai-sdk.ts).
 */
export const LLM_PROVIDERS = ['anthropic', 'openai', 'ai-sdk'] as const;
/** One of {@link LLM_PROVIDERS}. */
export type LlmProvider = (typeof LLM_PROVIDERS)[number];

/** A tool call the model proposed and the runtime has not answered yet. */
export interface PendingCall {
  /** The provider's id (`tool_use.id`, `tool_calls[].id`), echoed as `Observation.callId`. */
  readonly id: string;
  readonly tool: string;
  readonly args: unknown;
}

/**
 * The planner's memory, version 1 (runs started before conversation stores, and planners given no
 * conversation store): the whole conversation inline, in the provider's message format.
 */
export interface ConversationMemory<M> {
  readonly v: 1;
  readonly provider: LlmProvider;
  readonly messages: M[];
  readonly awaiting: PendingCall | null;
  readonly queue: PendingCall[];
}

/**
 * The planner's memory, version 2: a reference into the conversation store — a few hundred
 * bytes in workflow history whatever the conversation's length — plus the call handed to
 * the runtime last turn (`awaiting`) and the remaining calls of the same reply (`queue`).
 */
export interface ConversationRefMemory {
  readonly v: 2;
  readonly provider: LlmProvider;
  readonly ref: ConversationRef;
  readonly awaiting: PendingCall | null;
  readonly queue: PendingCall[];
}

const pendingCallSchema = z.object({ id: z.string(), tool: z.string(), args: z.unknown() });
const memoryV1Schema = z.object({
  v: z.literal(1),
  provider: z.enum(LLM_PROVIDERS),
  messages: z.array(z.record(z.string(), z.unknown())),
  awaiting: pendingCallSchema.nullable(),
  queue: z.array(pendingCallSchema),
});
const memoryV2Schema = z.object({
  v: z.literal(2),
  provider: z.enum(LLM_PROVIDERS),
  ref: z.object({
    conversation: z.string().min(1),
    length: z.number().int().nonnegative(),
    hash: z.string().nullable(),
    chars: z.number().int().nonnegative(),
  }),
  awaiting: pendingCallSchema.nullable(),
  queue: z.array(pendingCallSchema),
});
const memorySchema = z.discriminatedUnion('v', [memoryV1Schema, memoryV2Schema]);

/** The conversation as one turn sees it. */
export interface Loaded<M> {
  /** The messages this turn can see: all of them, or the newest ones within the budget. */
  readonly messages: M[];
  /** The stored rows behind `messages` (same order); empty for an inline (v1) conversation. */
  readonly stored: readonly StoredMessage[];
  /** Where the stored conversation stood (null: not stored yet). */
  readonly ref: ConversationRef | null;
  /** Messages of the conversation not in `messages` (older than the loaded tail). */
  readonly hidden: number;
  readonly awaiting: PendingCall | null;
  readonly queue: PendingCall[];
}

export async function loadMemory<M>(
  input: PlannerInput,
  provider: LlmProvider,
  budgetChars: number,
): Promise<Loaded<M>> {
  const raw = input.memory;
  if (raw === null || raw === undefined) {
    return { messages: [], stored: [], ref: null, hidden: 0, awaiting: null, queue: [] };
  }
  const parsed = memorySchema.safeParse(raw);
  if (!parsed.success)
    throw new PlannerProtocolError(
      `the ${provider} planner cannot read this memory: ${parsed.error.issues[0]?.message}`,
    );
  const memory = parsed.data;
  if (memory.provider !== provider) {
    throw new PlannerProtocolError(
      `memory belongs to the ${memory.provider} planner, not the ${provider} planner`,
    );
  }
  // Deep copies: the caller's memory object is never mutated.
  const awaiting = memory.awaiting ? structuredClone(memory.awaiting) : null;
  const queue = structuredClone(memory.queue);
  if (memory.v === 1) {
    const messages = structuredClone(memory.messages) as M[];
    return { messages, stored: [], ref: null, hidden: 0, awaiting, queue };
  }
  if (!input.conversations) {
    throw new PlannerProtocolError(
      `this memory refers to conversation ${memory.ref.conversation} in a conversation store, and this planner has none`,
    );
  }
  const stored = await input.conversations.tail(memory.ref, budgetChars);
  return {
    messages: stored.map((m) => m.message as M),
    stored,
    ref: memory.ref,
    hidden: memory.ref.length - stored.length,
    awaiting,
    queue,
  };
}

/**
 * Writes what this turn changed to the store and returns the new reference (the run's own
 * conversation: a conversation carried in from another run is continued under this run's
 * id, so its retention follows this run). Without a store, null (the memory stays inline).
 */
export async function saveConversation<M>(
  input: PlannerInput,
  loaded: Loaded<M>,
  messages: M[],
): Promise<ConversationRef | null> {
  const store = input.conversations;
  if (!store) return null;
  const conversation = input.runId;
  const { stored, ref } = loaded;
  const own = ref !== null && ref.conversation === conversation;
  // The first message this turn changed or added; the ones before it are already stored.
  let k = 0;
  if (own) {
    while (k < stored.length && k < messages.length && JSON.stringify(messages[k]) === stored[k]!.json)
      k += 1;
    if (k === messages.length && k === stored.length) return ref;
  }
  const first = stored[k];
  const after = first
    ? { hash: first.parentHash, position: first.position, chars: first.charsBefore }
    : ref
      ? { hash: ref.hash, position: ref.length, chars: ref.chars }
      : { hash: null, position: 0, chars: 0 };
  return store.append(conversation, after, messages.slice(k));
}
