/**
 * The guard of one agent loop that a framework drives (the AI SDK's, ai-sdk/agent-guard.ts; the
 * OpenAI Agents SDK's, openai-agents/index.ts), without any framework's types: each tool call
 * the framework makes is one guarded step of the core (core/step.ts) over one guarded run
 * (core/framework-run.ts), with the core's gate (core/gate.ts: stop, resume, veto, audit) and
 * views (core/views.ts: status, report, trace, checkpoint). What it adds over those: a call in
 * turn (a framework may run a step's calls in parallel), the write through the user's
 * ledger-wrapped activity, the wait in the call for an approval, and the budget and spend stops
 * around the framework's model calls (core/budget-stops.ts). An adapter turns its framework's
 * tool and model into {@link FrameworkGuard.call} and the charges. Workflow code.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { Checkpoint, RunResult, RunStatus } from '../common/contracts';
import { normalizeCall, TerminalState, workspaceOf, type GuardCall, type ToolResult } from '../guard';
import { RunGate } from './gate';
import { installRunHandlers } from './handlers';
import type { GateActivities } from './resume-check';
import { classify, GuardedStep, type StepCall } from './step';
import { mayCallModel } from './model-gate';
import type { ResumeNotes } from './resume-note';
import { checkpointOf, resultOf, statusOf } from './views';
import { endWith } from '../common/run-ended';
import { guardActivityProxy, type GuardActivities } from './guard-activities';
import { withGuardNote } from './tool-output';
import { BudgetStops, type ModelSpend } from './budget-stops';
import { FrameworkRun } from './framework-run';
import {
  GUARD_ACTIVITY,
  type FrameworkGuardOptions,
  type GuardedLoop,
  type GuardedWriteMeta,
  type GuardedWriteOutput,
  type GuardStopOutput,
  type WriteRule,
} from './framework-types';

/** How long a gated call waits for its approval, and `untilResumed` for a resume, by default. */
const WAIT_MS = 24 * 3_600_000;
/** A PENDING result without a server-given time: re-poll after this long. */
const DEFAULT_PENDING_MS = 1000;

/** An approval a gated write uses. */
type Approval = NonNullable<GuardedWriteMeta['approval']>;

export class FrameworkGuard {
  private readonly run: FrameworkRun;
  private readonly gate: RunGate;
  private readonly step: GuardedStep;
  private readonly stops: BudgetStops;
  /** Serialises tool calls: a framework may run a step's calls in parallel, the guard decides one at a time. */
  private queue: Promise<unknown> = Promise.resolve();
  private readonly counts: Record<string, number> = {};
  private readonly cachedResults = new Map<string, unknown>();
  /** The approval the last accepted resume found (the worker's verifier names it). */
  private approvalId: string | null = null;
  private readonly write: (
    name: string,
    input: unknown,
    meta: GuardedWriteMeta,
  ) => Promise<GuardedWriteOutput>;

  constructor(
    private readonly writes: Readonly<Record<string, WriteRule>>,
    private readonly options: FrameworkGuardOptions,
  ) {
    this.run = FrameworkRun.of(options);
    const acts = guardActivityProxy();
    this.stops = new BudgetStops(this.run, options, acts);
    this.gate = new RunGate(this.run, this.gateActivities(acts));
    this.step = new GuardedStep(this.run);
    const writeActs = proxyActivities<
      Record<string, (i: unknown, m: GuardedWriteMeta) => Promise<GuardedWriteOutput>>
    >({ startToCloseTimeout: '1 minute', retry: { maximumAttempts: 5 }, ...options.writeActivity });
    this.write = (name, input, meta) => {
      const fn = writeActs[name];
      if (!fn) throw new Error(`no activity ${name}`);
      return fn(input, meta);
    };
  }

  /**
   * Stops the run now, unless something already stopped it: for a stop a framework detects
   * outside any tool call (the OpenAI Agents SDK's max-turns error). Through the core's
   * `runtimeStop`, so the StopReport, trace and lift rule are an agentRun's.
   */
  stopWith(reason: string, terminalState: TerminalState, unmet: string): void {
    if (!this.run.stopped) this.run.runtimeStop(reason, terminalState, undefined, unmet);
  }

