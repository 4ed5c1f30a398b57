/**
 * The guard of one AI SDK agent loop (ai-sdk/index.ts's `guardAgent`): the wrapped tools'
 * before → run → after, the model wrapper that counts usage, the stop and its StopReport, and
 * the views agentctl reads. Workflow code.
 */
import type { LanguageModelV4, LanguageModelV4CallOptions, LanguageModelV4Usage } from '@ai-sdk/provider';
import type { ToolExecutionOptions, ToolSet } from 'ai';
import {
  ActivityFailure,
  ApplicationFailure,
  proxyActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import {
  reportQuery,
  statusQuery,
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
import { RecentCalls, steerObservation } from '../workflows/steer-note';
import {
  aiSdkGuardError,
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

export class AgentGuard<TOOLS extends ToolSet> {
  private readonly guard: LoopGuard;
  private readonly recent = new RecentCalls();
  /** Serialises tool calls: the AI SDK runs a step's calls in parallel, the guard decides one at a time. */
  private queue: Promise<unknown> = Promise.resolve();
  private stopState: { reason: string; terminalState: TerminalState; report: StopReport } | null = null;
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
      needsHumanCodes: ['outcome_unknown', 'idempotency_conflict'],
    });
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
      model: (m) => self.modelOf(m),
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
      },
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
      this.stop(before.reason, before.terminalState, call);
      return this.stopOutput();
    }
    if (before.decision === 'execute' && write?.rule.requiresApproval) {
      this.decisions.push({ index, tool: name, decision: 'stop' });
      this.guard.forceStop(GuardReason.APPROVAL_REQUIRED, TerminalState.NEEDS_HUMAN);
      this.stop(
        GuardReason.APPROVAL_REQUIRED,
        TerminalState.NEEDS_HUMAN,
        call,
        `approval required for ${name}`,
      );
      return this.stopOutput();
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
        if (after.decision === 'stop') this.stop(after.reason, after.terminalState, call, errorMessage(err));
        throw err;
      }
    }
    const after = this.guard.after(call, result, this.progress, Date.now());
    this.decisions.push({ index, tool: name, decision: before.decision, after: after.decision });
    this.recent.remember(call.similarKey ?? call.fingerprint, result, this.guard.stepCount);
    if (after.decision === 'stop') this.stop(after.reason, after.terminalState, call);
    return output;
  }

  private stop(reason: string, terminalState: TerminalState, call: GuardCall, unmet?: string): void {
    if (this.stopState) return;
    const report = buildStopReport(this.guard, {
      terminalState,
      reason,
      blockedCall: { tool: call.tool, fingerprint: call.fingerprint },
      ...(unmet !== undefined ? { unmet } : {}),
    });
    this.setStop(reason, terminalState, report);
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

  private setStop(reason: string, terminalState: TerminalState, report: StopReport): void {
    this.stopState = { reason, terminalState, report };
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

  private modelOf(model: LanguageModelV4): LanguageModelV4 {
    if ((model as unknown as Record<symbol, unknown>)[GUARDED] === true) {
      throw aiSdkGuardError('already_guarded', 'this model is already wrapped by guard.model');
    }
    this.modelWrapped = true;
    const wrapped: LanguageModelV4 = Object.create(model) as LanguageModelV4;
    Object.defineProperty(wrapped, GUARDED, { value: true, enumerable: false });
    Object.assign(wrapped, {
      doGenerate: async (o: LanguageModelV4CallOptions) => {
        const r = await model.doGenerate(o);
        this.charge(r.usage);
        return r;
      },
      doStream: async (o: LanguageModelV4CallOptions) => {
        const r = await model.doStream(o);
        const charge = (u: LanguageModelV4Usage) => this.charge(u);
        const stream = r.stream.pipeThrough(
          new TransformStream({
            transform(part, controller) {
              if (part.type === 'finish') charge(part.usage);
              controller.enqueue(part);
            },
          }),
        );
        return { ...r, stream };
      },
    });
    return wrapped;
  }

  private status(): RunStatus {
    const s = this.stopState;
    return {
      workflowId: workflowInfo().workflowId,
      phase: s ? s.terminalState : 'RUNNING',
      terminalState: s?.terminalState ?? null,
      guardReason: s?.reason ?? null,
      steps: this.guard.stepCount,
      steers: this.guard.steers.length,
      executed: this.executed,
      cached: this.cached,
      proposals: this.proposals,
      progressVersion: this.guard.progressVersion,
      noProgress: this.guard.noProgressCount,
      usage: { ...this.guard.usage },
      lastDecision: this.lastDecision,
      waitingForResume: false,
      goal: '',
    };
  }

  private result(summary: string | null): RunResult {
    const s = this.stopState;
    if (!s) this.publish();
    const last = this.decisions[this.decisions.length - 1];
    return {
      workflow_id: workflowInfo().workflowId,
      terminal_state: s?.terminalState ?? TerminalState.COMPLETED,
      reason: s?.reason ?? null,
      executed: this.executed,
      cached: this.cached,
      stopped_at: s && last ? last.index : null,
      decisions: [...this.decisions],
      report: s?.report ?? null,
      summary,
      checkpoint: null,
      usage: {
        steps: this.guard.stepCount,
        tokens: this.guard.usage.tokens,
        cost_usd: this.guard.usage.costUsd,
      },
    } as RunResult;
  }
}

/** The failure's code when it is the write's final word (a non-retryable activity failure). */
function failureCode(err: unknown): string | null {
  if (err instanceof ActivityFailure && err.cause instanceof ApplicationFailure && err.cause.nonRetryable) {
    return err.cause.type ?? 'fatal';
  }
  return null;
}

function errorMessage(err: unknown): string {
  if (err instanceof ActivityFailure && err.cause) return err.cause.message;
  return err instanceof Error ? err.message : String(err);
}
