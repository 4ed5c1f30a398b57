/**
 * The turn engine both LLM planners share: the conversation (in the conversation store,
 * the memory holding only a reference to it — issue 9), the observation → tool-result
 * text (observation-text.ts), the queue of parallel calls, the compaction that keeps every
 * request within the model's context window (compaction.ts), and one model request once
 * every call of the last reply has its result (both APIs reject a request before that). A
 * provider supplies only a {@link ProviderAdapter}: its message format and its request.
 */
import { z } from 'zod';
import type { ConversationRef, StoredMessage } from '../common/conversation';
import type { Observation, PlannerInput, PlannerOutput, ToolDescriptor } from '../common/planner';
import { NO_USAGE } from '../common/planner';
import type { Usage } from '../guard/schemas';
import { activityLog } from '../activities/activity-context';
import { compactMessages, runStateNote } from './compaction';
import { TIGHTER } from './context-window';
import { ContextExhaustedError, ContextLengthExceededError, PlannerProtocolError } from './errors';
import { NOT_EXECUTED_CONTENT, observationContent } from './observation-text';

export { compactMessages, runStateNote } from './compaction';
export { DEFAULT_MAX_OBSERVATION_CHARS, NOT_EXECUTED_CONTENT, observationContent } from './observation-text';

/**
 * The LLM planner kinds, each with its own message format in the memory: the two
 * hand-written wires and the AI SDK's `ModelMessage` (planners/ai-sdk.ts).
 */
export const LLM_PROVIDERS = ['anthropic', 'openai', 'ai-sdk'] as const;
/** One of {@link LLM_PROVIDERS}. */
export type LlmProvider = (typeof LLM_PROVIDERS)[number];

// ---------------------------------------------------------------------------------
// Tool schemas.
// ---------------------------------------------------------------------------------

/** JSON Schema for a provider: no `$schema` keyword, and always an object at the top. */
export function toolParameters(tool: ToolDescriptor): Record<string, unknown> {
  const { $schema: _ignored, ...schema } = tool.inputSchema;
  return { ...schema, type: 'object' };
}

// ---------------------------------------------------------------------------------
// Memory.
// ---------------------------------------------------------------------------------

/** A tool call the model proposed and the runtime has not answered yet. */
export interface PendingCall {
  /** The provider's id (`tool_use.id`, `tool_calls[].id`), echoed as `Observation.callId`. */
  readonly id: string;
  readonly tool: string;
  readonly args: unknown;
}

/**
 * The planner's memory, version 1 (runs started before issue 9, and planners given no
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
interface Loaded<M> {
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

async function loadMemory<M>(
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
async function saveConversation<M>(
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

// ---------------------------------------------------------------------------------
// The turn engine.
// ---------------------------------------------------------------------------------

/** What one model request produced. */
export interface ModelReply<M> {
  /** The assistant message as it goes back into the conversation. */
  readonly message: M;
  readonly calls: PendingCall[];
  /** The reply's text (the summary when there is no call). */
  readonly text: string;
  readonly usage: Usage;
}

/** The provider-specific half of a planner: its message format and its request. */
export interface ProviderAdapter<M> {
  readonly provider: LlmProvider;
  /** A user message with plain text (the goal, or {@link CONTINUE_PROMPT}). */
  userMessage(text: string): M;
  /** Appends the result of `call` to the conversation (`isError` for non-SUCCESS kinds). */
  appendToolResult(messages: M[], call: PendingCall, content: string, isError: boolean): void;
  /** Whether `message` came from the model (then a user turn must follow before a request). */
  isAssistant(message: M): boolean;
  /** Sends the conversation and returns the model's reply. */
  request(messages: readonly M[]): Promise<ModelReply<M>>;
}

/** How one turn may use the model. */
export interface TurnOptions {
  /** Observation text longer than this is cut. */
  readonly maxObservationChars: number;
  /** Characters of message JSON one request may carry (context-window.ts). */
  readonly budgetChars: number;
  /**
   * Called with each request just before it is sent (after compaction): it may refuse the
   * call by throwing (the run's budget or the tenant's spend limit cannot take its worst
   * case: llm-planner.ts), so the model is never asked; its answer is told how the call ended.
   */
  readonly gate?: RequestGate<unknown>;
}

/** What a {@link RequestGate} is told about the call it let through. */
export interface GatedCall {
  /** The model answered with this usage. */
  answered(usage: Usage): Promise<void>;
  /** The request failed with `err` (the model may or may not have billed it). */
  failed(err: unknown): Promise<void>;
}

/** Checks one request before it is sent; throws to refuse it (see {@link TurnOptions.gate}). */
export type RequestGate<M> = (request: readonly M[]) => Promise<GatedCall>;

/** Text sent when the planner is asked again after the model already gave its answer. */
export const CONTINUE_PROMPT = 'Continue working on the goal.';

function answers(obs: Observation, call: PendingCall): boolean {
  return obs.callId !== undefined ? obs.callId === call.id : obs.tool === call.tool;
}

/** Gives the awaited call its result: the observation, or NOT_EXECUTED when none came. */
function answerAwaited<M>(
  adapter: ProviderAdapter<M>,
  messages: M[],
  awaiting: PendingCall | null,
  observation: Observation | null,
  maxObservationChars: number,
): void {
  if (!awaiting) {
    if (observation) {
      throw new PlannerProtocolError(
        `observation for ${observation.tool} but no tool call is awaiting a result`,
      );
    }
    return;
  }
  if (!observation) {
    adapter.appendToolResult(messages, awaiting, NOT_EXECUTED_CONTENT, true);
    return;
  }
  if (!answers(observation, awaiting)) {
    throw new PlannerProtocolError(
      `observation for ${observation.tool} (${observation.callId ?? 'no call id'}) does not answer the awaited call ${awaiting.tool} (${awaiting.id})`,
    );
  }
  adapter.appendToolResult(
    messages,
    awaiting,
    observationContent(observation, maxObservationChars),
    observation.kind !== 'SUCCESS',
  );
}

