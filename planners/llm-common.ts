/**
 * The turn engine both LLM planners share: the conversation (in the conversation store,
 * the memory holding only a reference to it), the observation → tool-result
 * text (observation-text.ts), the queue of parallel calls, the compaction that keeps every
 * request within the model's context window (compaction.ts), and one model request once
 * every call of the last reply has its result (both APIs reject a request before that). A
 * provider supplies only a {@link ProviderAdapter}: its message format and its request.
 * Every request passes the request gate (request-gate.ts); the final word after a stop is
 * final-word.ts.
 */
import type { Observation, PlannerInput, PlannerOutput, ToolDescriptor } from '../common/planner';
import { NO_USAGE } from '../common/planner';
import type { Usage } from '../guard/schemas';
import { activityLog } from '../activities/activity-context';
import { compactMessages, runStateNote } from './compaction';
import { TIGHTER } from './context-window';
import {
  ContextExhaustedError,
  ContextLengthExceededError,
  PlannerProtocolError,
  UnreadableReplyError,
} from './errors';
import { assertRequestRoom, assertTimeForLarger, turnStart } from './turn-policy';
import { NOT_EXECUTED_CONTENT, observationContent } from './observation-text';
import type { ReplyFinish } from './model-nudge';
import { appendUserTurn, dropStaleQueue } from './user-turn';
import { finalWord } from './final-word';
import { gatedRequest, type RequestGate } from './request-gate';
import {
  loadMemory,
  saveConversation,
  type ConversationRefMemory,
  type LlmProvider,
  type PendingCall,
} from './llm-memory';

export { compactMessages, runStateNote } from './compaction';
export { DEFAULT_MAX_OBSERVATION_CHARS, NOT_EXECUTED_CONTENT, observationContent } from './observation-text';
export type { ConversationMemory, ConversationRefMemory, PendingCall } from './llm-memory';
export { FINISHING_TOOL, finishOf, nudgeText, type ReplyFinish } from './model-nudge';

export { LLM_PROVIDERS, type LlmProvider } from './llm-memory';
export { CONTINUE_PROMPT } from './user-turn';
export { FINAL_WORD_MAX_TOKENS, finalWordPrompt } from './final-word';
export type { GatedCall, RequestGate } from './request-gate';

// ---------------------------------------------------------------------------------
// Tool schemas.
// ---------------------------------------------------------------------------------

/** JSON Schema for a provider: no `$schema` keyword, and always an object at the top. */
export function toolParameters(tool: ToolDescriptor): Record<string, unknown> {
  const { $schema: _ignored, ...schema } = tool.inputSchema;
  return { ...schema, type: 'object' };
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
  /**
   * How the reply ended: `done` (the wire's normal ends: stop, tool calls),
   * `truncated` (the output-token limit cut it: `length`, `max_tokens`), `other` (any other
   * finish reason, one the wire does not know included). Absent: `done`.
   */
  readonly finish?: ReplyFinish;
  /** The wire's own finish reason, as it came (null: none given). */
  readonly finishReason?: string | null;
}

/** What one request may change of the spec's settings. */
export interface RequestOptions {
  /** The reply's output-token limit for this request (default: the spec's `maxTokens`). */
  readonly maxTokens?: number;
  /** `none`: the tools stay declared (the conversation holds tool calls) but may not be called. */
  readonly toolChoice?: 'none';
}

/** The provider-specific half of a planner: its message format and its request. */
export interface ProviderAdapter<M> {
  readonly provider: LlmProvider;
  /** A user message with plain text (the goal, or {@link CONTINUE_PROMPT}). */
  userMessage(text: string): M;
  /** Appends the result of `call` to the conversation (`isError` for non-SUCCESS kinds). */
  appendToolResult(messages: M[], call: PendingCall, content: string, isError: boolean): void;
  /**
   * Appends user text after tool results (the final word): a wire whose results are a user
   * message (Anthropic) adds it to that message; default a user message of its own.
   */
  appendUserText?(messages: M[], text: string): void;
  /** Whether `message` came from the model (then a user turn must follow before a request). */
  isAssistant(message: M): boolean;
  /** Sends the conversation and returns the model's reply. */
  request(messages: readonly M[], options?: RequestOptions): Promise<ModelReply<M>>;
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
  /** The spec's output-token limit: a truncated reply is asked again with twice it. */
  readonly maxTokens?: number;
  /**
   * The characters of conversation a final word may carry (after a money stop: what the run's
   * tokens and cost have left, planners/call-ceiling.ts `finalWordRoomChars`); default `budgetChars`.
   */
  readonly finalWordChars?: number;
}

