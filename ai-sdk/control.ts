/**
 * The `resume` update of an AI SDK agent's guard (ai-sdk/agent-guard.ts): the same request
 * (common/contracts.ts `resumeUpdate`), the same checks (workflows/resume-check.ts: the operator's
 * signature and role, a raise only for the budget that stopped the run, the stop reason's lift
 * rule) and the same answers as an `agentRun`, verified by the worker's `guardActivities`
 * (ai-sdk/worker.ts) instead of an `agentRun` worker's activities. Workflow code.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { VerifyInput, VerifyOutput } from '../activities/types';
import {
  resumeRequestSchema,
  type ResumeAnswer,
  type ResumeRequest,
  type StopRequest,
} from '../common/contracts';
import type { LoopGuard } from '../guard';
import type { VerifyOperatorInput } from '../operators/activities';
import { ResumeCheck, type Stop } from '../workflows/resume-check';
import type { RunActivities } from '../workflows/run-activities';
import type { SpendActivities } from './spend';
import { GUARD_ACTIVITY } from './types';

/** What the worker's `agentLoopGuardVerifyResume` answers: the agentRun verdict, and the approval it found. */
export interface GuardVerifyOutput extends VerifyOutput {
  /** The approval that lifts an approval stop (consumed by the write when it runs). */
  readonly approvalId?: string | null;
}

/** The guard's worker-side activities (ai-sdk/worker.ts `guardActivities`). */
export interface GuardActivities extends SpendActivities {
  agentLoopGuardVerifyOperator(input: VerifyOperatorInput): Promise<{ ok: boolean; detail: string }>;
  agentLoopGuardVerifyResume(input: VerifyInput): Promise<GuardVerifyOutput>;
  agentLoopGuardCallDigest(input: { runId: string; tool: string; input: unknown }): Promise<string>;
}

/** The guard's activities, proxied: short, few retries (a refusal, never a failed run). */
export function guardActivityProxy(): GuardActivities {
  return proxyActivities<GuardActivities>({
    startToCloseTimeout: '30 seconds',
    retry: { maximumAttempts: 3, initialInterval: '200 milliseconds' },
  });
}

/** What the gate needs from the guard it serves. */
export interface GateHost {
  readonly guard: LoopGuard;
  /** The stop in force, or null. */
  stopInForce(): Stop | null;
  /** Whether the workflow waits for a resume (a gated call, or `untilResumed`). */
  waiting(): boolean;
  /** Lifts the stop after a verified resume (with the accepted approval of an approval stop). */
  lift(raise: NonNullable<ResumeRequest['raise']>, approvalId: string | null): void;
}

/** A stopped loop whose workflow does not wait for a resume (no `untilResumed`): nothing would go on. */
const NOT_WAITING = 'run is stopped but its workflow does not wait for a resume (guard.untilResumed)';

/** The `resume` update's validator and handler over one guard. */
export class ResumeGate {
  private readonly check: ResumeCheck;
  private readonly answers = new Map<string, ResumeAnswer>();
  private verifying = false;
  private approvalId: string | null = null;

  constructor(
    private readonly host: GateHost,
    runId: string,
    acts: GuardActivities = guardActivityProxy(),
  ) {
    const adapter: Pick<RunActivities, 'verifyOperator' | 'verifyPrecondition' | 'checkPlanner'> = {
      verifyOperator: (i) =>
        acts[GUARD_ACTIVITY.verifyOperator](i) as ReturnType<RunActivities['verifyOperator']>,
      // The model is asked again on the next generateText: that is this path's planner check.
      checkPlanner: () => Promise.resolve({ ok: true, detail: 'the model will be asked again' }),
      verifyPrecondition: async (i) => {
        const out = await acts[GUARD_ACTIVITY.verifyResume](i);
        this.approvalId = out.changed ? (out.approvalId ?? null) : null;
        return out;
      },
    };
    this.check = new ResumeCheck(adapter as RunActivities, runId);
  }

  /** Rejects a malformed request, or one for a run that is not stopped, before it is recorded. */
  validate(raw: unknown): void {
    const parsed = resumeRequestSchema.safeParse(raw);
    if (!parsed.success)
      throw new Error(parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '));
    if (this.answers.has(parsed.data.requestId)) return;
    if (!this.host.stopInForce()) throw new Error('run is not stopped');
    if (!this.host.waiting()) throw new Error(NOT_WAITING);
    if (this.verifying) throw new Error('another resume is being verified');
  }

  /** The worker's verdict on an operator's stop (ai-sdk/kill-switch.ts): an agentRun's check. */
  authoriseStop(req: StopRequest): Promise<{ ok: boolean; detail: string }> {
    return this.check.authorise('stop', req, null);
  }

  /** Verifies a resume by the stop's lift rule; an accepted one lifts the stop. */
  async resume(raw: ResumeRequest): Promise<ResumeAnswer> {
    const req = resumeRequestSchema.parse(raw);
    const prior = this.answers.get(req.requestId);
    if (prior) return prior;
    const stop = this.host.stopInForce();
    let answer: ResumeAnswer;
    if (!stop || !this.host.waiting()) {
      answer = {
        accepted: false,
        reason: stop ? NOT_WAITING : 'run is not stopped',
        progressVersion: this.host.guard.progressVersion,
      };
    } else {
      this.verifying = true;
      this.approvalId = null;
      try {
        answer = await this.check.verify(stop, req, this.host.guard);
      } finally {
        this.verifying = false;
      }
      if (answer.accepted) this.host.lift(req.raise ?? {}, this.approvalId);
    }
    this.answers.set(req.requestId, answer);
    return answer;
  }
}
