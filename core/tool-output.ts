/** What a guarded AI SDK tool call answers the model besides the tool's own output. Workflow code. */

/**
 * A tool's result with the guard's `no_progress` note, in a shape that keeps the result as the
 * tool gave it: a plain object gets a `guard` field (the note's text) beside its own fields;
 * anything else (an array, a string, a class instance, an object that has its own `guard`) is
 * wrapped as `{ result, guard }` (docs/ai-sdk.md).
 */
export function withGuardNote(output: unknown, note: string): unknown {
  if (typeof output === 'object' && output !== null && !Array.isArray(output) && !('guard' in output)) {
    const proto = Object.getPrototypeOf(output) as unknown;
    if (proto === Object.prototype || proto === null) return { ...output, guard: note };
  }
  return { result: output, guard: note };
}