/**
 * How often a reply cut off by its output-token limit is asked again in the same turn, each
 * time with twice the limit; after that the turn ends `truncated` and nothing of
 * the cut reply runs.
 */
export const TRUNCATED_RETRIES = 1;

/** The sum of two usages. */
function plus(a: Usage, b: Usage): Usage {
  return { tokens: a.tokens + b.tokens, costUsd: a.costUsd + b.costUsd };
}

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
  maxTokens?: number,
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
      return await gatedRequest(adapter, request, gate, maxTokens);
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

  if (input.finalWord) return finalWord(input, adapter, options, messages, loaded, remember);
  if (input.resumeNote) dropStaleQueue(adapter, messages, loaded.queue);
  if (isNonEmpty(loaded.queue)) return handOut(loaded.queue, NO_USAGE);
  appendUserTurn(adapter, messages, input);

  // Every reply's usage is the turn's, a truncated one's included.
  let usage: Usage = NO_USAGE;
  // One request policy across attempts (turn-policy.ts).
  const start = await turnStart(input, options.maxTokens);
  if (start.truncated) return truncatedTurn(usage, await remember(null, []));
  let maxTokens = start.maxTokens;
  let sent = start.sent;
  for (let asked = start.asked; ; asked++) {
    assertRequestRoom(sent);
    sent += 1;
    let reply: ModelReply<M>;
    const startedMs = Date.now();
    try {
      reply = await askWithin(
        adapter,
        input,
        messages,
        loaded.hidden,
        options.budgetChars,
        options.gate as RequestGate<M> | undefined,
        maxTokens,
      );
    } catch (err) {
      // An unreadable reply stops the turn: it carries the turn's whole usage (a cut reply before it too).
      if (err instanceof UnreadableReplyError && usage !== NO_USAGE)
        throw err.withUsage(plus(usage, err.usage));
      throw err;
    }
    usage = plus(usage, reply.usage);
    const finishReason = reply.finishReason ?? undefined;
    if (reply.finish === 'truncated') {
      // Cut off by its output limit: never final, and a cut-off tool call never runs. The cut
      // reply stays out of the conversation; the same request is asked again with a larger limit.
      if (asked < TRUNCATED_RETRIES && options.maxTokens !== undefined) {
        const limit = maxTokens ?? options.maxTokens;
        maxTokens = limit * 2;
        // Only when the attempt's time left can hold it; else the next attempt asks.
        assertTimeForLarger(input, Date.now() - startedMs, limit, maxTokens);
        activityLog(
          'warn',
          `the ${adapter.provider} model's reply was cut off at its output limit; asking again`,
          {
            finishReason,
            maxTokens,
            droppedCalls: reply.calls.length,
          },
        );
        continue;
      }
      return truncatedTurn(usage, await remember(null, []), reply.text, finishReason);
    }
    messages.push(reply.message);
    if (isNonEmpty(reply.calls)) return handOut(reply.calls, usage);
    return {
      turn: {
        type: 'finish',
        summary: reply.text,
        usage,
        ended: reply.finish === 'other' ? 'other' : 'text',
        ...(finishReason ? { finishReason } : {}),
      },
      memory: await remember(null, []),
    };
  }
}

/** A turn whose reply was cut off at its output limit, also when asked again: nothing of it runs. */
function truncatedTurn(usage: Usage, memory: unknown, summary = '', finishReason?: string): PlannerOutput {
  return {
    turn: { type: 'finish', summary, usage, ended: 'truncated', ...(finishReason ? { finishReason } : {}) },
    memory,
  };
}

function isNonEmpty<T>(items: T[]): items is [T, ...T[]] {
  return items.length > 0;
}
