/**
 * The built-in finishing tool: an LLM run completes only when a tool returns
 * `{ terminal: true }` (docs/spec.md §7.12), so every worker offers one. `openWorkerDeps`
 * registers `complete_task` beside the user's tools unless they bring their own of that name
 * (which replaces it) or name another (`finishingTool`). docs/own-agent.md "How the run finishes".
 */
import { z } from 'zod';
import { FINISHING_TOOL } from '../planners/model-nudge';
import { defineTool, type AnyTool } from './define-tool';

export { FINISHING_TOOL };

/** Options of {@link finishingTool}. */
export interface FinishingToolOptions {
  /** The tool's name (default `complete_task`). */
  readonly name?: string;
  /** What the model is told the tool is for. */
  readonly description?: string;
}

const finishArgs = z.object({ summary: z.string().min(1).max(4000) }).strict();

/**
 * The finishing tool: a read whose result `{ summary }` is terminal, so the run ends COMPLETED
 * with the model's summary as its result. `finishingTool({ name: 'done' })` renames it.
 */
export function finishingTool(o: FinishingToolOptions = {}): AnyTool {
  return defineTool({
    name: o.name ?? FINISHING_TOOL,
    description:
      o.description ??
      'Call this when the goal is met, with a short summary of what you did. It ends the run; nothing else finishes it.',
    effect: 'read',
    schema: finishArgs,
    execute: (args) => ({ data: { summary: args.summary }, terminal: true }),
  });
}
