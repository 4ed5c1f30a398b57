/**
 * The guarded step, once for every engine (docs/spec.md §3): `guard.before` → steer / stop /
 * cached answer → the approval policy → (the engine runs the tool) → {@link classify} into the
 * five result kinds → `guard.after` → record, or stop. Each part records its trace record and
 * decision on the {@link GuardedRun}, and a stop is applied there, in one place, with the
 * StopReport built from the guard. An `agentRun` (workflows/run-steps.ts) and a framework agent
 * (core/framework-guard.ts, under the AI SDK and OpenAI Agents adapters) call it; each engine
 * only proposes calls and runs tools its own way. Workflow code: deterministic, no I/O.
 */
import { ActivityFailure, ApplicationFailure } from '@temporalio/workflow';
import type { Observation } from '../common/planner';
import { redact } from '../common/redact';
import {
  GuardReason,
  TerminalState,
  type AfterResult,
  type BeforeResult,
  type GuardCall,
  type ToolResult,
} from '../guard';
import type { GuardedRun } from './run';
import { RecentCalls, steerObservation, withProgressNote } from './steer-note';
import type { BlockedCall } from './stop';

/** One proposed call as the step sees it, whatever proposed it. */
export interface StepCall {
  /** The proposal's index in the run (a script's index, or the count of proposals). */
  readonly index: number;
  /** The model's id of the call (its result answers it), when it has one. */
  readonly callId: string | undefined;
  /** The guard's view: tool, fingerprint, near-repeat key, operation key, effect, usage. */
  readonly call: GuardCall;
  /** The call's canonical args, for the trace (redacted when recorded). */
  readonly args: unknown;
  /** What a stop names (its args, so a resume can re-check the call's precondition). */
  readonly blocked: BlockedCall;
  /** The result the ledger holds for this call's operation key, if any. */
  readonly stored?: unknown;
}

/**
 * What `before` decided, as one tagged outcome the engine's loop switches on:
 * `execute` (run the tool), `cached` (answer the stored result, run nothing), `steer` (the
 * call does not run; the model reads {@link Steered.observation} as its result), `stop` (the
 * stop is in force on the run).
 */
export type BeforeOutcome =
  | { readonly kind: 'execute' | 'cached'; readonly before: BeforeResult }
  | Steered
  | { readonly kind: 'stop'; readonly before: BeforeResult };

/** A steered call: the guard's note is the call's result. */
export interface Steered {
  readonly kind: 'steer';
  readonly before: BeforeResult;
  readonly observation: Observation;
}

/** The trace fields of a call (canonical args; redacted on record). */
const traced = (x: StepCall) => ({
  tool: x.call.tool,
  fingerprint: x.call.fingerprint,
  args: x.args,
  operation_key: x.call.operationKey ?? null,
});

/** The five result kinds (docs/spec.md §2). */
const KINDS: ReadonlySet<string> = new Set(['SUCCESS', 'RETRYABLE', 'PRECONDITION', 'FATAL', 'PENDING']);

/**
 * A tool's result that is not a plain success, thrown from a tool's code (or an activity's, as an
 * ApplicationFailure whose `type` is the kind and whose first detail is the result): the step
 * classifies it as that kind instead of RETRYABLE. E.g. `throw new ToolResultError({ kind:
 * 'PRECONDITION', code: 'not_granted', unmet: 'deploy:api is not granted' })`.
 */
export class ToolResultError extends Error {
  constructor(readonly result: Exclude<ToolResult, { kind: 'SUCCESS' }>) {
    super(result.message ?? `${result.kind}${result.code ? ` ${result.code}` : ''}`);
    this.name = 'ToolResultError';
  }
}

/** The result a tool's failure stands for: its declared kind, FATAL if final, else RETRYABLE. */
export function classify(err: unknown): Exclude<ToolResult, { kind: 'SUCCESS' }> {
  if (err instanceof ToolResultError) return err.result;
  const cause = err instanceof ActivityFailure ? err.cause : err;
  const message = cause instanceof Error ? cause.message : String(err);
  if (cause instanceof ApplicationFailure) {
    if (cause.type && KINDS.has(cause.type) && cause.type !== 'SUCCESS') {
      const d = (cause.details?.[0] ?? {}) as { code?: string; unmet?: string; retryAfterMs?: number };
      return {
        kind: cause.type as 'PRECONDITION',
        message,
        ...(typeof d.code === 'string' ? { code: d.code } : {}),
        ...(typeof d.unmet === 'string' ? { unmet: d.unmet } : {}),
        ...(typeof d.retryAfterMs === 'number' ? { retryAfterMs: d.retryAfterMs } : {}),
      } as Exclude<ToolResult, { kind: 'SUCCESS' }>;
    }
    if (cause.nonRetryable) return { kind: 'FATAL', code: cause.type ?? 'fatal', message };
  }
  return { kind: 'RETRYABLE', message };
}

/** The guarded step over one run. */
export class GuardedStep {
  /** Recent calls' results and steps, for the guard's notes (not persisted). */
  private readonly recentCalls = new RecentCalls();
  /** The window's calls without progress, for the `no_progress` note (not persisted). */
  private unchanged: { tool: string; step: number }[] = [];

  constructor(private readonly run: GuardedRun) {}

