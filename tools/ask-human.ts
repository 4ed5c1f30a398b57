/**
 * The built-in `ask_human` tool (docs/spec.md §7.16): offered to the model of a
 * conversation run only. It is validated and fingerprinted here like any tool, but it never
 * runs in an activity: the workflow waits for the person's message, which is its result.
 */
import { ResultCode } from '../guard';
import { ASK_HUMAN_DESCRIPTION, ASK_HUMAN_TOOL, askHumanArgsSchema } from '../common/conversation-run';
import { defineTool } from './define-tool';

/** `ask_human` as a tool definition (its execute is never called: the workflow waits). */
export const askHumanTool = defineTool({
  name: ASK_HUMAN_TOOL,
  description: ASK_HUMAN_DESCRIPTION,
  schema: askHumanArgsSchema,
  effect: 'read',
  execute: () => ({
    kind: 'FATAL',
    code: ResultCode.FATAL,
    message: 'ask_human is answered by the person through the workflow, not as an activity',
  }),
});
