/**
 * The guard of one AI SDK agent loop (ai-sdk/index.ts's `guardAgent`): the wrapped tools'
 * before → run → after, the model wrapper that counts usage, the stop (ai-sdk/stops.ts), and
 * the views agentctl reads. Workflow code.
 */
import type { ToolExecutionOptions, ToolSet } from 'ai';
import { proxyActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import {
  checkpointQuery,
  reportQuery,
  resumeUpdate,
  statusQuery,
  stopSignal,
  stopUpdate,
  type Checkpoint,
  type RunDecision,
  type RunResult,
  type RunStatus,
  type StopRequest,
} from '../common/contracts';
import {
  buildStopReport,
  GuardReason,
  normalizeCall,
  LoopGuard,
  TerminalState,
  type GuardCall,
  type ToolResult,
} from '../guard';
import { RecentCalls, steerObservation } from '../workflows/steer-note';
import { guardActivityProxy, ResumeGate, type GuardActivities } from './control';
import { KillSwitch } from './kill-switch';
import { chargingModel, errorMessage, failureCode } from './model';
import { GuardStops } from './stops';
import { checkpointOf, resultOf, statusOf, type GuardViews } from './views';
import {
  GUARDED,
  type GuardAgentOptions,
  type GuardedAgent,
  type GuardedWriteMeta,
  type GuardedWriteOutput,
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
  private readonly stops: GuardStops;
  private readonly acts: GuardActivities;
  private readonly gate: ResumeGate;
  private readonly kill: KillSwitch;
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
    this.stops = new GuardStops(this.guard, options, this.acts);
    this.gate = new ResumeGate(
      {
        guard: this.guard,
        stopInForce: () => this.stops.state,
        waiting: () => this.stops.waiting > 0,
        lift: (raise, approvalId) => this.stops.lift(raise, approvalId),
      },
      workflowInfo().workflowId,
      this.acts,
    );
    this.kill = new KillSwitch({
      phase: () => this.stops.state?.terminalState ?? 'RUNNING',
      authorise: (req) => this.gate.authoriseStop(req),
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
            self.stops.chargeTokens(step.usage?.inputTokens ?? 0, step.usage?.outputTokens ?? 0);
          self.stepsCharged = steps.length;
        }
        self.operatorStop(self.kill.takeHeld());
        return self.stops.state !== null;
      },
      model: (m) => {
        const wrapped = chargingModel(m, (u) => self.stops.charge(u), self.stops.spendHooks());
        self.modelWrapped = true;
        return wrapped;
      },
      get stopped() {
        return self.stops.state
          ? { reason: self.stops.state.reason, terminalState: self.stops.state.terminalState }
          : null;
      },
      report: () => self.stops.state?.report ?? null,
      status: () => self.status(),
      get executions() {
        return { ...self.counts };
      },
      installHandlers: () => {
        setHandler(statusQuery, () => self.status());
        setHandler(reportQuery, () => self.stops.state?.report ?? null);
        setHandler(checkpointQuery, () => self.checkpoint());
        setHandler(resumeUpdate, (raw) => self.gate.resume(raw), {
          validator: (raw) => self.gate.validate(raw),
        });
        // The kill switch (`agentctl stop`): the same update and signal as an agentRun's.
        setHandler(stopUpdate, (raw) => self.kill.stop(raw), { validator: (raw) => self.kill.validate(raw) });
        setHandler(stopSignal, (raw) => self.kill.onSignal(raw));
      },
      untilResumed: (timeoutMs) => self.stops.untilResumed(timeoutMs),
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
    if (this.stops.state) return this.stops.output();
    // An operator's stop (held, or pending its verification) stops the loop before this call runs.
    if (this.operatorStop(await this.kill.take())) {
      this.decisions.push({ index, tool: name, decision: 'stop' });
      return this.stops.output();
    }
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
      this.stops.stop(before.reason, before.terminalState, call, input);
      return this.stops.output();
    }
    let approval: GuardedWriteMeta['approval'] | null = null;
    if (before.decision === 'execute' && write?.rule.requiresApproval) {
      approval =
        this.stops.takeCarried(call.fingerprint) ?? (await this.stops.awaitApproval(index, call, input));
      if (!approval) {
        this.decisions.push({ index, tool: name, decision: 'stop' });
        return this.stops.output();
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
          this.stops.stop(after.reason, after.terminalState, call, input, errorMessage(err));
        throw err;
      }
    }
    const after = this.guard.after(call, result, this.progress, Date.now());
    this.decisions.push({ index, tool: name, decision: before.decision, after: after.decision });
    this.recent.remember(call.similarKey ?? call.fingerprint, result, this.guard.stepCount);
    if (after.decision === 'stop') this.stops.stop(after.reason, after.terminalState, call, input);
    return output;
  }

  /** Applies an operator's authorised stop: `operator_stop`, resumable as an agentRun's. */
  private operatorStop(req: StopRequest | null): boolean {
    if (!req) return false;
    if (this.stops.state) return true;
    const reason = GuardReason.OPERATOR_STOP;
    const terminalState = TerminalState.STOPPED_LOOP_GUARD;
    this.guard.forceStop(reason);
    this.lastDecision = 'stop';
    const unmet = `operator ${req.actor}: ${req.reason}`;
    this.stops.set(reason, terminalState, buildStopReport(this.guard, { terminalState, reason, unmet }));
    return true;
  }

  private views(): GuardViews {
    return {
      guard: this.guard,
      stop: this.stops.state,
      waiting: this.stops.waiting > 0,
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
    // A stop accepted after the loop's last tool call still ends the run as stopped.
    this.operatorStop(this.kill.takeHeld());
    if (!this.stops.state) this.stops.publish();
    return resultOf(this.views(), summary);
  }
}
