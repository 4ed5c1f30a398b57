/**
 * The OpenTelemetry side of the workflow's `agentTelemetry` sink (common/telemetry.ts):
 * every decision becomes a short `guard.decision` span with one `guard.decision` event,
 * every stop or close an `agent.run.end` span, and both feed the guard counters.
 *
 * Why spans made worker-side: the workflow's own spans live in the sandbox and carry
 * only what the interceptors put there; the sink runs in the worker after the activation,
 * never on replay, so nothing here can change a decision. The spans join the workflow's
 * trace as children of its `RunWorkflow` span when {@link WorkflowTraceContexts} knows
 * it (the OTel workflow interceptors are on), else they are roots carrying the workflow id.
 * Nothing secret is recorded: the events carry the call's fingerprint, never its arguments.
 */
import {
  ROOT_CONTEXT,
  trace,
  type Attributes,
  type Context,
  type Counter,
  type Meter,
  type Tracer,
} from '@opentelemetry/api';
import type { DecisionEvent, RunEndEvent, TurnEvent } from '../../common/telemetry';
import type { AgentTelemetry } from '../create-worker';
import { Attr, EventNames, MetricAttr, MetricNames, SpanNames } from './names';
import type { WorkflowTraceContexts } from './workflow-spans';

/** What the sink writes to; either may be absent (traces only, metrics only). */
export interface AgentSinkTargets {
  readonly tracer: Tracer | null;
  readonly meter: Meter | null;
  readonly contexts: WorkflowTraceContexts;
}

/** Attributes without the nulls (OTel drops null values with a warning). */
function attrs(entries: Record<string, string | number | boolean | null>): Attributes {
  const out: Attributes = {};
  for (const [k, v] of Object.entries(entries)) if (v !== null) out[k] = v;
  return out;
}

/** Builds the {@link AgentTelemetry} that turns the sink's calls into spans and metrics. */
export function createAgentSinkTelemetry(t: AgentSinkTargets): AgentTelemetry {
  const decisions: Counter | null =
    t.meter?.createCounter(MetricNames.GUARD_DECISIONS, {
      description: 'Decisions of agent runs, by phase, spec rule and decision',
    }) ?? null;
  const stops: Counter | null =
    t.meter?.createCounter(MetricNames.GUARD_STOPS, {
      description: 'Runs stopped by the guard or the runtime, by reason and terminal state',
    }) ?? null;
  const closed: Counter | null =
    t.meter?.createCounter(MetricNames.RUNS_CLOSED, {
      description: 'Runs that closed, by terminal state and reason',
    }) ?? null;

  /** The parent of a run's spans: the workflow span when known. */
  function parentOf(workflowId: string): { ctx: Context; runId: string | null } {
    const p = t.contexts.get(workflowId);
    if (!p) return { ctx: ROOT_CONTEXT, runId: null };
    const ctx = trace.setSpanContext(ROOT_CONTEXT, {
      traceId: p.traceId,
      spanId: p.spanId,
      traceFlags: p.traceFlags,
      isRemote: true,
    });
    return { ctx, runId: p.temporalRunId };
  }

  function span(
    name: string,
    workflowId: string,
    eventName: string,
    a: Attributes,
    time?: { startMs: number; endMs: number },
  ): void {
    if (!t.tracer) return;
    const { ctx, runId } = parentOf(workflowId);
    const all = { ...a, [Attr.WORKFLOW_ID]: workflowId, ...(runId ? { [Attr.RUN_ID]: runId } : {}) };
    const s = t.tracer.startSpan(
      name,
      { attributes: all, ...(time ? { startTime: time.startMs } : {}) },
      ctx,
    );
    s.addEvent(eventName, a);
    s.end(time?.endMs);
  }

  return {
    decision(e: DecisionEvent): void {
      const a = attrs({
        [Attr.AGENT_RUN_ID]: e.runId,
        [Attr.PHASE]: e.phase,
        [Attr.RULE]: e.rule,
        [Attr.DECISION]: e.decision,
        [Attr.REASON]: e.reason,
        [Attr.TOOL]: e.tool,
        [Attr.FINGERPRINT]: e.fingerprint,
        [Attr.RESULT_KIND]: e.resultKind,
        [Attr.ERROR_CODE]: e.errorCode,
        [Attr.STEP]: e.step,
        [Attr.PROGRESS_VERSION]: e.progressVersion,
      });
      // The decision's own time: it may reach the sink in a batch, later (core/telemetry-outbox.ts).
      const at = typeof e.atMs === 'number' ? { startMs: e.atMs, endMs: e.atMs } : undefined;
      span(
        SpanNames.DECISION,
        e.runId,
        e.decision === 'steer' ? EventNames.STEER : EventNames.DECISION,
        a,
        at,
      );
      decisions?.add(1, {
        [MetricAttr.PHASE]: e.phase,
        [MetricAttr.RULE]: e.rule,
        [MetricAttr.DECISION]: e.decision,
      });
    },
    turn(e: TurnEvent): void {
      const a = attrs({
        [Attr.AGENT_RUN_ID]: e.runId,
        [Attr.TURN]: e.turn,
        [Attr.TURN_KIND]: e.kind,
        [Attr.TURN_OUTCOME]: e.outcome,
        [Attr.TURN_MESSAGES]: e.messages,
      });
      // The span covers the wait for the person (workflow time); nothing the person wrote is in it.
      span(SpanNames.TURN, e.runId, EventNames.TURN, a, { startMs: e.startedAtMs, endMs: e.endedAtMs });
    },
    runEnd(e: RunEndEvent): void {
      const a = attrs({
        [Attr.AGENT_RUN_ID]: e.runId,
        [Attr.TERMINAL_STATE]: e.terminalState,
        [Attr.REASON]: e.reason,
        [Attr.CLOSED]: e.closed,
      });
      span(SpanNames.RUN_END, e.runId, EventNames.RUN_END, a);
      const m = attrs({
        [MetricAttr.TERMINAL_STATE]: e.terminalState,
        [MetricAttr.REASON]: e.reason ?? 'none',
      });
      // A stop is reported when it happens (closed=false); the close that follows it is a
      // different count, so a stopped run that was never resumed is one stop and one close.
      if (e.closed) {
        closed?.add(1, m);
        t.contexts.forget(e.runId);
      } else {
        stops?.add(1, m);
      }
    },
  };
}
