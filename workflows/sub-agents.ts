/**
 * Sub-agents (docs/spec.md §7.14): a `spawn_agent` call the guard let through starts a child
 * run as a Temporal child workflow, with a budget reserved out of what this run has left, its
 * own guard, ledger scope and StopReport. The parent awaits it: while the child waits for a
 * person the parent waits too (its StopReport names the child), the parent's kill switch
 * cancels the child (and through it the subtree), and at the end the child's actual usage is
 * charged to the parent, so a tree never spends more than its root's budget. Workflow code.
 */
import {
  ChildWorkflowCancellationType,
  condition,
  getExternalWorkflowHandle,
  isCancellation,
  ParentClosePolicy,
  startChild,
  workflowInfo,
  type ChildWorkflowHandle,
} from '@temporalio/workflow';
import { WORKFLOW_TYPE, type RunInput, type RunResult } from '../common/contracts';
import { AGENT_ROOT_RUN } from '../common/search-attributes';
import {
  childEventSignal,
  SPAWN_AGENT_TOOL,
  type ChildBudget,
  type ChildEvent,
  type ChildSummary,
  type SpawnArgs,
} from '../common/sub-agents';
import { redactText } from '../common/redact';
import { runResultOf } from '../common/run-ended';
import { isBudgetReason, ResultCode, TerminalState, type BudgetsLeft, type ToolResult } from '../guard';
import type { RunGate } from '../core/gate';
import type { BlockedCall, RunState } from './run-state';

/** A spawn the parent's planner proposed, as the loop hands it over. */
export interface SpawnCall {
  readonly args: unknown;
  readonly call: BlockedCall;
}

/** Tells the parent (if this run is a child) that it stopped and waits, or that it resumed. */
export async function tellParent(run: RunState, event: ChildEvent['event']): Promise<void> {
  const tree = run.input.tree;
  if (!tree) return;
  const stop = run.stopInForce;
  const e: ChildEvent = {
    childId: run.runId,
    event,
    ...(event === 'stopped' && stop
      ? {
          terminalState: stop.terminalState,
          reason: stop.reason,
          detail: stop.report.unmet_precondition ?? null,
        }
      : {}),
  };
  try {
    await getExternalWorkflowHandle(tree.parentId).signal(childEventSignal, e);
  } catch (err) {
    if (isCancellation(err)) throw err;
    // The parent is gone (terminated, or ended): nobody to tell, the child goes on as it is.
  }
}

const refused = (unmet: string): ToolResult => ({
  kind: 'PRECONDITION',
  code: ResultCode.SPAWN_REFUSED,
  unmet,
});
const bounded = (n: number): number | null => (Number.isFinite(n) ? n : null);

/**
 * The child's budget: what it asks for, each at most what the parent has left; absent, all
 * that is left. A request above what is left refuses the spawn (the message names it).
 */
export function reserveBudget(left: BudgetsLeft, asked: ChildBudget | undefined): BudgetsLeft | string {
  const pairs: [keyof ChildBudget, keyof BudgetsLeft][] = [
    ['maxSteps', 'steps'],
    ['maxTokens', 'tokens'],
    ['maxCostUsd', 'costUsd'],
    ['maxMs', 'ms'],
  ];
  const out: { -readonly [K in keyof BudgetsLeft]: number } = { ...left };
  for (const [ask, have] of pairs) {
    const want = asked?.[ask];
    if (want === undefined) continue;
    if (want > left[have])
      return `budget.${ask} ${want} is above what this run has left (${left[have]}): ask for at most that`;
    out[have] = want;
  }
  if (out.steps < 1) return 'no steps left for a sub-agent (the step budget is spent)';
  if (out.ms <= 0) return 'no time left for a sub-agent (the wall-clock budget is spent)';
  if (out.costUsd <= 0 || out.tokens <= 0) return 'no cost or token budget left for a sub-agent';
  return out;
}

