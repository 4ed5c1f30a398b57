/**
 * Resume verification (docs/spec.md §7.4) and operator authority (§7.3): what must hold for
 * a stopped run to continue, decided by the stop reason's lift rule, with the operator's
 * signature and role checked by the worker. Every activity failure here refuses the request
 * and leaves the run waiting; it never fails the run. Workflow code.
 */
import { ActivityFailure, ApplicationFailure, isCancellation, log } from '@temporalio/workflow';
import type { VerifyInput, VerifyOutput } from '../activities/types';
import type { VerifyOperatorInput } from '../operators/activities';
import type { ResumeAnswer, resumeRequestSchema } from '../common/contracts';
import type { OperatorAuth } from '../common/operator-auth';
import { isBudgetReason, liftRuleOf, raiseKeyOf, raiseLifts, type LoopGuard } from '../guard';
import type { ResumeObservation } from './resume-note';
import type { Stop } from './stop';

/**
 * What the checks ask the worker, on any engine: an `agentRun` worker's activities
 * (workflows/run-activities.ts) or a framework worker's `guardActivities` (core/guard-activities.ts).
 */
export interface GateActivities {
  /** Re-checks, from external state, that what stopped the run has changed. */
  verifyPrecondition(input: VerifyInput): Promise<VerifyOutput>;
  /** Checks an operator request's signature and authority against the worker's operators. */
  verifyOperator(input: VerifyOperatorInput): Promise<{ ok: boolean; detail: string }>;
  /** Whether the planner (the model) answers now (lifts a `planner_failed` stop). */
  checkPlanner(): Promise<{ ok: boolean; detail: string }>;
  /**
   * Audits a refusal the gate decided itself (core/gate.ts) in the approval store's append-only
   * audit: one row per refused stop, resume or approval, with its reason.
   */
  auditRefusal(input: RefusalAudit): Promise<void>;
}

/** One refusal, as the gate audits it. */
export interface RefusalAudit {
  readonly runId: string;
  readonly action: 'resume' | 'stop';
  readonly actor: string;
  readonly requestId: string;
  /** The stop the request was about (its checkpoint ref), when the run was stopped. */
  readonly stopRef: string | null;
  readonly reason: string;
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
  /**
   * Whether the last {@link verify} refusal was audited by the worker's verifier already: the
   * `approval` lift rule's check (storage/approvals `checkStop`) audits what it refuses, as
   * `not approved (<why>): …`. The gate audits every other refusal (exactly one row each).
   */
  auditedByVerifier = false;
  /** What the last {@link verify} read now (the blocked call's fresh result), for the model. */
  observed: ResumeObservation | null = null;

  constructor(
    private readonly activities: GateActivities,
    private readonly runId: string,
  ) {}

  /** Audits a refusal; an audit that cannot be written is logged, never fails the run. */
  async audit(input: Omit<RefusalAudit, 'runId'>): Promise<void> {
    try {
      await this.activities.auditRefusal({ runId: this.runId, ...input });
    } catch (err) {
      if (!(err instanceof ActivityFailure) || isCancellation(err)) throw err;
      log.warn(`could not audit a refused ${input.action} (${failureMessage(err)}): ${input.reason}`);
    }
  }

  /** Whether what stopped the run has changed, by the stop reason's lift rule. */
  async verify(
    stop: Stop,
    req: ReturnType<typeof resumeRequestSchema.parse>,
    guard: LoopGuard,
  ): Promise<ResumeAnswer> {
    this.auditedByVerifier = false;
    this.observed = null;
    const progressVersion = guard.progressVersion;
    if (liftRuleOf(stop.reason) === 'child')
      // The parent waits on its stopped sub-agent: the child is what a person resumes (§7.14).
      return {
        accepted: false,
        reason: `this run waits on a stopped sub-agent (${stop.report.unmet_precondition ?? 'see agentctl tree'}): resume the child; this run continues when it does`,
        progressVersion,
      };
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
    switch (liftRuleOf(stop.reason)) {
      case 'operator':
        return { accepted: true, reason: 'operator stop lifted', progressVersion };
      case 'planner': {
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
        this.auditedByVerifier =
          liftRuleOf(stop.reason) === 'approval' && !v.changed && v.detail.startsWith('not approved (');
        this.observed = v.changed && v.observed ? v.observed : null;
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
      note?: string;
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
            ...(req.note !== undefined ? { note: req.note } : {}),
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
