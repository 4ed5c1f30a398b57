/**
 * A tool error its tool did not declare, as an LLM run's model receives it (
 * docs/spec.md §2.2 "Tool errors in an LLM run"): FATAL `tool_error` becomes PRECONDITION
 * `tool_error` whose `unmet` is the error's text, redacted (common/redact.ts) and cut to
 * {@link MAX_TOOL_ERROR_CHARS}. Pure: the runtime (tools/tool-errors.ts), the offline replay at
 * the `llm` profile and a fixture-mode script at it make the same result of the same error.
 */
import { redactText } from '../common/redact';
import { ResultCode } from './reasons';
import type { ToolResult } from './schemas';

/** The most characters of a tool error's text that reach the model, the trace or the ledger. */
export const MAX_TOOL_ERROR_CHARS = 2000;

/** A tool error's text as the model may see it: secrets redacted, cut to {@link MAX_TOOL_ERROR_CHARS}. */
export function modelErrorText(text: string): string {
  return redactText(text, MAX_TOOL_ERROR_CHARS);
}

/**
 * `result` as the model gets it when it is FATAL `tool_error` (an undeclared error): PRECONDITION
 * `tool_error` with `text` (default: the result's message); any other result unchanged.
 */
export function toolErrorToModel(result: ToolResult, text?: string): ToolResult {
  if (result.kind !== 'FATAL' || result.code !== ResultCode.TOOL_ERROR) return result;
  const raw = text ?? result.message ?? '';
  return { kind: 'PRECONDITION', code: ResultCode.TOOL_ERROR, unmet: modelErrorText(raw || 'tool error') };
}
