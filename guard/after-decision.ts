/**
 * `after()` rule 5 (docs/spec.md §3): what a result kind asks for when no rule stopped the run.
 * Decisions without per-call data are shared frozen objects: the hot path allocates nothing.
 */
import type { ResultKind } from './constants';
import { GuardSequenceError, type AfterResult, type StopDecision } from './guard-types';
import type { ToolResult } from './schemas';

const CONTINUE = Object.freeze({ decision: 'continue' } as const);
const NEEDS_CHANGE = Object.freeze({ decision: 'needs_changed_precondition' } as const);

/** `after()` rule 5: what the result kind asks for when nothing stopped the run. */
export function afterDecision(kind: ResultKind, result: ToolResult): Exclude<AfterResult, StopDecision> {
  switch (kind) {
    case 'SUCCESS':
      return CONTINUE;
    case 'RETRYABLE':
      return withWait('retry_after_backoff', result);
    case 'PENDING':
      return withWait('wait_bounded', result);
    case 'PRECONDITION':
      return NEEDS_CHANGE;
    default:
      throw new GuardSequenceError(`unhandled result kind ${String(kind)}`);
  }
}

function withWait(
  decision: 'retry_after_backoff' | 'wait_bounded',
  result: ToolResult,
): Exclude<AfterResult, StopDecision> {
  const retryAfterMs = 'retryAfterMs' in result ? result.retryAfterMs : undefined;
  return retryAfterMs === undefined ? { decision } : { decision, retryAfterMs };
}
