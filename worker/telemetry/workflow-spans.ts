/**
 * Worker-side handling of the spans the OpenTelemetry workflow interceptors make inside
 * the workflow sandbox. Those spans leave the sandbox through the interceptors' `exporter`
 * sink (`makeWorkflowExporter`), which hands them to {@link WorkflowSpanProcessor} here:
 *
 *  - it strips the workflow info the SDK pastes onto every workflow span down to scalar
 *    values (the SDK copies the whole `WorkflowInfo`, memo, search attributes and
 *    `lastResult` included; traces get ids and counters, not payloads);
 *  - it remembers, per workflow, the trace context of the workflow's `RunWorkflow` span, so
 *    the guard-decision spans the `agentTelemetry` sink makes worker-side land in the same
 *    trace, under the same parent, as the activities.
 *
 * How the context is recovered: a `StartActivity:plan` span is a child of the workflow
 * span (the loop schedules `plan`), and the worker calls an activation's sinks in the order
 * the workflow called them, so the span of the `plan` that produced a proposal reaches this
 * processor before the `agentTelemetry.decision` call about that proposal.
 */
import type { Attributes, Context } from '@opentelemetry/api';
import type { ReadableSpan, Span, SpanProcessor } from '@opentelemetry/sdk-trace-base';

/** The part of a span context a child span needs. */
export interface ParentContext {
  readonly traceId: string;
  readonly spanId: string;
  readonly traceFlags: number;
  /** The Temporal run id of the workflow span. */
  readonly temporalRunId: string | null;
}

/** WorkflowInfo keys never copied onto a span, even when scalar. */
const DROPPED_INFO_KEYS = new Set([
  'lastResult',
  'lastFailure',
  'memo',
  'searchAttributes',
  'typedSearchAttributes',
]);

type Scalar = string | number | boolean;
const isScalar = (v: unknown): v is Scalar =>
  typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v));

/** Only scalar attributes (and arrays of them); see the module comment. */
export function scalarAttributes(attrs: ReadableSpan['attributes']): ReadableSpan['attributes'] {
  const out: Attributes = {};
  for (const [k, v] of Object.entries(attrs)) {
    if (DROPPED_INFO_KEYS.has(k)) continue;
    // Arrays pass as they are: the SDK's own attribute arrays are homogeneous already.
    if (isScalar(v) || (Array.isArray(v) && v.every(isScalar))) out[k] = v;
  }
  return out;
}

/** The parents of the decision spans, per workflow id; bounded, oldest forgotten first. */
export class WorkflowTraceContexts {
  private readonly byWorkflow = new Map<string, ParentContext>();

  /** @param max how many workflows to remember (a run that moved to another worker is never closed here) */
  constructor(private readonly max = 10_000) {}

  /** Learns from one exported workflow span. */
  observe(span: ReadableSpan): void {
    if (!span.name.startsWith('StartActivity:plan') || !span.parentSpanId) return;
    const workflowId = span.attributes.workflowId;
    if (typeof workflowId !== 'string') return;
    const runId = span.attributes.runId;
    const sc = span.spanContext();
    this.byWorkflow.delete(workflowId); // re-insert: the Map's order is the eviction order
    this.byWorkflow.set(workflowId, {
      traceId: sc.traceId,
      spanId: span.parentSpanId,
      traceFlags: sc.traceFlags,
      temporalRunId: typeof runId === 'string' ? runId : null,
    });
    if (this.byWorkflow.size > this.max) {
      const oldest = this.byWorkflow.keys().next().value;
      if (oldest !== undefined) this.byWorkflow.delete(oldest);
    }
  }

  /** The workflow span's context, if one of its activities was seen. */
  get(workflowId: string): ParentContext | undefined {
    return this.byWorkflow.get(workflowId);
  }

  /** Forgets a closed workflow. */
  forget(workflowId: string): void {
    this.byWorkflow.delete(workflowId);
  }

  /** How many workflows are remembered (tests). */
  get size(): number {
    return this.byWorkflow.size;
  }
}

/**
 * The span processor given to `makeWorkflowExporter`: scalar attributes only, context
 * tracking, then the tracer provider's own processor. It does not own `inner` (the tracer
 * provider flushes and shuts it down), so its own flush and shutdown do nothing.
 */
export class WorkflowSpanProcessor implements SpanProcessor {
  constructor(
    private readonly inner: SpanProcessor,
    private readonly contexts: WorkflowTraceContexts,
  ) {}

  onStart(_span: Span, _parentContext: Context): void {
    // Workflow spans arrive ended; there is nothing to start.
  }

  onEnd(span: ReadableSpan): void {
    // `makeWorkflowExporter` builds a plain object (spanContext is an own property), so a
    // spread copy is a complete ReadableSpan.
    const clean: ReadableSpan = { ...span, attributes: scalarAttributes(span.attributes) };
    this.contexts.observe(clean);
    this.inner.onEnd(clean);
  }

  forceFlush(): Promise<void> {
    return Promise.resolve();
  }

  shutdown(): Promise<void> {
    return Promise.resolve();
  }
}
