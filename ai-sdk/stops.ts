/**
 * The stop in force of an AI SDK agent's guard (ai-sdk/agent-guard.ts) and what changes it: a
 * guard or budget stop, a stop before a model call (the tenant spend gate), a gated write
 * waiting in its execute for its approval, and the lift of a verified resume
 * (ai-sdk/control.ts). Workflow code.
 */
import type { LanguageModelV4Usage } from '@ai-sdk/provider';
import { condition, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import { AGENT_GUARD_REASON, AGENT_STATE, AGENT_STEPS } from '../common/search-attributes';
import {
  buildStopReport,
  GuardReason,
  TerminalState,
  type GuardCall,
  type LoopGuard,
  type StopReport,
} from '../guard';
import type { Stop } from '../workflows/resume-check';
import type { GuardActivities } from './control';
import { errorMessage, type CallHooks } from './model';
import { SpendGate, type SpendReservation } from './spend';
import { GUARD_ACTIVITY, type GuardAgentOptions, type GuardedWriteMeta, type GuardStopOutput } from './types';

/** The stop in force; `approvalWait`: a gated call waiting in its execute for its approval. */
export type GuardStop = Stop & { readonly approvalWait?: boolean };

/** How long a gated call waits for its approval, and `untilResumed` for a resume, by default. */
const WAIT_MS = 24 * 3_600_000;

/** An approval a gated write uses. */
type Approval = NonNullable<GuardedWriteMeta['approval']>;

export class GuardStops {
  /** The stop in force, or null. */
  state: GuardStop | null = null;
  /** Whether the run waits for a resume now (a gated call, or `untilResumed`). */
  waiting = 0;
  /** The approval a verified resume accepted for the call waiting in its execute. */
  private granted: string | null = null;
  /**
   * The approval a resume accepted for an approval stop whose wait had run out: used by the
   * next proposal of that very call (the loop was re-entered), until the run stops again.
   */
  private carried: Approval | null = null;
  /** Stops lifted by a verified resume (what {@link untilResumed} waits for). */
  private lifts = 0;

  constructor(
    private readonly guard: LoopGuard,
    private readonly options: GuardAgentOptions,
    private readonly acts: GuardActivities,
  ) {}

  /** The carried approval when the call is the one it was granted for (it is used once). */
  takeCarried(fingerprint: string): Approval | null {
    const c = this.carried;
    this.carried = null;
    return c?.fingerprint === fingerprint ? c : null;
  }

  /**
   * A gated write waits here, in its execute, for a verified resume with an approval of this
   * exact call (its digest, computed on the worker): the run shows NEEDS_HUMAN meanwhile.
   * Waiting in execute keeps the AI SDK's loop and the model's conversation as they are, and
   * the approved call returns its result to the model like any call. Null when the wait ran out
   * (the run stops NEEDS_HUMAN and the loop ends).
   */
  async awaitApproval(
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
    this.set(reason, TerminalState.NEEDS_HUMAN, report, call, input, true);
    this.granted = null;
    const since = Date.now();
    this.waiting += 1;
    const approved = await condition(() => this.granted !== null, this.options.approvalWaitMs ?? WAIT_MS);
    this.waiting -= 1;
    this.guard.discountWait(Date.now() - since);
    if (!approved) {
      this.guard.forceStop(reason, TerminalState.NEEDS_HUMAN);
      this.state = { ...this.state!, approvalWait: false };
      return null;
    }
    const approvalId = this.granted!;
    this.granted = null;
    return { approvalId, stopRef, fingerprint: call.fingerprint };
  }

  /** Lifts the stop in force after a verified resume (ai-sdk/control.ts). */
  lift(raise: Parameters<LoopGuard['resume']>[1], approvalId: string | null): void {
    const s = this.state;
    if (!s) return;
    this.state = null;
    if (s.approvalWait) this.granted = approvalId ?? '';
    else this.guard.resume(Date.now(), raise);
    const ref = s.report.last_safe_checkpoint;
    const fingerprint = s.report.blocked_call?.fingerprint;
    if (!s.approvalWait && approvalId && ref && fingerprint)
      this.carried = { approvalId, stopRef: ref, fingerprint };
    this.lifts += 1;
    this.publish();
  }

  async untilResumed(timeoutMs?: number): Promise<boolean> {
    if (!this.state) return true;
    const lifts = this.lifts;
    this.waiting += 1;
    try {
      return await condition(() => this.lifts > lifts, timeoutMs ?? WAIT_MS);
    } finally {
      this.waiting -= 1;
    }
  }

  stop(reason: string, terminalState: TerminalState, call: GuardCall, input: unknown, unmet?: string): void {
    if (this.state) return;
    const report = buildStopReport(this.guard, {
      terminalState,
      reason,
      blockedCall: { tool: call.tool, fingerprint: call.fingerprint },
      ...(unmet !== undefined ? { unmet } : {}),
    });
    this.set(reason, terminalState, report, call, input);
  }

  output(): GuardStopOutput {
    const s = this.state!;
    return {
      guard: 'stopped',
      reason: s.reason,
      terminalState: s.terminalState,
      note: `The run was stopped by the loop guard (${s.reason}); this call did not run.`,
    };
  }

  /** The tenant spend gate around each model call, when `spend` is given. */
  spendHooks(): CallHooks<SpendReservation> | undefined {
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
    if (this.state) return;
    this.guard.forceStop(reason, TerminalState.NEEDS_HUMAN);
    this.set(
      reason,
      TerminalState.NEEDS_HUMAN,
      buildStopReport(this.guard, { terminalState: TerminalState.NEEDS_HUMAN, reason, unmet: detail }),
    );
  }

  /** Charges a model response's usage; past a budget the run stops at once. */
  charge(usage: LanguageModelV4Usage | undefined): void {
    if (usage) this.chargeTokens(usage.inputTokens.total ?? 0, usage.outputTokens.total ?? 0);
  }

  chargeTokens(input: number, output: number): void {
    const p = this.options.prices;
    const costUsd = p ? (input * p.inputPerMillion + output * p.outputPerMillion) / 1_000_000 : 0;
    this.guard.charge({ steps: 0, tokens: input + output, costUsd });
    if (this.state) return;
    const c = this.guard.config;
    const reason =
      this.guard.usage.tokens > c.maxTokens
        ? GuardReason.TOKEN_BUDGET
        : this.guard.usage.costUsd > c.maxCostUsd
          ? GuardReason.COST_BUDGET
          : null;
    if (reason) {
      this.guard.forceStop(reason);
      this.set(
        reason,
        TerminalState.STOPPED_LOOP_GUARD,
        buildStopReport(this.guard, {
          terminalState: TerminalState.STOPPED_LOOP_GUARD,
          reason,
        }),
      );
    }
  }

  set(
    reason: string,
    terminalState: TerminalState,
    report: StopReport,
    call?: GuardCall,
    input?: unknown,
    approvalWait = false,
  ): void {
    this.carried = null;
    this.state = {
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

  publish(): void {
    if (!this.options.searchAttributes) return;
    const s = this.state;
    upsertSearchAttributes([
      { key: AGENT_STATE, value: s ? s.terminalState : TerminalState.COMPLETED },
      { key: AGENT_GUARD_REASON, value: s?.reason ?? '' },
      { key: AGENT_STEPS, value: this.guard.stepCount },
    ]);
  }
}
