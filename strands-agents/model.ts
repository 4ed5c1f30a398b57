/**
 * The model gate of the Strands guard (strands-agents/index.ts): the agent's model (the
 * integration's `TemporalModel`, whose `stream` schedules the model activity) wrapped so that
 * each call first passes the run's stops and budgets and the tenant spend limit, carries the
 * accepted resumes' notes, and is charged at its usage after. Workflow code: the SDK's classes
 * are reached through the instances the agent already holds, never imported.
 */
import type { Message, Model, ModelStreamEvent, StreamOptions } from '@strands-agents/sdk';
import { requestBytesOf } from '../common/price';
import { GuardReason } from '../guard';
import type { FrameworkGuard } from '../core/framework-guard';
import { GUARDED } from '../core/framework-types';

/** The SDK's `Message` class, as an instance of it shows it (its static `fromMessageData`). */
interface MessageClass {
  fromMessageData(data: { role: 'user' | 'assistant'; content: unknown[] }): Message;
}

/** The `Message` class of the SDK copy that made `messages` (the user's bundle's), or null. */
export function messageClassOf(messages: readonly unknown[]): MessageClass | null {
  for (const m of messages) {
    const ctor = (m as { constructor?: unknown } | null)?.constructor as Partial<MessageClass> | undefined;
    if (ctor && typeof ctor.fromMessageData === 'function') return ctor as MessageClass;
  }
  return null;
}

/** The events of a model reply whose only content is `text`, as a provider streams it. */
function textReply(text: string): ModelStreamEvent[] {
  return [
    { type: 'modelMessageStartEvent', role: 'assistant' },
    { type: 'modelContentBlockStartEvent' },
    { type: 'modelContentBlockDeltaEvent', delta: { type: 'textDelta', text } },
    { type: 'modelContentBlockStopEvent' },
    { type: 'modelMessageStopEvent', stopReason: 'endTurn' },
    { type: 'modelMetadataEvent', usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 } },
  ] as unknown as ModelStreamEvent[];
}

/**
 * Wraps `model.stream` (once): before each call the run's budgets (`mayCallModel`) and, with
 * `spend`, a reservation under the tenant's limit; a call that may not run is not scheduled and
 * answers the guard's note as the model's text, so the SDK's loop ends there. The workflow's
 * cancel signal is left out of the call's options: an `AbortSignal` does not survive the
 * activity's payload (it arrives as `{}`, and the SDK's OpenAI provider then fails every
 * attempt before it sends anything). Each reply's usage is charged to the budgets.
 */
export function gateModel(model: Model, modelName: string, guard: FrameworkGuard): void {
  const marked = model as unknown as Record<symbol, unknown>;
  if (marked[GUARDED] === true) return;
  Object.defineProperty(model, GUARDED, { value: true, enumerable: false });
  const call = model.stream.bind(model);
  const spend = guard.modelSpend();
  const refused = (): ModelStreamEvent[] =>
    textReply(
      `The run was stopped by the loop guard (${guard.stopped?.reason ?? GuardReason.SPEND_LIMIT}); the model was not called.`,
    );
  model.stream = async function* (
    messages: Message[],
    options?: StreamOptions,
  ): AsyncGenerator<ModelStreamEvent, void, undefined> {
    // An operator's stop accepted since the last call stops the run before this one.
    guard.applyHeldStop();
    if (!guard.mayCallModel()) return yield* refused();
    const given: Record<string, unknown> = { ...(options ?? {}) };
    delete given.cancelSignal;
    const Msg = messageClassOf(messages);
    const sent = Msg
      ? guard.weaveResumeNotes(messages, (text) => Msg.fromMessageData({ role: 'user', content: [{ text }] }))
      : messages;
    let ticket: Awaited<ReturnType<NonNullable<typeof spend>['before']>> | undefined;
    if (spend) {
      const bytes = requestBytesOf([options?.systemPrompt ?? null, sent, options?.toolSpecs ?? []]);
      ticket = await spend.before(modelName, bytes, undefined);
      if (ticket === null) return yield* refused();
    }
    let usage: { inputTokens: number; outputTokens: number } | undefined;
    for await (const event of call(sent, given as StreamOptions)) {
      if (event.type === 'modelMetadataEvent' && event.usage) usage = event.usage;
      yield event;
    }
    if (usage) guard.chargeTokens(usage.inputTokens, usage.outputTokens);
    if (spend && ticket) await spend.after(ticket, usage);
    // An operator's stop accepted meanwhile ends the loop before its next call.
    guard.applyHeldStop();
  };
}
