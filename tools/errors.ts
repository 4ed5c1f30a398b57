/**
 * Errors a tool may throw to say precisely what kind of failure it hit. Anything else
 * is classified by {@link classifyError}: network / 5xx / 429 → RETRYABLE, 401/403 →
 * FATAL `permission_denied`, zod failure → PRECONDITION `invalid_args`.
 */
import { AgentLoopGuardError } from '../common/errors';
import { ResultCode } from '../guard';

/**
 * Base class of tool-raised errors; `code` becomes the result's code (a result code such as
 * `transient` or `permission_denied`, given by the tool), so it is this error's stable code too.
 */
export class ToolError extends AgentLoopGuardError {
  constructor(
    message: string,
    readonly code: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** A transient failure: try again after `retryAfterMs` (server-given when known). */
export class RetryableToolError extends ToolError {
  constructor(
    message: string,
    code = 'transient',
    readonly retryAfterMs?: number,
    options?: ErrorOptions,
  ) {
    super(message, code, options);
  }
}

/** Something must change in the world before this call can succeed. */
export class PreconditionToolError extends ToolError {
  constructor(
    readonly unmet: string,
    code = 'precondition_failed',
    options?: ErrorOptions,
  ) {
    super(unmet, code, options);
  }
}

/** No retry can help: permission, policy or an unrecoverable fault. */
export class FatalToolError extends ToolError {
  constructor(message: string, code: string = ResultCode.FATAL, options?: ErrorOptions) {
    super(message, code, options);
  }
}
