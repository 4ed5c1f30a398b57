/** Errors of the tenant spend limit (storage/spend). */
import { AgentLoopGuardError } from '../../common/errors';

/** Base class of the spend store's errors. */
export class SpendError extends AgentLoopGuardError {
  readonly code: string = 'spend_error';
}

/**
 * `AGENT_SPEND_LIMITS` (or the limits given in code) is not valid: the worker refuses to
 * start, and the message names the variable and the field.
 */
export class SpendLimitsInvalidError extends SpendError {
  override readonly code: string = 'spend_limits_invalid';
}

/** Bad input to the spend store (a raise with a negative cap, an unknown tenant name …). */
export class SpendInputError extends SpendError {
  override readonly code: string = 'spend_invalid_input';
}

/**
 * The spend store's database could not be reached: the plan activity turns it into a
 * `LedgerUnavailable` failure, so after its retries the run stops `infrastructure_fault`.
 */
export class SpendStoreUnavailableError extends SpendError {
  override readonly code: string = 'spend_store_unavailable';
}
