/**
 * The final word: after the loop guard stops a run, one last request with tool use off and a
 * small output limit asks the model to tell its user what it did, what it found and what is
 * left. It is not a turn of the loop (nothing it proposes runs) and the room it may use is what
 * the stop left (planners/call-ceiling.ts), so it lives apart from the turn engine
 * (llm-common.ts), which hands a turn here when the input asks for a final word.
 */
import type { PlannerInput, PlannerOutput } from '../common/planner';
import { compactMessages, runStateNote } from './compaction';
import { ContextExhaustedError } from './errors';
import type { ProviderAdapter, TurnOptions } from './llm-common';
import type { Loaded, PendingCall } from './llm-memory';
import { NOT_EXECUTED_CONTENT } from './observation-text';
import { gatedRequest, type RequestGate } from './request-gate';

/** The output limit of a final word: a few sentences. */
export const FINAL_WORD_MAX_TOKENS = 256;

/** What the model is asked for its final word. */
export function finalWordPrompt(reason: string): string {
  return (
    `The run has been stopped by its loop guard (${reason}); no more tools will run. In a few ` +
    `sentences, tell the user what you did, what you found, and what is left to do.`
  );
}

/**
 * The final word: every call still queued is answered NOT_EXECUTED, the model is
 * asked, with tool use off and {@link FINAL_WORD_MAX_TOKENS}, to tell its user what it did; any
 * call in its reply is ignored (nothing runs after a stop).
 */
export async function finalWord<M>(
  input: PlannerInput,
  adapter: ProviderAdapter<M>,
  options: TurnOptions,
  messages: M[],
  loaded: Loaded<M>,
  remember: (awaiting: PendingCall | null, queue: PendingCall[]) => Promise<unknown>,
): Promise<PlannerOutput> {
  for (const call of loaded.queue) adapter.appendToolResult(messages, call, NOT_EXECUTED_CONTENT, true);
  const prompt = finalWordPrompt(input.finalWord?.reason ?? 'stopped');
  if (adapter.appendUserText) adapter.appendUserText(messages, prompt);
  else messages.push(adapter.userMessage(prompt));
  const room = options.finalWordChars;
  const request = compactMessages(
    messages,
    loaded.hidden,
    room === undefined ? options.budgetChars : Math.min(options.budgetChars, room),
    (m) => adapter.isAssistant(m),
    (omitted) => adapter.userMessage(`${input.goal}\n\n${runStateNote(input.facts, omitted)}`),
  );
  if (request === null)
    throw new ContextExhaustedError(
      room === undefined || room >= options.budgetChars
        ? 'the final word does not fit the context window'
        : `the final word does not fit the ${room} characters the run's budget left it`,
    );
  const gate = options.gate as RequestGate<M> | undefined;
  const reply = await gatedRequest(adapter, request, gate, FINAL_WORD_MAX_TOKENS, 'none');
  messages.push(reply.message);
  return {
    turn: { type: 'finish', summary: reply.text, usage: reply.usage, ended: 'text' },
    memory: await remember(null, []),
  };
}
