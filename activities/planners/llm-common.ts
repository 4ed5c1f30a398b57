/**
 * The turn engine both LLM planners share: the JSON-safe conversation memory, the
 * observation → tool-result text, the queue of parallel calls, and one model request
 * once every call of the last reply has its result (both APIs reject a request before
 * that). A provider supplies only a {@link ProviderAdapter}: its message format and
 * its request.
 */
import { z } from 'zod';
import type { Observation, PlannerInput, PlannerOutput, ToolDescriptor } from '../../common/planner';
import { NO_USAGE } from '../../common/planner';
import type { Usage } from '../../guard/schemas';
import { PlannerProtocolError } from './errors';

/** The LLM providers with a planner. */
export const LLM_PROVIDERS = ['anthropic', 'openai'] as const;
/** One of {@link LLM_PROVIDERS}. */
export type LlmProvider = (typeof LLM_PROVIDERS)[number];

// ---------------------------------------------------------------------------------
// Observations → tool-result text.
// ---------------------------------------------------------------------------------

/** Default cap on the length of one tool-result text. */
export const DEFAULT_MAX_OBSERVATION_CHARS = 20_000;

/**
 * The tool-result text the model reads: compact JSON with `kind`, then `code`,
 * `unmet`, `retryAfterMs`, `cached` and `data` when present. Data whose JSON is longer
 * than `maxChars` is replaced by a `data_preview` prefix and `data_truncated: true`.
 */
export function observationContent(obs: Observation, maxChars = DEFAULT_MAX_OBSERVATION_CHARS): string {
  const out: Record<string, unknown> = { kind: obs.kind };
  if (obs.code !== undefined) out.code = obs.code;
  if (obs.unmet !== undefined) out.unmet = obs.unmet;
  if (obs.retryAfterMs !== undefined) out.retryAfterMs = obs.retryAfterMs;
  if (obs.cached) out.cached = true;
  if (obs.data !== undefined) {
    const data = JSON.stringify(obs.data) ?? null;
    if (data !== null && data.length > maxChars) {
      out.data_truncated = true;
      out.data_preview = data.slice(0, maxChars);
    } else {
      out.data = obs.data;
    }
  }
  return JSON.stringify(out);
}

/**
 * The tool-result text for a call the runtime never answered: the planner was asked
 * for another turn with no observation (e.g. after a resume from a guard stop). Both
 * APIs demand a result for every call, and the guard's reasons are not the model's
 * business (docs/spec.md §2: a stop is not an observation), so the model learns only this.
 */
export const NOT_EXECUTED_CONTENT = JSON.stringify({
  kind: 'NOT_EXECUTED',
  unmet: 'the runtime did not execute this call',
});

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
 * The planner's memory: plain JSON, stored by the workflow between turns. It holds
 * the conversation in the provider's own message format, the call handed to the
 * runtime last turn (`awaiting`) and the remaining calls of the same reply (`queue`).
 */
export interface ConversationMemory<M> {
  readonly v: 1;
  readonly provider: LlmProvider;
  readonly messages: M[];
  readonly awaiting: PendingCall | null;
  readonly queue: PendingCall[];
}

const pendingCallSchema = z.object({ id: z.string(), tool: z.string(), args: z.unknown() });
const memorySchema = z.object({
  v: z.literal(1),
  provider: z.enum(LLM_PROVIDERS),
  messages: z.array(z.record(z.string(), z.unknown())),
  awaiting: pendingCallSchema.nullable(),
  queue: z.array(pendingCallSchema),
});

function loadMemory<M>(raw: unknown, provider: LlmProvider): ConversationMemory<M> {
  if (raw === null || raw === undefined) return { v: 1, provider, messages: [], awaiting: null, queue: [] };
  const parsed = memorySchema.safeParse(raw);
  if (!parsed.success)
    throw new PlannerProtocolError(
      `the ${provider} planner cannot read this memory: ${parsed.error.issues[0]?.message}`,
    );
  if (parsed.data.provider !== provider) {
    throw new PlannerProtocolError(
      `memory belongs to the ${parsed.data.provider} planner, not the ${provider} planner`,
    );
  }
  // A deep copy: the caller's memory object is never mutated.
  return JSON.parse(JSON.stringify(parsed.data)) as ConversationMemory<M>;
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
 * One planner turn, provider-independent:
 * 1. the observation (or, if none came, a NOT_EXECUTED marker) becomes the result of
 *    the awaited call;
 * 2. a queued call of the same reply is handed out next, without a request (usage 0);
 * 3. otherwise every call has its result and the model is asked again; its first tool
 *    call is returned and the rest are queued, or its text is the final answer.
 */
export async function runTurn<M>(
  input: PlannerInput,
  adapter: ProviderAdapter<M>,
  maxObservationChars: number,
): Promise<PlannerOutput> {
  const memory = loadMemory<M>(input.memory, adapter.provider);
  const { messages } = memory;
  answerAwaited(adapter, messages, memory.awaiting, input.observation, maxObservationChars);

  const remember = (awaiting: PendingCall | null, queue: PendingCall[]): ConversationMemory<M> => ({
    v: 1,
    provider: adapter.provider,
    messages,
    awaiting,
    queue,
  });
  const handOut = ([next, ...rest]: [PendingCall, ...PendingCall[]], usage: Usage): PlannerOutput => ({
    turn: { type: 'call', tool: next.tool, args: next.args, callId: next.id, usage },
    memory: remember(next, rest),
  });

  if (isNonEmpty(memory.queue)) return handOut(memory.queue, NO_USAGE);

  const last = messages[messages.length - 1];
  if (last === undefined) messages.push(adapter.userMessage(input.goal));
  else if (adapter.isAssistant(last)) messages.push(adapter.userMessage(CONTINUE_PROMPT));

  const reply = await adapter.request(messages);
  messages.push(reply.message);
  if (isNonEmpty(reply.calls)) return handOut(reply.calls, reply.usage);
  return { turn: { type: 'finish', summary: reply.text, usage: reply.usage }, memory: remember(null, []) };
}

function isNonEmpty<T>(items: T[]): items is [T, ...T[]] {
  return items.length > 0;
}