/**
 * Asks the model with a request compacted to the budget; after a provider's
 * `context_length_exceeded`, once more compacted to {@link TIGHTER} of it. Throws
 * {@link ContextExhaustedError} when no request fits.
 */
async function askWithin<M>(
  adapter: ProviderAdapter<M>,
  input: PlannerInput,
  messages: readonly M[],
  hidden: number,
  budgetChars: number,
  gate: RequestGate<M> | undefined,
): Promise<ModelReply<M>> {
  const head = (omitted: number) =>
    adapter.userMessage(`${input.goal}\n\n${runStateNote(input.facts, omitted)}`);
  let budget = budgetChars;
  for (let attempt = 0; ; attempt++) {
    const request = compactMessages(messages, hidden, budget, (m) => adapter.isAssistant(m), head);
    if (request === null) {
      const newest = messages.length > 0 ? JSON.stringify(messages[messages.length - 1]).length : 0;
      throw new ContextExhaustedError(
        `the next ${adapter.provider} request does not fit the model's context window: ` +
          `${budget} characters for messages${attempt > 0 ? ' (the tighter retry)' : ''}, and the newest turn ` +
          `alone (the goal, the run-state note, the model's last message and what follows it) is larger ` +
          `(newest message ${newest} characters); raise planner.contextTokens or shrink the tool result`,
      );
    }
    try {
      return await gatedRequest(adapter, request, gate);
    } catch (err) {
      if (!(err instanceof ContextLengthExceededError)) throw err;
      if (attempt > 0) {
        throw new ContextExhaustedError(
          `the ${adapter.provider} model refused the request as too long twice, the second time compacted to ` +
            `${budget} characters of messages: ${err.message}`,
        );
      }
      const tighter = Math.floor(budget * TIGHTER);
      activityLog(
        'warn',
        `the ${adapter.provider} model refused a request as too long; retrying once compacted tighter`,
        {
          budgetChars: budget,
          retryBudgetChars: tighter,
        },
      );
      budget = tighter;
    }
  }
}

/** Sends one request through the gate: refused before it is sent, or told how it ended. */
async function gatedRequest<M>(
  adapter: ProviderAdapter<M>,
  request: readonly M[],
  gate: RequestGate<M> | undefined,
): Promise<ModelReply<M>> {
  if (!gate) return adapter.request(request);
  const call = await gate(request);
  let reply: ModelReply<M>;
  try {
    reply = await adapter.request(request);
  } catch (err) {
    await call.failed(err);
    throw err;
  }
  await call.answered(reply.usage);
  return reply;
}

/**
 * One planner turn, provider-independent:
 * 1. the conversation is read (from the store: only its newest messages within the budget);
 * 2. the observation (or, if none came, a NOT_EXECUTED marker) becomes the result of
 *    the awaited call;
 * 3. a queued call of the same reply is handed out next, without a request (usage 0);
 * 4. otherwise every call has its result and the model is asked again, with a request
 *    compacted to the context window; its first tool call is returned and the rest are
 *    queued, or its text is the final answer;
 * 5. what changed is appended to the store, and the memory refers to the new end.
 */
export async function runTurn<M>(
  input: PlannerInput,
  adapter: ProviderAdapter<M>,
  options: TurnOptions,
): Promise<PlannerOutput> {
  const loaded = await loadMemory<M>(input, adapter.provider, options.budgetChars);
  const messages = [...loaded.messages];
  answerAwaited(adapter, messages, loaded.awaiting, input.observation, options.maxObservationChars);

  const remember = async (awaiting: PendingCall | null, queue: PendingCall[]): Promise<unknown> => {
    const ref = await saveConversation(input, loaded, messages);
    if (ref === null) return { v: 1, provider: adapter.provider, messages, awaiting, queue };
    // The awaited call is answered by id and tool: its args (already in the turn) stay out of history.
    const answered = awaiting ? { id: awaiting.id, tool: awaiting.tool, args: null } : null;
    return {
      v: 2,
      provider: adapter.provider,
      ref,
      awaiting: answered,
      queue,
    } satisfies ConversationRefMemory;
  };
  const handOut = async (
    [next, ...rest]: [PendingCall, ...PendingCall[]],
    usage: Usage,
  ): Promise<PlannerOutput> => ({
    turn: { type: 'call', tool: next.tool, args: next.args, callId: next.id, usage },
    memory: await remember(next, rest),
  });

  if (isNonEmpty(loaded.queue)) return handOut(loaded.queue, NO_USAGE);

  const last = messages[messages.length - 1];
  if (last === undefined) messages.push(adapter.userMessage(input.goal));
  else if (adapter.isAssistant(last)) messages.push(adapter.userMessage(CONTINUE_PROMPT));

  const reply = await askWithin(
    adapter,
    input,
    messages,
    loaded.hidden,
    options.budgetChars,
    options.gate as RequestGate<M> | undefined,
  );
  messages.push(reply.message);
  if (isNonEmpty(reply.calls)) return handOut(reply.calls, reply.usage);
  return {
    turn: { type: 'finish', summary: reply.text, usage: reply.usage },
    memory: await remember(null, []),
  };
}

function isNonEmpty<T>(items: T[]): items is [T, ...T[]] {
  return items.length > 0;
}
