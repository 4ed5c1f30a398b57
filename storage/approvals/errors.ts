/** Errors of the approval store (storage/approvals). */
import { AgentLoopGuardError } from '../../common/errors';

/** Base class of every approval error. */
export class ApprovalError extends AgentLoopGuardError {
  readonly code: string = 'approval_error';
}

/** Bad input to the store or the policy (an empty actor, a TTL that is no duration, a bad policy). */
export class ApprovalInputError extends ApprovalError {
  override readonly code: string = 'approval_invalid_input';
}

/** The ledger the store was asked to live beside is not a SQL ledger (it has no database to share). */
export class ApprovalStoreUnavailableError extends ApprovalError {
  override readonly code: string = 'approval_store_unavailable';
}