/** What a child's end means to its parent's planner: a tool result (docs/spec.md §7.14 table). */
export function childResult(childId: string, r: RunResult): ToolResult {
  const said = r.summary ? `: ${r.summary}` : '';
  switch (r.terminal_state) {
    case TerminalState.COMPLETED:
      return {
        kind: 'SUCCESS',
        data: {
          childId,
          state: r.terminal_state,
          summary: r.summary,
          executed: r.executed,
          usage: r.usage ?? null,
        },
      };
    case TerminalState.FAILED:
      return {
        kind: 'FATAL',
        code: ResultCode.CHILD_FAILED,
        message: `sub-agent ${childId} FAILED (${r.reason})${said}`,
      };
    case TerminalState.PARTIAL:
      return {
        kind: 'PRECONDITION',
        code: ResultCode.CHILD_PARTIAL,
        unmet: `sub-agent ${childId} gave up (${r.reason})${said}`,
      };
    default:
      if (r.reason && isBudgetReason(r.reason))
        // Its budget was a reservation: the sub-task may be spawned again (its writes are in the
        // ledger), with a larger budget if the parent has one left.
        return {
          kind: 'RETRYABLE',
          code: ResultCode.CHILD_BUDGET,
          message: `sub-agent ${childId} used up its ${r.reason.replace('_budget', '')} budget${said}`,
        };
      return {
        kind: 'PRECONDITION',
        code: ResultCode.CHILD_STOPPED,
        unmet: `sub-agent ${childId} ended ${r.terminal_state} ${r.reason ?? ''}${said}`.trim(),
      };
  }
}

/** The sub-agents of one run: spawning, awaiting, and what the parent keeps of them. */
export class SubAgents {
  /** Events from children, oldest first, until the spawn loop takes them. */
  private readonly inbox: ChildEvent[] = [];
  /** The child being awaited: settles when it ends (for a cancelled parent to wait on). */
  private live: Promise<unknown> | null = null;

  constructor(
    private readonly run: RunState,
    private readonly gate: RunGate,
  ) {}

  /** The `childEvent` signal: kept for the spawn loop (a malformed one is ignored). */
  onChildEvent(raw: unknown): void {
    const e = raw as Partial<ChildEvent> | null;
    if (!e || typeof e.childId !== 'string' || (e.event !== 'stopped' && e.event !== 'resumed')) return;
    this.inbox.push(e as ChildEvent);
  }

  /** True when this proposal is a spawn this run may perform (fixture mode answers from its file). */
  handles(tool: string, fixture: unknown, rejection: unknown): boolean {
    return tool === SPAWN_AGENT_TOOL && !fixture && !rejection && this.run.input.subAgents !== undefined;
  }

  /** Waits for the child being awaited to end (a cancelled parent lets its subtree stop first). */
  async settle(): Promise<void> {
    if (this.live) await this.live;
  }

