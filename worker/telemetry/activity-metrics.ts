/**
 * Metrics read off the activities' own inputs and outputs, by an activity interceptor, so
 * activities/run/ stays free of telemetry: `runTool` → tool executions
 * and ledger outcomes, `plan` → planner tokens and cost. A thrown activity (a retry, a
 * planner outage) records nothing here; its `RunActivity:*` span carries the error.
 */
import type { Counter, Meter } from '@opentelemetry/api';
import type { Context as ActivityContext } from '@temporalio/activity';
import type { ActivityExecuteInput, ActivityInboundCallsInterceptor, Next } from '@temporalio/worker';
import type { PlanInput, PlanOutput, RunToolInput, RunToolOutput } from '../../activities/types';
import { ResultCode } from '../../guard';
import { MetricAttr, MetricNames } from './names';

/** The tool effect lookup (the worker's ToolRegistry satisfies it). */
export interface ToolEffects {
  get(name: string): { readonly effect: 'read' | 'write' } | undefined;
}

/** The ledger answers that ran nothing, by result code (activities/run/run-tool-activity.ts `mapOutcome`). */
const LEDGER_NOT_RUN_CODES: ReadonlySet<string> = new Set([
  ResultCode.IN_PROGRESS,
  ResultCode.OUTCOME_UNKNOWN,
  ResultCode.IDEMPOTENCY_CONFLICT,
]);

/**
 * What the ledger answered for one write: `executed` (the side effect ran now, whatever
 * it returned), `ledger` (a stored result, zero calls), `reconciled` (the tool's reconcile
 * probe settled an earlier attempt's lost dispatch, zero calls), the code of a claim that ran
 * nothing (`in_progress`, `outcome_unknown`, `idempotency_conflict`), or `not_run` (refused
 * before the ledger: missing operation key, invalid args).
 */
export function ledgerOutcome(out: RunToolOutput): string {
  if (out.via === 'executed' || out.via === 'ledger' || out.via === 'reconciled') return out.via;
  const code = 'code' in out.result ? out.result.code : undefined;
  return code !== undefined && LEDGER_NOT_RUN_CODES.has(code) ? code : 'not_run';
}

/** The counters the interceptor feeds. */
export interface ActivityInstruments {
  readonly toolExecutions: Counter;
  readonly ledgerOutcomes: Counter;
  readonly plannerTokens: Counter;
  readonly plannerCost: Counter;
}

/** Creates the activity counters on `meter`. */
export function activityInstruments(meter: Meter): ActivityInstruments {
  return {
    toolExecutions: meter.createCounter(MetricNames.TOOL_EXECUTIONS, {
      description: 'runTool activity completions, by tool, effect, how it was answered and result kind',
    }),
    ledgerOutcomes: meter.createCounter(MetricNames.LEDGER_OUTCOMES, {
      description: 'What the idempotency ledger answered for write tool calls',
    }),
    plannerTokens: meter.createCounter(MetricNames.PLANNER_TOKENS, {
      description: 'Tokens the planner reported, by planner kind and model',
      unit: '{token}',
    }),
    plannerCost: meter.createCounter(MetricNames.PLANNER_COST_USD, {
      description: 'Planner cost in US dollars, by planner kind and model',
      unit: 'USD',
    }),
  };
}

/** Records `runTool` and `plan` outcomes; every other activity passes through untouched. */
export class ActivityMetricsInterceptor implements ActivityInboundCallsInterceptor {
  constructor(
    private readonly ctx: ActivityContext,
    private readonly m: ActivityInstruments,
    private readonly tools: ToolEffects | null,
  ) {}

  async execute(
    input: ActivityExecuteInput,
    next: Next<ActivityInboundCallsInterceptor, 'execute'>,
  ): Promise<unknown> {
    const out = await next(input);
    const type = this.ctx.info.activityType;
    if (type === 'runTool') {
      const call = input.args[0] as RunToolInput;
      const done = out as RunToolOutput;
      this.tool(call, done);
      // A scripted run's next turn, planned inside this runTool (the prefetch), is a
      // planner turn like a `plan` activity's (one the run then discards is counted too).
      if (call.prefetch && done.next) this.plan(call.prefetch, done.next);
    } else if (type === 'plan') this.plan(input.args[0] as PlanInput, out as PlanOutput);
    return out;
  }

  private tool(input: RunToolInput, out: RunToolOutput): void {
    const effect = this.tools?.get(input.tool)?.effect ?? 'unknown';
    this.m.toolExecutions.add(1, {
      [MetricAttr.TOOL]: input.tool,
      [MetricAttr.EFFECT]: effect,
      [MetricAttr.VIA]: out.via,
      [MetricAttr.RESULT_KIND]: out.result.kind,
    });
    if (effect === 'write' && out.via !== 'fixture')
      this.m.ledgerOutcomes.add(1, {
        [MetricAttr.TOOL]: input.tool,
        [MetricAttr.OUTCOME]: ledgerOutcome(out),
      });
  }

  private plan(input: Pick<PlanInput, 'planner'>, out: PlanOutput): void {
    const usage = out.turn.usage;
    const a = {
      [MetricAttr.PLANNER_KIND]: input.planner.kind,
      [MetricAttr.PLANNER_MODEL]: 'model' in input.planner ? input.planner.model : 'none',
      [MetricAttr.TURN_TYPE]: out.turn.type,
    };
    // Counters take non-negative values only; a planner that reports nothing adds nothing.
    if (usage.tokens > 0) this.m.plannerTokens.add(usage.tokens, a);
    if (usage.costUsd > 0) this.m.plannerCost.add(usage.costUsd, a);
  }
}