  /**
   * guard.before: whether the call may run (docs/spec.md §3). A refusal stops the run, unless
   * the run steers it (§3.3): then the call does not run and the model gets the guard's note.
   * A stored result teaches a guard that forgot it (a lean guard, the ledger's key) first.
   */
  before(x: StepCall): BeforeOutcome {
    const run = this.run;
    const before = run.guard.before(x.call, Date.now());
    const refused = before.decision === 'stop' || before.decision === 'steer' ? before.reason : null;
    run.record({
      ...traced(x),
      phase: 'before',
      result_kind: null,
      error_code: null,
      decision: before.decision,
      reason: refused,
    });
    if (before.decision === 'steer') {
      run.decide({ index: x.index, tool: x.call.tool, decision: 'steer', reason: before.reason });
      const seen = this.recentCalls.get(x.call.similarKey ?? x.call.fingerprint);
      const earlier = seen?.result;
      const observation = steerObservation({
        callId: x.callId,
        tool: x.call.tool,
        steer: before,
        steerLimit: run.guard.config.steerLimit,
        earlierSteps: seen?.steps ?? [],
        earlierResult: x.stored ?? (earlier?.kind === 'SUCCESS' ? earlier.data : earlier),
        unmet: earlier?.kind === 'PRECONDITION' ? (earlier.unmet ?? null) : null,
      });
      run.publish(false);
      return { kind: 'steer', before, observation };
    }
    if (before.decision === 'stop') {
      run.decide({ index: x.index, tool: x.call.tool, decision: 'stop' });
      run.stop(before.terminalState, before.reason, x.blocked, x.call.operationKey ?? null);
      return { kind: 'stop', before };
    }
    return { kind: before.decision === 'return_cached_success' ? 'cached' : 'execute', before };
  }

  /**
   * The approval policy: a call the guard lets run but a person must approve first stops the
   * run NEEDS_HUMAN `approval_required`, showing the call (the approval binds this stop and this
   * call's digest). `inFlight`: the engine's call waits where it is for the approval (the AI
   * SDK's execute) instead of being proposed again after the resume; `checkpoint` names the stop.
   */
  approvalStop(x: StepCall, o: { readonly inFlight?: boolean; readonly checkpoint?: string } = {}): void {
    const run = this.run;
    run.decide({ index: x.index, tool: x.call.tool, decision: 'stop' });
    const unmet = `approval required for ${x.call.tool} ${JSON.stringify(redact(x.args))}`;
    run.runtimeStop(
      GuardReason.APPROVAL_REQUIRED,
      TerminalState.NEEDS_HUMAN,
      undefined,
      unmet,
      x.blocked,
      x.call.operationKey ?? null,
      o,
    );
  }

  /**
   * guard.after: records the result (docs/spec.md §3) and applies a stop; a FATAL's message
   * is the stop's detail. `before` is the decision the call ran under (execute or cached).
   * `via: 'reconciled'`: the ledger's `reconcile` probe settled the write (an earlier attempt
   * dispatched it and was lost; the tool did not run now). The call, counted `executed` when it
   * was sent, counts `reconciled` instead, and its trace record says so.
   */
  after(
    x: StepCall,
    before: BeforeResult,
    result: ToolResult,
    progressVersion: number,
    via?: 'reconciled',
  ): AfterResult {
    const run = this.run;
    if (via === 'reconciled') {
      run.executed = Math.max(0, run.executed - 1);
      run.reconciled += 1;
    }
    // The lifted stop's call has run (or was answered): its approvals are spent for good.
    if (run.approvalStop?.fingerprint === x.call.fingerprint) run.approvalStop = null;
    const counted = run.guard.noProgressCount;
    const after = run.guard.after(x.call, result, progressVersion, Date.now());
    this.recentCalls.remember(x.call.similarKey ?? x.call.fingerprint, result, run.guard.stepCount);
    if (run.guard.noProgressCount === 0) this.unchanged = [];
    else if (run.guard.noProgressCount > counted)
      this.unchanged = [...this.unchanged, { tool: x.call.tool, step: run.guard.stepCount }].slice(-5);
    const note = after.decision === 'stop' ? null : (after.steer ?? null);
    run.record({
      ...traced(x),
      phase: 'after',
      result_kind: result.kind,
      error_code: result.kind === 'SUCCESS' ? null : (result.code ?? null),
      decision: after.decision,
      reason: after.decision === 'stop' ? after.reason : (note?.reason ?? null),
      ...(via ? { via } : {}),
    });
    const decision = before.decision as 'execute' | 'return_cached_success';
    run.decide({
      index: x.index,
      tool: x.call.tool,
      decision,
      after: after.decision,
      ...(note ? { reason: note.reason } : {}),
    });
    // The UI's details only: search attributes are not upserted per step (docs/performance.md).
    run.publish(false);
    if (after.decision === 'stop') {
      // The StopReport is built from the guard alone, exactly as the offline replay builds it.
      run.stop(after.terminalState, after.reason, x.blocked, x.call.operationKey ?? null);
      const stop = run.stopInForce;
      if (result.kind === 'FATAL' && stop) stop.detail = result.message ?? null;
    }
    return after;
  }

  /**
   * The observation the model reads after {@link after}: with the guard's `no_progress` note
   * when `after` gave one (the model is told before the stop), else unchanged.
   */
  noted(observation: Observation, after: AfterResult): Observation {
    const note = after.decision === 'stop' ? null : (after.steer ?? null);
    if (!note) return observation;
    const guard = this.run.guard;
    return withProgressNote(observation, {
      steer: note,
      calls: this.unchanged,
      progressVersion: guard.progressVersion,
      steersLeft: Math.max(
        0,
        guard.config.steerLimit - guard.steers.filter((s) => s.reason !== note.reason).length,
      ),
    });
  }
}
