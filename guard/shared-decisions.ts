/**
 * The loop guard's decisions without per-call data (guard/loop-guard.ts), as shared frozen
 * objects: the hot path allocates nothing.
 */
export const EXECUTE = Object.freeze({ decision: 'execute', honouredPoll: false } as const);
export const EXECUTE_HONOURED = Object.freeze({ decision: 'execute', honouredPoll: true } as const);
export const CACHED = Object.freeze({ decision: 'return_cached_success', honouredPoll: false } as const);
export const CACHED_HONOURED = Object.freeze({
  decision: 'return_cached_success',
  honouredPoll: true,
} as const);
export const COMPLETE = Object.freeze({ decision: 'complete' } as const);
