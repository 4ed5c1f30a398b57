/**
 * Bounds on a proposed call's args, checked before anything recurses into them. The
 * guard's canonical form, the fingerprint, the SHA-256 args hash and zod all walk the
 * args recursively; a model (or a hostile tool output it echoes) can propose args deep
 * enough to overflow the stack or large enough to stall the worker. This check walks with
 * an explicit stack and stops at the first bound it passes, so it is itself bounded.
 */

/** Args nested deeper than this are refused (`invalid_args`). */
export const MAX_ARGS_DEPTH = 32;
/** Args whose JSON would be larger than this many bytes (UTF-16 units, close enough) are refused. */
export const MAX_ARGS_BYTES = 256 * 1024;

/** Why args are out of bounds, or null when they are within them. */
export function argsOutOfBounds(
  args: unknown,
  limits: { maxDepth?: number; maxBytes?: number } = {},
): string | null {
  const maxDepth = limits.maxDepth ?? MAX_ARGS_DEPTH;
  const maxBytes = limits.maxBytes ?? MAX_ARGS_BYTES;
  let bytes = 0;
  const stack: Array<[unknown, number]> = [[args, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (typeof v === 'string') bytes += v.length + 2;
    else if (v === null || typeof v !== 'object') bytes += String(v).length;
    else {
      if (depth >= maxDepth) return `args too deep: nested more than ${maxDepth} levels`;
      bytes += 2;
      if (Array.isArray(v)) {
        for (const item of v) {
          if (++bytes > maxBytes) break;
          stack.push([item, depth + 1]);
        }
      } else {
        for (const k of Object.keys(v)) {
          if ((bytes += k.length + 4) > maxBytes) break;
          stack.push([(v as Record<string, unknown>)[k], depth + 1]);
        }
      }
    }
    // Checked as it grows, so a huge (or cyclic) value stops here instead of being walked whole.
    if (bytes > maxBytes) return `args too large: more than ${maxBytes} bytes of JSON`;
  }
  return null;
}
