/**
 * What an LLM run does with a reply that has no tool call (docs/spec.md §7.7): it is
 * not completion. Only the finishing tool (a tool whose result is `terminal`, the demo's
 * `complete_task`) completes a run. A text reply is answered with a note — what the model
 * said, that nothing ran, how to finish or go on — up to the run's `textReplyLimit` times in a
 * row; the next one ends the run PARTIAL `model_stopped` with the text as its final message.
 * A reply cut off at its output limit (after the planner asked once more with twice the limit)
 * never runs and stops the run NEEDS_HUMAN `model_output_truncated`. Runs recorded before
 * this change replay as they ran (patch `llm-text-reply-not-completion-v1`); scripted runs
 * never give a text reply. Workflow code.
 */
import { DEFAULT_TEXT_REPLY_LIMIT } from '../common/contracts';
import type { ModelNudge, PlannerTurn } from '../common/planner';
import { redactText } from '../common/redact';
import { GuardReason, TerminalState } from '../guard';
import type { RunState } from './run-state';

/** How much of the model's text goes into a note or a trace record. */
const QUOTE_CHARS = 400;

/** A planner turn that ended without a call. */
export type FinishTurn = Extract<PlannerTurn, { type: 'finish' }>;

/**
 * What a text reply means for the run: `complete` (a planner that finishes on purpose, or a
 * run recorded before this change), `again` (the model is told and asked again) or `stopped`
 * (the stop is in force).
 */
export type TextEnd = 'complete' | 'again' | 'stopped';

/** The text replies of one run (their count is per workflow execution: bounded, not persisted). */
export class TextReplies {
  /** Text replies in a row since the model's last tool call. */
  private inRow = 0;
  /** What the next planner turn tells the model (null: nothing to tell). */
  nudge: ModelNudge | null = null;

  constructor(private readonly run: RunState) {}

  /** The model proposed a call: the count starts again. */
  onCall(): void {
    this.inRow = 0;
    this.nudge = null;
  }

  /** A resume or a stop: the next turn is asked afresh, without a note. */
  forget(): void {
    this.nudge = null;
  }

  /** Decides what a `finish` turn means (see {@link TextEnd}). */
  onFinish(turn: FinishTurn): TextEnd {
    const run = this.run;
    if (run.input.planner.kind === 'scripted' || turn.ended === undefined) return 'complete';
    const said = turn.summary;
    const quoted = said.length > QUOTE_CHARS ? `${said.slice(0, QUOTE_CHARS)}…` : said;
    const why = turn.finishReason ? `finish reason ${turn.finishReason}` : 'no finish reason';
    this.nudge = null;
    // The turn consumed the last observation: the next one answers no call.
    run.observation = null;
    if (turn.ended === 'truncated') {
      run.runtimeStop(
        GuardReason.MODEL_OUTPUT_TRUNCATED,
        TerminalState.NEEDS_HUMAN,
        GuardReason.MODEL_OUTPUT_TRUNCATED,
        `the model's reply was cut off at its output-token limit (${why}), also when asked again with ` +
          `twice planner.maxTokens: nothing in it ran`,
      );
      this.finalMessage(said);
      return 'stopped';
    }
    const limit = run.input.textReplyLimit ?? DEFAULT_TEXT_REPLY_LIMIT;
    if (this.inRow < limit) {
      this.inRow += 1;
      this.nudge = { said: quoted, left: limit - this.inRow };
      // A clear outcome in the trace: the reply, and that nothing ran.
      run.note('text_reply', turn.ended === 'other' ? `no_tool_call (${why})` : 'no_tool_call', {
        args: { said: redactText(quoted), left: limit - this.inRow },
      });
      return 'again';
    }
    run.runtimeStop(
      GuardReason.MODEL_STOPPED,
      TerminalState.PARTIAL,
      GuardReason.MODEL_STOPPED,
      `the model replied ${this.inRow + 1} times in a row without a tool call (${why}) and never called ` +
        `the finishing tool: the task was not declared done`,
    );
    this.finalMessage(said);
    return 'stopped';
  }

  /** The model's last text: the run's summary and the StopReport's `final_message`. */
  private finalMessage(text: string): void {
    const stop = this.run.stopInForce;
    if (!stop) return;
    const message = redactText(text);
    stop.detail = message;
    stop.report = { ...stop.report, final_message: message };
  }
}