  /** Starts the child, awaits it while relaying its stops, and answers its end as a tool result. */
  async spawn(x: SpawnCall): Promise<ToolResult> {
    const run = this.run;
    const input = run.input;
    const limits = input.subAgents!;
    const args = x.args as SpawnArgs;
    const depth = (input.tree?.depth ?? 0) + 1;
    if (depth > limits.maxDepth)
      return refused(`depth limit ${limits.maxDepth} reached: this run is at depth ${depth - 1} of its tree`);
    if (run.children.length >= limits.maxChildren)
      return refused(
        `children limit reached: this run has spawned ${run.children.length} of ${limits.maxChildren}`,
      );
    const scripted = input.planner.kind === 'scripted';
    if (scripted && !args.script)
      return refused("a scripted run spawns with args.script (the child's script, run live)");
    if (!scripted && args.script) return refused('args.script is for scripted runs only');
    const budget = reserveBudget(run.guard.remaining(Date.now()), args.budget);
    if (typeof budget === 'string') return refused(budget);

    const childId = `${run.runId}/sub-${run.children.length + 1}`;
    const rootId = input.tree?.rootId ?? run.runId;
    const summary: ChildSummary = {
      workflowId: childId,
      goal: args.goal,
      state: 'RUNNING',
      reason: null,
      reserved: {
        steps: bounded(budget.steps),
        tokens: bounded(budget.tokens),
        costUsd: bounded(budget.costUsd),
        ms: bounded(budget.ms),
      },
      used: null,
    };
    const childInput: RunInput = {
      goal: args.goal,
      planner: scripted ? { kind: 'scripted', live: true, script: args.script } : input.planner,
      guard: {
        ...input.guard,
        maxSteps: budget.steps,
        ...(Number.isFinite(budget.ms) ? { maxMs: budget.ms } : {}),
        ...(Number.isFinite(budget.tokens) ? { maxTokens: budget.tokens } : {}),
        ...(Number.isFinite(budget.costUsd) ? { maxCostUsd: budget.costUsd } : {}),
      },
      tools: args.tools,
      subAgents: limits,
      tree: { rootId, parentId: run.runId, depth },
      // The child's model calls bill to the same tenant, under the same spend limit (§7.13).
      tenant: input.tenant,
      resumeWindowMs: input.resumeWindowMs,
      maxHistoryEvents: input.maxHistoryEvents,
      traceLimit: input.traceLimit,
      timeouts: input.timeouts,
    };
    let handle: ChildWorkflowHandle<(i: RunInput) => Promise<RunResult>>;
    try {
      handle = await startChild<(i: RunInput) => Promise<RunResult>>(WORKFLOW_TYPE, {
        workflowId: childId,
        args: [childInput],
        taskQueue: workflowInfo().taskQueue,
        // The kill switch cancels the child and waits for it to stop; a parent that is closed
        // without that (terminated, timed out) still asks its children to stop.
        cancellationType: ChildWorkflowCancellationType.WAIT_CANCELLATION_COMPLETED,
        parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
        typedSearchAttributes: [{ key: AGENT_ROOT_RUN, value: rootId }],
      });
    } catch (err) {
      if (isCancellation(err)) throw err;
      return refused(`could not start the sub-agent: ${redactText(String((err as Error)?.message ?? err))}`);
    }
    run.children.push(summary);
    run.note('spawn', null, {
      tool: SPAWN_AGENT_TOOL,
      fingerprint: x.call.fingerprint,
      args: { childId, depth },
    });
    run.publish(false);

    let ended: RunResult | null = null;
    let failure: unknown = null;
    // A child that did not complete ends as a failed workflow carrying its result (run-end.ts).
    this.live = handle.result().then(
      (r) => void (ended = r),
      (e: unknown) => {
        ended = runResultOf(e);
        if (ended === null) failure = e;
      },
    );
    let cancelled = false;
    let waitingSince: number | null = null;
    for (;;) {
      await condition(
        () =>
          ended !== null ||
          failure !== null ||
          this.inbox.some((e) => e.childId === childId) ||
          (this.gate.stopHeld && !cancelled),
      );
      if (ended !== null || failure !== null) break;
      if (this.gate.stopHeld && !cancelled) {
        // The kill switch stops the subtree: the child is cancelled (and cancels its own child)
        // and ends with its StopReport; this run then applies its own stop at the loop's top.
        cancelled = true;
        run.childLift('the kill switch stops the sub-agent');
        await getExternalWorkflowHandle(childId).cancel();
        continue;
      }
      const i = this.inbox.findIndex((e) => e.childId === childId);
      const e = this.inbox.splice(i, 1)[0]!;
      if (e.event === 'stopped' && !cancelled) {
        summary.state = 'WAITING';
        summary.reason = e.reason ?? null;
        waitingSince ??= Date.now();
        const state = e.terminalState ?? TerminalState.NEEDS_HUMAN;
        const unmet = `sub-agent ${childId} stopped ${state} ${e.reason ?? ''}${e.detail ? `: ${e.detail}` : ''}`;
        run.childStop(state, x.call, unmet);
        // This run waits too: its own parent (if any) waits with it, up to the root.
        await tellParent(run, 'stopped');
      } else if (e.event === 'resumed') {
        summary.state = 'RUNNING';
        summary.reason = null;
        if (run.stopInForce) {
          run.childLift();
          await tellParent(run, 'resumed');
        }
      }
    }
    this.live = null;
    run.childLift('the sub-agent ended');
    if (waitingSince !== null) run.guard.discountWait(Date.now() - waitingSince);
    if (failure !== null) {
      if (isCancellation(failure)) throw failure;
      summary.state = TerminalState.FAILED;
      summary.reason = 'workflow_failed';
      const message = redactText(String((failure as Error)?.message ?? failure));
      return {
        kind: 'FATAL',
        code: ResultCode.CHILD_FAILED,
        message: `sub-agent ${childId} failed: ${message}`,
      };
    }
    const r = ended as unknown as RunResult;
    const used = r.usage
      ? { steps: r.usage.steps, tokens: r.usage.tokens, costUsd: r.usage.cost_usd }
      : { steps: r.executed, tokens: 0, costUsd: 0 };
    // What the child actually used joins this run's totals; the rest of the reservation is free again.
    run.guard.charge(used);
    summary.used = used;
    summary.state = r.terminal_state;
    summary.reason = r.reason;
    return childResult(childId, r);
  }
}
