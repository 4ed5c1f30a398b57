/**
 * The worker-side activities a framework guard calls (worker/guard-activities.ts
 * `guardActivities` registers them): the operator check, the resume verification, the call
 * digest an approval binds, the spend gate and the gate's refusal audit. The gate itself is the
 * core's (core/gate.ts), the same as an `agentRun`'s. Workflow code.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { VerifyInput, VerifyOutput } from '../activities/types';
import type { RefusalAudit } from './resume-check';
import type { VerifyOperatorInput } from '../operators/activities';
import type { SpendActivities } from '../worker/spend-types';

/** What the worker's `agentLoopGuardVerifyResume` answers: the agentRun verdict, and the approval it found. */
export interface GuardVerifyOutput extends VerifyOutput {
  /** The approval that lifts an approval stop (consumed by the write when it runs). */
  readonly approvalId?: string | null;
}

/** The guard's worker-side activities (worker/guard-activities.ts `guardActivities`). */
export interface GuardActivities extends SpendActivities {
  agentLoopGuardVerifyOperator(input: VerifyOperatorInput): Promise<{ ok: boolean; detail: string }>;
  agentLoopGuardVerifyResume(input: VerifyInput): Promise<GuardVerifyOutput>;
  agentLoopGuardCallDigest(input: { runId: string; tool: string; input: unknown }): Promise<string>;
  /**
   * The gate's refusal audit (storage/approvals/refusal-audit.ts `refusalAuditor`). Optional in
   * the type so a worker built before it still compiles; a worker without it logs each refusal
   * it could not audit (core/resume-check.ts `audit`).
   */
  agentLoopGuardAuditRefusal?(input: RefusalAudit): Promise<void>;
}

/** The guard's activities, proxied: short, few retries (a refusal, never a failed run). */
export function guardActivityProxy(): Required<GuardActivities> {
  return proxyActivities<Required<GuardActivities>>({
    startToCloseTimeout: '30 seconds',
    retry: { maximumAttempts: 3, initialInterval: '200 milliseconds' },
  });
}
