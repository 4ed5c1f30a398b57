/**
 * What a stop names and what an approval binds (docs/spec.md "Signed approvals"): the blocked call,
 * and the approval stop a verified resume lifts — pending until its blocked call runs or the run
 * stops again, the one stop whose approval the plan activity may offer and runTool may use.
 * Workflow code: deterministic, no I/O.
 */
import { GuardReason, ResultCode } from '../guard';
import type { Stop } from './resume-check';

/** The call a stop names. */
export interface BlockedCall {
  readonly tool: string;
  readonly fingerprint: string;
  /** The call's digest (`sha256:…`) the plan activity computed: what an approval binds. */
  readonly argsDigest?: string;
  readonly args?: unknown;
}

/** The approval stop a lift leaves pending (until its blocked call runs or the run stops). */
export interface ApprovalStop {
  readonly stopRef: string;
  readonly fingerprint: string;
  /** The blocked call's digest; absent on stops recorded before approvals bound it. */
  readonly argsDigest?: string;
}

/** Stop reasons an approval lifts (the stops `agentctl approvals approve` binds to). */
const APPROVAL_STOPS: ReadonlySet<string> = new Set([
  GuardReason.APPROVAL_REQUIRED,
  ResultCode.APPROVAL_INVALID,
]);

/** The approval stop a lift leaves pending: its ref and blocked call; null for any other stop. */
export function approvalStopOf(stop: Stop | null): ApprovalStop | null {
  const ref = stop?.report.last_safe_checkpoint;
  const call = stop?.report.blocked_call;
  return stop && ref && call && APPROVAL_STOPS.has(stop.reason)
    ? {
        stopRef: ref,
        fingerprint: call.fingerprint,
        ...(call.args_digest ? { argsDigest: call.args_digest } : {}),
      }
    : null;
}
