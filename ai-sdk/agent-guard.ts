/**
 * The guard of one AI SDK agent loop (ai-sdk/index.ts's `guardAgent`): the wrapped tools'
 * before → run → after, the model wrapper that counts usage, the stop and its StopReport, and
 * the views agentctl reads. Workflow code.
 */
import type { LanguageModelV4Usage } from '@ai-sdk/provider';
import type { ToolExecutionOptions, ToolSet } from 'ai';
import {
  condition,
  proxyActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import {
  checkpointQuery,
  reportQuery,
  resumeUpdate,
  statusQuery,
  type Checkpoint,
  type RunDecision,
  type RunResult,
  type RunStatus,
} from '../common/contracts';
import { AGENT_GUARD_REASON, AGENT_STATE, AGENT_STEPS } from '../common/search-attributes';
import {
  buildStopReport,
  normalizeCall,
  GuardReason,
  LoopGuard,
  TerminalState,
  type GuardCall,
  type StopReport,
  type ToolResult,
} from '../guard';
import type { Stop } from '../workflows/resume-check';
import { RecentCalls, steerObservation } from '../workflows/steer-note';
import { guardActivityProxy, ResumeGate, type GuardActivities } from './control';
import { chargingModel, errorMessage, failureCode, type CallHooks } from './model';
import { SpendGate, type SpendReservation } from './spend';
import { checkpointOf, resultOf, statusOf, type GuardViews } from './views';
import {
  GUARD_ACTIVITY,
  GUARDED,
  type GuardAgentOptions,
  type GuardedAgent,
  type GuardedWriteMeta,
  type GuardedWriteOutput,
  type GuardStopOutput,
  type WriteRule,
} from './types';

interface WriteCall {
  readonly rule: WriteRule;
  readonly key: string;
}

/** A settled call the AI SDK gets back as the tool's output. */
type Output = unknown;

/** The stop in force; `approvalWait`: a gated call waiting in its execute for its approval. */
type GuardStop = Stop & { readonly approvalWait?: boolean };

/** How long a gated call waits for its approval by default. */
const APPROVAL_WAIT_MS = 24 * 3_600_000;

export class AgentGuard<TOOLS extends ToolSet> {
  private readonly guard: LoopGuard;
  private readonly recent = new RecentCalls();
  /** Serialises tool calls: the AI SDK runs a step's calls in parallel, the guard decides one at a time. */
  private queue: Promise<unknown> = Promise.resolve();
  private stopState: GuardStop | null = null;
  /** The approval a verified resume accepted for the call waiting in its execute. */
  private granted: string | null = null;
  /**
   * The approval a resume accepted for an approval stop whose wait had run out: used by the
   * next proposal of that very call (the loop was re-entered), until the run stops again.
   */
  private carried: GuardedWriteMeta['approval'] | null = null;
  /** Stops lifted by a verified resume (what {@link untilResumed} waits for). */
  private lifts = 0;
  /** Whether the run waits for a resume now (a gated call, or `untilResumed`). */
  private waiting = 0;
  private readonly acts: GuardActivities;
  private readonly gate: ResumeGate;
  private readonly counts: Record<string, number> = {};
  private readonly cachedResults = new Map<string, unknown>();
  private readonly decisions: RunDecision[] = [];
  private proposals = 0;
  private executed = 0;
  private cached = 0;
  /** Executed writes: the progress version (a read changes nothing). */
  private progress = 0;
  private lastDecision: string | null = null;
  /** Whether {@link modelOf} wrapped the model (then usage is counted there, not in stopWhen). */
  private modelWrapped = false;
  private stepsCharged = 0;
  private readonly write: (
    name: string,
    input: unknown,
    meta: GuardedWriteMeta,
  ) => Promise<GuardedWriteOutput>;

  constructor(
    private readonly tools: TOOLS,
    private readonly reads: ReadonlySet<string>,
    private readonly writes: Readonly<Record<string, WriteRule>>,
    private readonly options: GuardAgentOptions,
  ) {
    this.guard = new LoopGuard(options.guard ?? {}, {
      startMs: Date.now(),
      needsHumanCodes: ['outcome_unknown', 'idempotency_conflict', 'approval_required', 'approval_invalid'],
    });
    this.acts = guardActivityProxy();
    this.gate = new ResumeGate(
      {
        guard: this.guard,
        stopInForce: () => this.stopState,
        lift: (raise, approvalId) => this.lift(raise, approvalId),
      },
      workflowInfo().workflowId,
      this.acts,
    );
    const acts = proxyActivities<
      Record<string, (i: unknown, m: GuardedWriteMeta) => Promise<GuardedWriteOutput>>
    >({ startToCloseTimeout: '1 minute', retry: { maximumAttempts: 5 }, ...options.writeActivity });
    this.write = (name, input, meta) => {
      const fn = acts[name];
      if (!fn) throw new Error(`no activity ${name}`);
      return fn(input, meta);
    };
  }

  api(): GuardedAgent<TOOLS> {
    const wrapped: Record<string, unknown> = {};
    for (const [name, t] of Object.entries(this.tools)) {
      const original = t as { execute?: (input: unknown, o: ToolExecutionOptions<unknown>) => unknown };
      const copy: Record<string | symbol, unknown> = {
        ...t,
        execute: (input: unknown, o: ToolExecutionOptions<unknown>) =>
          this.serial(() => this.call(name, input, o, original.execute?.bind(t))),
      };
      Object.defineProperty(copy, GUARDED, { value: true, enumerable: false });
      wrapped[name] = copy;
    }
    Object.defineProperty(wrapped, GUARDED, { value: true, enumerable: false });
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- the API object's getters read this guard
    const self = this;
    return {
      tools: wrapped as TOOLS,
      stopWhen: ({ steps }) => {
        if (!self.modelWrapped) {
          for (const step of steps.slice(self.stepsCharged))
            self.chargeTokens(step.usage?.inputTokens ?? 0, step.usage?.outputTokens ?? 0);
          self.stepsCharged = steps.length;
        }
        return self.stopState !== null;
      },
      model: (m) => {
        const wrapped = chargingModel(m, (u) => self.charge(u), self.spendHooks());
        self.modelWrapped = true;
        return wrapped;
      },
      get stopped() {
        return self.stopState
          ? { reason: self.stopState.reason, terminalState: self.stopState.terminalState }
          : null;
      },
      report: () => self.stopState?.report ?? null,
      status: () => self.status(),
      get executions() {
        return { ...self.counts };
      },
      installHandlers: () => {
        setHandler(statusQuery, () => self.status());
        setHandler(reportQuery, () => self.stopState?.report ?? null);
        setHandler(checkpointQuery, () => self.checkpoint());
        setHandler(resumeUpdate, (raw) => self.gate.resume(raw), {
          validator: (raw) => self.gate.validate(raw),
        });
      },
      untilResumed: (timeoutMs) => self.untilResumed(timeoutMs),
      result: (summary = null) => self.result(summary),
    };
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.then(fn, fn);
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** One tool call: guard.before → (run) → guard.after. */
  private async call(
    name: string,
    input: unknown,
    o: ToolExecutionOptions<unknown>,
    execute: ((input: unknown, o: ToolExecutionOptions<unknown>) => unknown) | undefined,
  ): Promise<Output> {
    const index = this.proposals++;
    if (this.stopState) return this.stopOutput();
    const rule = this.writes[name];
    let write: WriteCall | null = null;
    if (rule) write = { rule, key: (rule.operationKey as (i: unknown) => string)(input) };
    // The near-repeat key when the tool declares `similarArgs` (docs/spec.md §3, Near repeats).
    const normalized = normalizeCall(name, input, this.options.args?.[name]);
    const call: GuardCall = {
      tool: name,
      fingerprint: normalized.fingerprint,
      similarKey: normalized.similarKey ?? null,
      operationKey: write?.key ?? null,
      effect: write ? 'write' : 'read',
    };
    const before = this.guard.before(call, Date.now());
    this.lastDecision = before.decision;
    if (before.decision === 'steer') {
      this.decisions.push({ index, tool: name, decision: 'steer', reason: before.reason });
      const seen = this.recent.get(call.similarKey ?? call.fingerprint);
      const earlier = seen?.result;
      const obs = steerObservation({
        callId: o.toolCallId,
        tool: name,
        steer: before,
        steerLimit: this.guard.config.steerLimit,
        earlierSteps: seen?.steps ?? [],
        earlierResult: earlier?.kind === 'SUCCESS' ? earlier.data : earlier,
        unmet: earlier?.kind === 'PRECONDITION' ? (earlier.unmet ?? null) : null,
      });
      return { guard: obs.guard };
    }
    if (before.decision === 'stop') {
      this.decisions.push({ index, tool: name, decision: 'stop' });
      this.stop(before.reason, before.terminalState, call, input);
      return this.stopOutput();
    }
    let approval: GuardedWriteMeta['approval'] | null = null;
    if (before.decision === 'execute' && write?.rule.requiresApproval) {
      approval =
        this.carried?.fingerprint === call.fingerprint
          ? this.carried
          : await this.awaitApproval(index, call, input);
      this.carried = null;
      if (!approval) {
        this.decisions.push({ index, tool: name, decision: 'stop' });
        return this.stopOutput();
      }
    }
    let result: ToolResult;
    let output: Output;
    if (before.decision === 'return_cached_success') {
      this.cached += 1;
      output = write ? (this.cachedResults.get(write.key) ?? { alreadyCompleted: write.key }) : null;
      result = { kind: 'SUCCESS', data: output };
    } else {
      try {
        if (write) {
          const out = await this.write(write.rule.activity, input, {
            tool: name,
            operationKey: write.key,
            runId: workflowInfo().workflowId,
            ...(write.rule.requiresApproval ? { requiresApproval: true } : {}),
            ...(approval ? { approval } : {}),
          });
          // `ledger`: the write ran already (an attempt whose completion was lost, or an earlier
          // run with this key) and the ledger answered; it still counts as this call's one run.
          output = out.result;
          this.executed += 1;
          this.counts[name] = (this.counts[name] ?? 0) + 1;
          this.cachedResults.set(write.key, output);
          this.progress += 1;
        } else {
          if (!execute) throw new Error(`tool ${name} has no execute`);
          output = await execute(input, o);
          this.executed += 1;
          this.counts[name] = (this.counts[name] ?? 0) + 1;
        }
        result = { kind: 'SUCCESS', data: output ?? null };
      } catch (err) {
        const fatal = failureCode(err);
        result = fatal
          ? { kind: 'FATAL', code: fatal, message: errorMessage(err) }
          : { kind: 'RETRYABLE', message: errorMessage(err) };
        const after = this.guard.after(call, result, this.progress, Date.now());
        this.decisions.push({ index, tool: name, decision: 'execute', after: after.decision });
        this.recent.remember(call.similarKey ?? call.fingerprint, result, this.guard.stepCount);
        if (after.decision === 'stop')
          this.stop(after.reason, after.terminalState, call, input, errorMessage(err));
        throw err;
      }
    }
    const after = this.guard.after(call, result, this.progress, Date.now());
    this.decisions.push({ index, tool: name, decision: before.decision, after: after.decision });
    this.recent.remember(call.similarKey ?? call.fingerprint, result, this.guard.stepCount);
    if (after.decision === 'stop') this.stop(after.reason, after.terminalState, call, input);
    return output;
  }

  /**
   * A gated write waits here, in its execute, for a verified resume with an approval of this
   * exact call (its digest, computed on the worker): the run shows NEEDS_HUMAN meanwhile.
   * Waiting in execute keeps the AI SDK's loop and the model's conversation as they are, and
   * the approved call returns its result to the model like any call. Null when the wait ran out
   * (the run stops NEEDS_HUMAN and the loop ends).
   */
  private async awaitApproval(
    index: number,
    call: GuardCall,
    input: unknown,
  ): Promise<GuardedWriteMeta['approval'] | null> {
    const runId = workflowInfo().workflowId;
    const digest = await this.acts[GUARD_ACTIVITY.callDigest]({ runId, tool: call.tool, input });
    const stopRef = `approval-${index}`;
    const reason = GuardReason.APPROVAL_REQUIRED;
    const report = buildStopReport(this.guard, {
      terminalState: TerminalState.NEEDS_HUMAN,
      reason,
      checkpoint: stopRef,
      blockedCall: { tool: call.tool, fingerprint: call.fingerprint, args_digest: digest },
      unmet: `approval required for ${call.tool}`,
    });
    this.setStop(reason, TerminalState.NEEDS_HUMAN, report, call, input, true);
    this.granted = null;
    const since = Date.now();
    this.waiting += 1;
    const approved = await condition(
      () => this.granted !== null,
      this.options.approvalWaitMs ?? APPROVAL_WAIT_MS,
    );
    this.waiting -= 1;
    this.guard.discountWait(Date.now() - since);
    if (!approved) {
      this.guard.forceStop(reason, TerminalState.NEEDS_HUMAN);
      this.stopState = { ...this.stopState!, approvalWait: false };
      return null;
    }
    const approvalId = this.granted!;
    this.granted = null;
    return { approvalId, stopRef, fingerprint: call.fingerprint };
  }

  /** Lifts the stop in force after a verified resume (ai-sdk/control.ts). */
  private lift(raise: Parameters<LoopGuard['resume']>[1], approvalId: string | null): void {
    const s = this.stopState;
    if (!s) return;
    this.stopState = null;
    if (s.approvalWait) this.granted = approvalId ?? '';
    else this.guard.resume(Date.now(), raise);
    const ref = s.report.last_safe_checkpoint;
    const fingerprint = s.report.blocked_call?.fingerprint;
    if (!s.approvalWait && approvalId && ref && fingerprint)
      this.carried = { approvalId, stopRef: ref, fingerprint };
    this.lifts += 1;
    this.publish();
  }

  private async untilResumed(timeoutMs?: number): Promise<boolean> {
    if (!this.stopState) return true;
    const lifts = this.lifts;
    this.waiting += 1;
    try {
      return await condition(() => this.lifts > lifts, timeoutMs ?? APPROVAL_WAIT_MS);
    } finally {
      this.waiting -= 1;
    }
  }

  private stop(
    reason: string,
    terminalState: TerminalState,
    call: GuardCall,
    input: unknown,
    unmet?: string,
  ): void {
    if (this.stopState) return;
    const report = buildStopReport(this.guard, {
      terminalState,
      reason,
      blockedCall: { tool: call.tool, fingerprint: call.fingerprint },
      ...(unmet !== undefined ? { unmet } : {}),
    });
    this.setStop(reason, terminalState, report, call, input);
  }

  private stopOutput(): GuardStopOutput {
    const s = this.stopState!;
    return {
      guard: 'stopped',
      reason: s.reason,
      terminalState: s.terminalState,
      note: `The run was stopped by the loop guard (${s.reason}); this call did not run.`,
    };
  }

  /** The tenant spend gate around each model call, when `spend` is given. */
  private spendHooks(): CallHooks<SpendReservation> | undefined {
    const o = this.options.spend;
    if (!o) return undefined;
    const runId = workflowInfo().workflowId;
    const gate = new SpendGate(this.acts, o.tenant, runId, this.options.prices, o.maxOutputTokens ?? 4096);
    return {
      before: async (modelId, call) => {
        let r: SpendReservation;
        try {
          r = await gate.reserve(modelId, call);
        } catch (err) {
          this.stopBeforeModel(
            GuardReason.INFRASTRUCTURE_FAULT,
            `spend store unavailable: ${errorMessage(err)}`,
          );
          return null;
        }
        if (r.kind !== 'refused') return r;
        this.stopBeforeModel(GuardReason.SPEND_LIMIT, r.detail);
        return null;
      },
      after: (r, usage) => gate.settle(r, usage),
    };
  }

  /** A stop before a model call (the model is not called): NEEDS_HUMAN, the detail as unmet. */
  private stopBeforeModel(reason: string, detail: string): void {
    if (this.stopState) return;
    this.guard.forceStop(reason, TerminalState.NEEDS_HUMAN);
    this.setStop(
      reason,
      TerminalState.NEEDS_HUMAN,
      buildStopReport(this.guard, { terminalState: TerminalState.NEEDS_HUMAN, reason, unmet: detail }),
    );
  }

  /** Charges a model response's usage; past a budget the run stops at once. */
  private charge(usage: LanguageModelV4Usage | undefined): void {
    if (usage) this.chargeTokens(usage.inputTokens.total ?? 0, usage.outputTokens.total ?? 0);
  }

  private chargeTokens(input: number, output: number): void {
    const p = this.options.prices;
    const costUsd = p ? (input * p.inputPerMillion + output * p.outputPerMillion) / 1_000_000 : 0;
    this.guard.charge({ steps: 0, tokens: input + output, costUsd });
    if (this.stopState) return;
    const c = this.guard.config;
    const reason =
      this.guard.usage.tokens > c.maxTokens
        ? GuardReason.TOKEN_BUDGET
        : this.guard.usage.costUsd > c.maxCostUsd
          ? GuardReason.COST_BUDGET
          : null;
    if (reason) {
      this.guard.forceStop(reason);
      this.setStop(
        reason,
        TerminalState.STOPPED_LOOP_GUARD,
        buildStopReport(this.guard, {
          terminalState: TerminalState.STOPPED_LOOP_GUARD,
          reason,
        }),
      );
    }
  }

  private setStop(
    reason: string,
    terminalState: TerminalState,
    report: StopReport,
    call?: GuardCall,
    input?: unknown,
    approvalWait = false,
  ): void {
    this.carried = null;
    this.stopState = {
      reason,
      terminalState,
      report,
      blockedTool: call?.tool ?? null,
      blockedArgs: input ?? null,
      operationKey: call?.operationKey ?? null,
      detail: null,
      ...(approvalWait ? { approvalWait } : {}),
    };
    this.publish();
  }

  private publish(): void {
    if (!this.options.searchAttributes) return;
    const s = this.stopState;
    upsertSearchAttributes([
      { key: AGENT_STATE, value: s ? s.terminalState : TerminalState.COMPLETED },
      { key: AGENT_GUARD_REASON, value: s?.reason ?? '' },
      { key: AGENT_STEPS, value: this.guard.stepCount },
    ]);
  }

  private views(): GuardViews {
    return {
      guard: this.guard,
      stop: this.stopState,
      waiting: this.waiting > 0,
      proposals: this.proposals,
      executed: this.executed,
      cached: this.cached,
      decisions: this.decisions,
      lastDecision: this.lastDecision,
    };
  }

  private status(): RunStatus {
    return statusOf(this.views());
  }

  private checkpoint(): Checkpoint {
    return checkpointOf(this.views());
  }

  private result(summary: string | null): RunResult {
    if (!this.stopState) this.publish();
    return resultOf(this.views(), summary);
  }
}
