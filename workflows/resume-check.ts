/**
 * Resume verification (docs/spec.md §7.4) and operator authority (§7.3): what must hold for
 * a stopped run to continue, decided by the stop reason's lift rule, with the operator's
 * signature and role checked by the worker. Every activity failure here refuses the request
 * and leaves the run waiting; it never fails the run. Workflow code.
 */
import { ActivityFailure, ApplicationFailure, isCancellation } from '@temporalio/workflow';
import type { VerifyInput, VerifyOutput } from '../activities/types';
import type { ResumeAnswer, resumeRequestSchema } from '../common/contracts';
import type { OperatorAuth } from '../common/operator-auth';
import {
  isBudgetReason,
  liftRuleOf,
  raiseKeyOf,
  raiseLifts,
  type LoopGuard,
  type StopReport,
  type TerminalState,
} from '../guard';
import type { RunActivities } from './run-activities';

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
}

/** The error type behind an activity failure (its ApplicationFailure type, if any). */
export function failureType(err: ActivityFailure): string {
  return err.cause instanceof ApplicationFailure && err.cause.type ? err.cause.type : 'activity_failure';
}

/** The innermost message of an activity failure. */
export function failureMessage(err: ActivityFailure): string {
  return err.cause?.message ?? err.message;
}

/** Runs an activity call; an activity failure becomes the given refusal (cancellation still throws). */
async function orRefusal<T>(call: () => Promise<T>, refusal: (err: ActivityFailure) => T): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (!(err instanceof ActivityFailure) || isCancellation(err)) throw err;
    return refusal(err);
  }
}

/** The checks a stopped run's resume and an operator's request go through. */
export class ResumeCheck {
  constructor(
    private readonly activities: RunActivities,
    private readonly runId: string,
  ) {}

  /** Whether what stopped the run has changed, by the stop reason's lift rule. */
  async verify(
    stop: Stop,
    req: ReturnType<typeof resumeRequestSchema.parse>,
    guard: LoopGuard,
    authority: boolean,
  ): Promise<ResumeAnswer> {
    const progressVersion = guard.progressVersion;
    if (liftRuleOf(stop.reason) === 'child')
      // The parent waits on its stopped sub-agent: the child is what a person resumes (§7.14).
      return {
        accepted: false,
        reason: `this run waits on a stopped sub-agent (${stop.report.unmet_precondition ?? 'see agentctl tree'}): resume the child; this run continues when it does`,
        progressVersion,
      };
    if (authority) {
      const refused = (reason: string): ResumeAnswer => ({ accepted: false, reason, progressVersion });
      // A raise is for the budget that stopped the run, and only for a budget stop.
      const stopping = raiseKeyOf(stop.reason);
      const others = Object.keys(req.raise ?? {}).filter((k) => k !== stopping);
      if (others.length > 0)
        return refused(
          stopping
            ? `raise ${others.join(', ')} refused: the run stopped for ${stop.reason}, raise ${stopping}`
            : `raise refused: the run stopped for ${stop.reason}, not a budget`,
        );
      const who = await this.authorise('resume', req, stop.reason);
      if (!who.ok) return refused(`not authorised: ${who.detail}`);
    }
    switch (liftRuleOf(stop.reason)) {
      case 'operator':
        return { accepted: true, reason: 'operator stop lifted', progressVersion };
      case 'planner': {
        if (!authority)
          // The planner's next answer is the verification: if it still fails, the run stops again.
          return { accepted: true, reason: 'the planner will be asked again', progressVersion };
        const health = await this.checkPlannerOrRefuse();
        return { accepted: health.ok, reason: health.detail, progressVersion };
      }
      case 'raise': {
        const used = {
          ...guard.usage,
          steps: guard.stepCount,
          maxWaitPolls: guard.config.maxWaitPolls,
        };
        const raised = isBudgetReason(stop.reason) && raiseLifts(stop.reason, req.raise ?? {}, used);
        return {
          accepted: raised,
          reason: raised
            ? `budget raised (${JSON.stringify(req.raise)})`
            : `the ${stop.reason} was not raised (use --raise)`,
          progressVersion,
        };
      }
      case 'retry':
        return { accepted: true, reason: 'the failed call will be tried again', progressVersion };
      default: {
        const v = await this.verifyOrRefuse({
          runId: this.runId,
          reason: stop.reason,
          checkpointProgressVersion: progressVersion,
          blockedTool: stop.blockedTool,
          blockedArgs: stop.blockedArgs,
          operationKey: stop.operationKey,
          precondition: req.precondition,
          blockedFingerprint: stop.report.blocked_call?.fingerprint ?? null,
          stopRef: stop.report.last_safe_checkpoint,
          unmet: stop.report.unmet_precondition,
        });
        return { accepted: v.changed, reason: v.detail, progressVersion: v.progressVersion };
      }
    }
  }

  /** Asks the worker whether the request is signed by an operator allowed to make it. */
  async authorise(
    action: 'resume' | 'stop',
    req: {
      requestId: string;
      actor: string;
      reason: string;
      precondition?: string;
      raise?: Record<string, number | undefined>;
      auth?: OperatorAuth;
    },
    stopReason: string | null,
  ): Promise<{ ok: boolean; detail: string }> {
    return orRefusal<{ ok: boolean; detail: string }>(
      () =>
        this.activities.verifyOperator({
          action,
          workflowId: this.runId,
          fields: {
            requestId: req.requestId,
            actor: req.actor,
            reason: req.reason,
            ...(req.precondition !== undefined ? { precondition: req.precondition } : {}),
            ...(req.raise ? { raise: req.raise } : {}),
          },
          auth: req.auth ?? null,
          stopReason,
        }),
      (err) => ({
        ok: false,
        detail: `could not verify the operator (${failureType(err)}): ${failureMessage(err)}`,
      }),
    );
  }

  /** The planner's health check; its failure refuses the resume instead of failing the run. */
  private checkPlannerOrRefuse(): Promise<{ ok: boolean; detail: string }> {
    return orRefusal(
      () => this.activities.checkPlanner(),
      (err) => ({
        ok: false,
        detail: `could not check the planner (${failureType(err)}): ${failureMessage(err)}`,
      }),
    );
  }

  /** The verification activity; a failure of it refuses the resume instead of failing the run. */
  private verifyOrRefuse(input: VerifyInput): Promise<VerifyOutput> {
    return orRefusal(
      () => this.activities.verifyPrecondition(input),
      (err) => ({
        changed: false,
        progressVersion: input.checkpointProgressVersion,
        detail: `could not verify (${failureType(err)}): ${failureMessage(err)}; try again`,
      }),
    );
  }
}
