/**
 * The user message a planner turn adds before it asks the model: the goal on the first turn;
 * after the model's own reply, the person's message (a conversation), a nudge, or the continue
 * prompt; and, after an accepted resume, the runtime's note of what changed first
 * (core/resume-note.ts), also when the conversation ends with the refused call's result.
 */
import type { PlannerInput } from '../common/planner';
import type { ProviderAdapter } from './llm-common';
import type { PendingCall } from './llm-memory';
import { nudgeText } from './model-nudge';
import { NOT_EXECUTED_CONTENT } from './observation-text';

/** Text sent when the planner is asked again after the model already gave its answer. */
export const CONTINUE_PROMPT = 'Continue working on the goal.';

/**
 * After a resume, the calls still queued from the reply before the stop were planned on what
 * the model knew then: each is answered as not run, and the model is asked afresh with the note.
 */
export function dropStaleQueue<M>(adapter: ProviderAdapter<M>, messages: M[], queue: PendingCall[]): void {
  for (const call of queue) adapter.appendToolResult(messages, call, NOT_EXECUTED_CONTENT, true);
  queue.splice(0);
}

/** Appends this turn's user message to `messages`, when the turn has one. */
export function appendUserTurn<M>(adapter: ProviderAdapter<M>, messages: M[], input: PlannerInput): void {
  const last = messages[messages.length - 1];
  if (last === undefined) messages.push(adapter.userMessage(input.goal));
  else if (adapter.isAssistant(last)) messages.push(adapter.userMessage(userTurnText(input)));
  else if (input.resumeNote) {
    // The conversation ends with the refused call's result: the resume's note follows it.
    if (adapter.appendUserText) adapter.appendUserText(messages, input.resumeNote);
    else messages.push(adapter.userMessage(input.resumeNote));
  }
}

/** The user message after the model's last reply: the person's (a conversation), a nudge, or continue. */
function userTurnText(input: PlannerInput): string {
  const text =
    typeof input.userText === 'string' && input.userText !== ''
      ? input.userText
      : input.nudge
        ? nudgeText(input.nudge, input.tools)
        : CONTINUE_PROMPT;
  // An accepted resume's note comes first: the model reads what changed before it goes on.
  return input.resumeNote ? `${input.resumeNote}\n\n${text}` : text;
}
