/**
 * How an LLM reply ended and what the model is told after a reply without a tool call:
 * a text reply is not completion, only the finishing tool is.
 */
import { FINISHING_TOOL, type ModelNudge, type ToolDescriptor } from '../common/planner';

/** The finishing tool (common/planner.ts), here for the planners that import it from this module. */
export { FINISHING_TOOL };

/** See {@link ModelReply.finish}. */
export type ReplyFinish = 'done' | 'truncated' | 'other';

/** How a wire's finish reason reads: `done` for `normal`, `truncated` for `truncated`, else `other`. */
export function finishOf(
  reason: string | null | undefined,
  normal: readonly string[],
  truncated: readonly string[],
): ReplyFinish {
  if (reason === null || reason === undefined || normal.includes(reason)) return 'done';
  return truncated.includes(reason) ? 'truncated' : 'other';
}

/** How much of a text reply a nudge quotes back to the model. */
const NUDGE_QUOTE_CHARS = 400;

/**
 * The user message after a reply with no tool call: what the model said, that no
 * tool ran and the task is not done, how to finish or go on, and how many more such replies
 * the run takes.
 */
export function nudgeText(nudge: ModelNudge, tools: readonly ToolDescriptor[]): string {
  const said = nudge.said.trim();
  const quoted =
    said === ''
      ? 'Your last reply was empty'
      : `Your last reply was text only: "${said.length > NUDGE_QUOTE_CHARS ? `${said.slice(0, NUDGE_QUOTE_CHARS)}…` : said}"`;
  const names = tools.map((t) => t.name);
  const finish = names.includes(FINISHING_TOOL)
    ? `If the task is done, call the ${FINISHING_TOOL} tool with a summary of what you did`
    : 'If the task is done, call the tool that completes it';
  const left =
    nudge.left > 0
      ? `${nudge.left} more ${nudge.left === 1 ? 'reply' : 'replies'} without a tool call and the run ends unfinished.`
      : 'The next reply without a tool call ends the run unfinished.';
  return (
    `${quoted}. It had no tool call, so no tool ran and the task is not finished. ${finish}; ` +
    `otherwise call one of the tools (${names.join(', ') || 'none offered'}) to go on. ` +
    `Tool calls go in the tool-call field, not in text or a code block. ${left}`
  );
}