  /**
   * Whether the framework may send its next model request (core/model-gate.ts): not once the
   * run stopped or its token or cost budget has nothing left (then it stops here first).
   */
  mayCallModel(): boolean {
    return mayCallModel(this.run);
  }

  /**
   * `items` (one model request's conversation, as a framework builds it) with the notes of the
   * accepted resumes at their places (core/resume-note.ts), for a framework whose model calls
   * the adapter does not prepare itself (the OpenAI Agents SDK's).
   */
  weaveResumeNotes<T>(items: readonly T[], asMessage: (text: string) => T): T[] {
    return this.run.resumeNotes.any ? this.run.resumeNotes.weave(items, asMessage) : [...items];
  }

  /** The notes of the accepted resumes (core/resume-note.ts), for an adapter that weaves them itself. */
  get resumeNotes(): ResumeNotes {
    return this.run.resumeNotes;
  }

  /**
   * The tenant spend gate around a model call, when `spend` is given (core/budget-stops.ts):
   * reserve before each, settle after; a refusal stops the run.
   */
  modelSpend(): ModelSpend | undefined {
    return this.stops.modelSpend();
  }

  /** Charges a model response's tokens to the run's budgets; past one the run stops at once. */
  chargeTokens(input: number, output: number): void {
    this.stops.chargeTokens(input, output);
  }

  /** Applies an operator's stop accepted since the last call; whether the run is stopped now. */
  applyHeldStop(): boolean {
    this.gate.applyHeldStop();
    return this.run.stopped;
  }

  /** The stop in force, or null. */
  get stopped(): { reason: string; terminalState: TerminalState } | null {
    const s = this.run.stopInForce;
    return s ? { reason: s.reason, terminalState: s.terminalState } : null;
  }

  /** The worker's `guardActivities` as the core's gate asks them. */
  private gateActivities(acts: Required<GuardActivities>): GateActivities {
    return {
      verifyOperator: (i) => acts[GUARD_ACTIVITY.verifyOperator](i),
      // The model is asked again on the next generateText: that is this path's planner check.
      checkPlanner: () => Promise.resolve({ ok: true, detail: 'the model will be asked again' }),
      verifyPrecondition: async (i) => {
        const out = await acts[GUARD_ACTIVITY.verifyResume](i);
        this.approvalId = out.changed ? (out.approvalId ?? null) : null;
        return out;
      },
      auditRefusal: (i) => acts[GUARD_ACTIVITY.auditRefusal](i),
    };
  }

  /** The views and controls of the run a user's workflow reads, whichever framework drives it. */
  loop(): GuardedLoop {
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- the API object's getters read this guard
    const self = this;
    const run = this.run;
    return {
      get stopped() {
        return self.stopped;
      },
      report: () => run.stopInForce?.report ?? null,
      status: () => self.status(),
      get executions() {
        return { ...self.counts };
      },
      installHandlers: () =>
        installRunHandlers(run, self.gate, {
          status: () => self.status(),
          checkpoint: () => self.checkpoint(),
        }),
      untilResumed: (timeoutMs) => self.untilResumed(timeoutMs),
      checkpoint: () => self.checkpoint(),
      result: (summary = null) => self.result(summary),
      end: (summary = null) => endWith(self.result(summary)),
    };
  }

