/**
 * A guarded write on the worker, the parts every engine shares: the approval a gated call
 * uses up before it runs ({@link useApproval}), and what the ledger's answer to `executeOnce`
 * means as a tool result ({@link ledgerResult}). An `agentRun` tool
 * (activities/run/run-tool-activity.ts) returns that result to its workflow; an AI SDK or
 * OpenAI Agents write (worker/ledger-writes.ts) throws it as the activity failure
 * ({@link asActivityFailure}) the workflow's guard reads back into the same result
 * (core/step.ts `classify`). So the same situation gives the same code, message, retry hint
 * and holder on every engine. Worker code.
 */
import { ApplicationFailure } from '@temporalio/common';
import { ResultCode, type ToolResult } from '../guard';
import type { ApprovalStore } from '../storage/approvals/approval-store';
import { settleAdvice, type ExecuteOutcome } from '../storage/ledger';
import { classifyError } from '../tools/classify';

/** How a call reached its result: ran now, answered from the ledger, settled by a probe, or not run. */
export type WriteVia = 'executed' | 'ledger' | 'reconciled' | 'not_run';

/** Who holds an operation key a call conflicted on. */
export interface KeyHolder {
  readonly runId: string | null;
  readonly tool: string;
}

/** A ledger outcome as a tool result. */
export interface LedgerResult {
  readonly result: ToolResult;
  readonly via: WriteVia;
  readonly holder?: KeyHolder;
}

/** What {@link useApproval} needs of the call about to run. */
export interface ApprovalUse {
  readonly tool: string;
  readonly runId: string;
  /** The call needs an approval (the tool's `requiresApproval`, the worker's policy). */
  readonly required: boolean;
  /** The approval the workflow says a verified resume accepted; null: none. */
  readonly approvalId: string | null;
  readonly stopRef: string | null;
  /** The call's fingerprint and args hash, computed on this worker (never taken from the caller). */
  readonly call: () => { readonly fingerprint: string; readonly argsHash: string };
  /** The activity's id and attempt: who uses the approval, and whether this is a retry of it. */
  readonly activityId: string;
  readonly attempt: number;
}

/**
 * Uses up the call's approval before it runs: single use, bound to the run, the stop and the
 * call's fingerprint and args hash. A call that needs one and has none is refused and audited
 * (the approval store's refusal row). Returns the refusal when the call must not run, null
 * when it may. Only a Temporal retry of this same activity may find the approval used by
 * itself (an activity run directly, outside Temporal, is never a retry).
 */
export async function useApproval(
  approvals: ApprovalStore | null,
  u: ApprovalUse,
): Promise<ToolResult | null> {
  const by = `${u.runId}/${u.activityId}`;
  if (u.approvalId === null) {
    if (!u.required) return null;
    await approvals?.refuse(u.runId, by, `${u.call().fingerprint}: ${u.tool} called without an approval`);
    return {
      kind: 'FATAL',
      code: ResultCode.APPROVAL_REQUIRED,
      message: `${u.tool} needs a person's approval of this exact call and none was given: it did not run`,
    };
  }
  if (!approvals) {
    return {
      kind: 'FATAL',
      code: ResultCode.APPROVAL_INVALID,
      message: `approval ${u.approvalId} cannot be checked: this worker has no approval store; ${u.tool} did not run`,
    };
  }
  const { fingerprint, argsHash } = u.call();
  const outcome = await approvals.consume({
    approvalId: u.approvalId,
    runId: u.runId,
    fingerprint,
    argsHash,
    stopRef: u.stopRef,
    by,
    retry: u.attempt > 1 && u.activityId !== 'direct',
  });
  if (outcome.ok) return null;
  return {
    kind: 'FATAL',
    code: ResultCode.APPROVAL_INVALID,
    message: `approval refused (${outcome.why}): ${outcome.message}; ${u.tool} did not run`,
  };
}

/**
 * The tool result of the ledger's answer. `executed` is the write's own result when it ran
 * now; `failure` the classified failure of its side effect when it threw (else the ledger's
 * stored message is classified).
 */
export function ledgerResult(
  outcome: ExecuteOutcome<unknown>,
  executed: ToolResult | null,
  failure: ToolResult | null,
  stored: (result: unknown) => ToolResult = (data) => ({ kind: 'SUCCESS', data }),
): LedgerResult {
  switch (outcome.kind) {
    case 'executed':
      return { result: executed ?? { kind: 'SUCCESS', data: outcome.result }, via: 'executed' };
    case 'cached':
      return {
        result: stored(outcome.result),
        via: outcome.source === 'reconcile' ? 'reconciled' : 'ledger',
      };
    case 'in_progress':
      return {
        result: { kind: 'RETRYABLE', code: ResultCode.IN_PROGRESS, retryAfterMs: outcome.retryAfterMs },
        via: 'not_run',
      };
    case 'unknown':
      return {
        result: {
          kind: 'FATAL',
          code: ResultCode.OUTCOME_UNKNOWN,
          message: `operation ${outcome.key}: the executor died after dispatch; ${settleAdvice(outcome.key)}`,
        },
        via: 'not_run',
      };
    case 'failed_final':
      return {
        result: {
          kind: 'FATAL',
          code: outcome.error.code ?? ResultCode.FAILED_FINAL,
          message: outcome.error.message,
        },
        via: outcome.replayed ? 'ledger' : 'executed',
      };
    case 'failed_retryable':
      return { result: failure ?? classifyError(new Error(outcome.error.message)), via: 'executed' };
    case 'conflict':
      return {
        result: { kind: 'FATAL', code: ResultCode.IDEMPOTENCY_CONFLICT, message: outcome.error.message },
        via: 'not_run',
        holder: { runId: outcome.error.storedRunId, tool: outcome.error.storedTool },
      };
  }
}

/**
 * A non-success tool result as the failure of a framework's write activity: its `type` the
 * result's kind and its first detail `{ code, unmet?, retryAfterMs?, holder? }`, which the
 * workflow's guard reads back into the same result (core/step.ts `classify`). A RETRYABLE one
 * is retried by Temporal after its `retryAfterMs`; any other is final.
 */
export function asActivityFailure(
  result: Exclude<ToolResult, { kind: 'SUCCESS' }>,
  holder?: KeyHolder,
): ApplicationFailure {
  const r = result as { code?: string; unmet?: string; retryAfterMs?: number; message?: string };
  const detail = {
    ...(r.code !== undefined ? { code: r.code } : {}),
    ...(r.unmet !== undefined ? { unmet: r.unmet } : {}),
    ...(r.retryAfterMs !== undefined ? { retryAfterMs: r.retryAfterMs } : {}),
    ...(holder ? { holder } : {}),
  };
  const retryable = result.kind === 'RETRYABLE';
  return ApplicationFailure.create({
    type: result.kind,
    message: r.message ?? r.unmet ?? `${result.kind}${r.code ? ` ${r.code}` : ''}`,
    details: [detail],
    nonRetryable: !retryable,
    ...(retryable && r.retryAfterMs !== undefined ? { nextRetryDelay: r.retryAfterMs } : {}),
  });
}
