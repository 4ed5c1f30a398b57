/**
 * The stop in force (docs/spec.md §7) of a guarded run on any engine: what stopped it, its
 * StopReport, the call it names; and what an approval binds (docs/spec.md "Signed approvals"):
 * the approval stop a verified resume lifts — pending until its blocked call runs or the run
 * stops again, the one stop whose approval the next call of that tool may use.
 * Workflow code: deterministic, no I/O.
 */
import { GuardReason, ResultCode, type StopReport, type TerminalState } from '../guard';

/** The stop in force. */
export interface Stop {
  readonly terminalState: TerminalState;
  readonly reason: string;
  /** Mutable only for the model's final message (workflows/text-replies.ts). */
  report: StopReport;
  readonly blockedTool: string | null;
  /** The args of the call that ended the run, so resume can re-check that call's precondition. */
  readonly blockedArgs: unknown;
  readonly operationKey: string | null;
  /** The FATAL message behind the stop, if any (RunResult.summary; not in the StopReport). */
  detail: string | null;
  /**
   * The stopped call is still in flight and waits for its approval where it is (a framework
   * whose tool call cannot be re-proposed, e.g. the AI SDK's execute): the lift hands it the
   * approval instead of resuming the guard (core/run.ts `lift`).
   */
  readonly inFlight?: boolean;
}

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
