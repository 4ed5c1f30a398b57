/**
 * @module approvals
 *
 * Approvals for high-risk calls (issue #10): which calls need one ({@link approvalRequired},
 * the worker's {@link ApprovalPolicy}), and the store that binds an approval to a run, a stop
 * and a call fingerprint, lets it be used once before it expires, and audits everything
 * append-only ({@link ApprovalStore}), and the signed form of a decision the worker verifies
 * against its operators ({@link approvalSignedFields}, {@link approvalVerifier}). Operators use
 * `agentctl approvals`; docs/security.md.
 */
export { ApprovalError, ApprovalInputError, ApprovalStoreUnavailableError } from './errors';
export { ApprovalStore, DEFAULT_APPROVAL_TTL_MS, MAX_APPROVAL_TTL_MS } from './approval-store';
export type { AuditOptions, ListApprovalsOptions, UsableQuery } from './types';
export {
  approvalRequired,
  NO_APPROVAL_POLICY,
  parseApprovalPolicy,
  RISK_LEVELS,
  riskOf,
  type ApprovalPolicy,
  type RiskLevel,
} from './policy';
export { parseTtl } from './ttl';
export {
  APPROVAL_ID_PREFIX,
  approvalSignedFields,
  approvalVerifier,
  DENIAL_ID_PREFIX,
  type ApprovalDecision,
} from './verify';
export { AUDIT_ACTIONS } from './types';
export type {
  ApprovalRecord,
  ApprovalState,
  ApprovalTarget,
  ApprovalVerifier,
  AuditAction,
  AuditEntry,
  ConsumeInput,
  ConsumeOutcome,
  Decider,
  DenyInput,
  GrantInput,
  RefusalWhy,
  SignedDecision,
  SignedGrant,
  StopCheck,
} from './types';
