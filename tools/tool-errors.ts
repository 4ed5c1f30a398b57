/**
 * Tool errors an LLM run hands back to its model (docs/spec.md §2.2 "Tool errors in
 * an LLM run"). A failure the tool did not declare — a plain `throw new Error(…)`, an error of a
 * library the tool called, an MCP `isError` result without `onError` — is the model's to handle:
 * it becomes PRECONDITION `tool_error` whose `unmet` is the error's text, cut to
 * {@link MAX_TOOL_ERROR_CHARS} and redacted (guard/tool-error.ts), so the model can change course
 * and the guard counts it (an identical failing call retried with nothing changed is
 * `precondition_unchanged`: steered, then stopped). What a tool declares stays as declared: a
 * `FatalToolError` (any `ToolError`), a returned FATAL, `permission_denied`, `policy_blocked`,
 * and every fault of the infrastructure.
 */
import { toolErrorToModel, type ToolResult } from '../guard';
import { ToolError } from './errors';

export { MAX_TOOL_ERROR_CHARS, modelErrorText } from '../guard';

/**
 * `result` (the classification of `thrown`; null when nothing was thrown) as an LLM run's model
 * receives it: an undeclared FATAL `tool_error` becomes PRECONDITION `tool_error` with the
 * error's own text; a `ToolError` the tool threw, and anything else, is returned unchanged.
 */
export function undeclaredToModel(result: ToolResult, thrown: unknown): ToolResult {
  if (thrown instanceof ToolError) return result; // declared by the tool (FatalToolError & co)
  // The error's own text when there is one (the classified message is cut short for traces).
  return toolErrorToModel(result, thrown instanceof Error ? thrown.message : undefined);
}