  /**
   * One tool call the framework makes, in turn with the others: `execute` runs a read (a write
   * runs as its activity); `callId` is the framework's id of the call. What it answers is what
   * the model reads; a RETRYABLE or FATAL failure is thrown, for the framework to hand over.
   */
  call(name: string, input: unknown, callId: string, execute: (() => unknown) | undefined): Promise<unknown> {
    return this.serial(() => this.guardedCall(name, input, callId, execute));
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.then(fn, fn);
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** One tool call: the kill switch, then the core's guarded step around the tool. */
  private async guardedCall(
    name: string,
    input: unknown,
    callId: string,
    execute: (() => unknown) | undefined,
  ): Promise<unknown> {
    const run = this.run;
    const index = run.proposals++;
    if (run.stopped) return this.stopOutput();
    // An operator's stop (held, or pending its verification) stops the loop before this call runs.
    if (await this.gate.applyStopRequest()) {
      run.decide({ index, tool: name, decision: 'stop' });
      return this.stopOutput();
    }
    const rule = this.writes[name];
    const key = rule ? (rule.operationKey as (i: unknown) => string)(input) : null;
    // The near-repeat key when the tool declares `similarArgs` (docs/spec.md §3, Near repeats).
    const normalized = normalizeCall(name, input, this.options.args?.[name]);
    const call: GuardCall = {
      tool: name,
      fingerprint: normalized.fingerprint,
      similarKey: normalized.similarKey ?? null,
      operationKey: key,
      effect: rule ? 'write' : 'read',
    };
    const x: StepCall = {
      index,
      callId,
      call,
      args: normalized.canonicalArgs,
      blocked: { tool: name, fingerprint: call.fingerprint, args: input },
      ...(key !== null && this.cachedResults.has(key) ? { stored: this.cachedResults.get(key) } : {}),
    };
    const b = this.step.before(x);
    if (b.kind === 'steer') return { guard: b.observation.guard };
    if (b.kind === 'stop') return this.stopOutput();
    let approval: Approval | null = null;
    if (b.kind === 'execute' && rule?.requiresApproval) {
      approval = this.takeCarried(call.fingerprint) ?? (await this.awaitApproval(x));
      if (!approval) return this.stopOutput();
    }
    let result: ToolResult;
    let output: unknown = null;
    let failure: unknown = null;
    let progress = run.guard.progressVersion;
    let via: 'reconciled' | undefined;
    if (b.kind === 'cached') {
      run.cached += 1;
      output = key !== null ? (this.cachedResults.get(key) ?? { alreadyCompleted: key }) : null;
      result = { kind: 'SUCCESS', data: output };
    } else {
      run.executed += 1;
      try {
        if (rule && key !== null) {
          const out = await this.write(rule.activity, input, {
            tool: name,
            operationKey: key,
            runId: run.runId,
            ...(rule.requiresApproval ? { requiresApproval: true } : {}),
            ...(approval ? { approval } : {}),
            // The ledger hashes what the fingerprint hashed (only differs when the tool has rules).
            ...(this.options.args?.[name] ? { canonicalArgs: normalized.canonicalArgs } : {}),
          });
          // `ledger`: the write ran already (an attempt whose completion was lost, or an earlier
          // run with this key) and the ledger answered; it still counts as this call's one run.
          // `reconciled`: its reconcile probe settled an earlier attempt's lost dispatch; the
          // step counts it `reconciled`, not `executed`, and its trace record says so.
          output = out.result;
          if (out.via === 'reconciled') via = 'reconciled';
          this.cachedResults.set(key, output);
          // An executed write is progress (a read changes nothing).
          progress += 1;
        } else {
          if (!execute) throw new Error(`tool ${name} has no execute`);
          output = await execute();
        }
        this.counts[name] = (this.counts[name] ?? 0) + 1;
        result = { kind: 'SUCCESS', data: output ?? null, ...workspaceOf(output) };
      } catch (err) {
        // The five kinds (core/step.ts classify): a tool's PRECONDITION or PENDING is its own.
        result = classify(err);
        failure = err;
      }
    }
    const after = this.step.after(x, b.before, result, progress, via);
    if (result.kind === 'SUCCESS') {
      // The `no_progress` note goes with the result the model reads, as in an agentRun (core/step.ts `noted`).
      const note = this.step.noted({ tool: name, kind: 'SUCCESS', data: output }, after).guard?.note;
      return note === undefined ? output : withGuardNote(output, note);
    }
    if (result.kind === 'PENDING' && after.decision !== 'stop') {
      // A re-poll honoured: wait the server-given time (a stop ends it early), off the wall clock.
      const since = Date.now();
      await this.gate.sleepUnlessStopped(
        after.retryAfterMs ?? DEFAULT_PENDING_MS,
        `to poll ${name} again (PENDING)`,
      );
      run.guard.discountWait(Date.now() - since);
    }
    if (result.kind === 'PENDING' || result.kind === 'PRECONDITION') {
      // Not an error: what the model reads, so it can poll again or change course.
      return {
        guard: result.kind === 'PENDING' ? 'pending' : 'precondition',
        ...(result.code ? { code: result.code } : {}),
        ...(result.kind === 'PRECONDITION' && result.unmet ? { unmet: result.unmet } : {}),
        note:
          result.kind === 'PENDING'
            ? `${name} is not done yet: call it again to poll`
            : `${name} did not run: ${result.unmet ?? result.message ?? 'a precondition is unmet'}; the same call will not succeed until that changes`,
      };
    }
    // RETRYABLE and FATAL: the framework hands the error to the model, as without the guard.
    throw failure;
  }

  /** The carried approval when the call is the one the lifted approval stop named (used once). */
  private takeCarried(fingerprint: string): Approval | null {
    const lifted = this.run.approvalStop;
    const id = this.approvalId;
    if (!lifted || id === null || lifted.fingerprint !== fingerprint) return null;
    this.approvalId = null;
    return { approvalId: id, stopRef: lifted.stopRef, fingerprint };
  }

  /**
   * A gated write waits here, in its execute, for a verified resume with an approval of this
   * exact call (its digest, computed on the worker): the run shows NEEDS_HUMAN meanwhile.
   * Waiting in the call keeps the framework's loop and the model's conversation as they are, and
   * the approved call returns its result to the model like any call. Null when the wait ran out
   * (the run stays stopped NEEDS_HUMAN and the loop ends).
   */
  private async awaitApproval(x: StepCall): Promise<Approval | null> {
    const run = this.run;
    const digest = await this.stops.digest(x.call.tool, x.blocked.args);
    const stopRef = `approval-${x.index}`;
    this.step.approvalStop(
      { ...x, blocked: { ...x.blocked, argsDigest: digest } },
      { inFlight: true, checkpoint: stopRef },
    );
    this.approvalId = null;
    const since = Date.now();
    const approved = await this.gate.waitForResume(this.options.approvalWaitMs ?? WAIT_MS);
    run.guard.discountWait(Date.now() - since);
    if (!approved) {
      // The call ends here: the stop stays, now as a stop of the guard (untilResumed may lift it).
      run.unwait();
      run.settleInFlight();
      return null;
    }
    const approvalId = this.approvalId ?? '';
    this.approvalId = null;
    return { approvalId, stopRef, fingerprint: x.call.fingerprint };
  }

  private async untilResumed(timeoutMs?: number): Promise<boolean> {
    if (!this.run.stopped) return true;
    const resumed = await this.gate.waitForResume(timeoutMs ?? WAIT_MS);
    if (!resumed) this.run.unwait();
    return resumed;
  }

  private stopOutput(): GuardStopOutput {
    const s = this.run.stopInForce!;
    return {
      guard: 'stopped',
      reason: s.reason,
      terminalState: s.terminalState,
      note: `The run was stopped by the loop guard (${s.reason}); this call did not run.`,
    };
  }

  private status(): RunStatus {
    return statusOf(this.run);
  }

  /** What the next run of a continue-as-new gives the guard's `checkpoint` option: bounded in bytes, as an agentRun's. */
  private checkpoint(): Checkpoint {
    return checkpointOf(this.run);
  }

  private result(summary: string | null): RunResult {
    // A stop accepted after the loop's last tool call still ends the run as stopped.
    this.gate.applyHeldStop();
    const s = this.run.stopInForce;
    if (!s) this.run.publish(true, null, TerminalState.COMPLETED);
    const state = s?.terminalState ?? TerminalState.COMPLETED;
    return {
      ...resultOf(this.run, state, summary, s ? this.checkpoint() : null),
      usage: {
        steps: this.run.guard.stepCount,
        tokens: this.run.guard.usage.tokens,
        cost_usd: this.run.guard.usage.costUsd,
      },
    };
  }
}
