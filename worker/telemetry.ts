/**
 * OpenTelemetry for the worker: traces (workflow and activity spans from
 * `@temporalio/interceptors-opentelemetry`, plus one span per guard decision), metrics
 * (guard stops, tool executions, ledger outcomes, planner tokens and cost) and the
 * Temporal runtime's own metrics, configured from the standard `OTEL_*` variables
 * (worker/telemetry/config.ts). Off when none is set: no provider, no exporter, no
 * interceptor; the workflow's sink stays the worker's no-op.
 *
 * Nothing here can change what a run decides: the workflow interceptors only add headers
 * and spans (no commands), the decision spans come from a sink that is not in history and
 * not called on replay, and the activity interceptors read outputs they do not alter.
 * See docs/observability.md.
 *
 * @example
 *   const telemetry = createTelemetry(process.env);
 *   if (telemetry.runtimeOptions) Runtime.install(telemetry.runtimeOptions); // before any connection
 *   const worker = await createAgentWorker({ ...options, ...telemetry.workerOptions(deps.registry) });
 *   try { await worker.run(); } finally { await telemetry.shutdown(); }
 */
import { context, propagation, type Meter, type TextMapPropagator, type Tracer } from '@opentelemetry/api';
import type * as OtelCore from '@opentelemetry/core';
import type * as OtlpMetrics from '@opentelemetry/exporter-metrics-otlp-http';
import type * as OtlpTraces from '@opentelemetry/exporter-trace-otlp-http';
import type * as OtelResources from '@opentelemetry/resources';
import type { Resource } from '@opentelemetry/resources';
import type * as SdkMetrics from '@opentelemetry/sdk-metrics';
import type { MeterProvider, PushMetricExporter } from '@opentelemetry/sdk-metrics';
import type * as SdkTrace from '@opentelemetry/sdk-trace-base';
import type { BasicTracerProvider, SpanExporter, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type * as TemporalOtel from '@temporalio/interceptors-opentelemetry';
import type { OpenTelemetrySinks } from '@temporalio/interceptors-opentelemetry';
import type { InjectedSinks, RuntimeOptions, WorkerInterceptors } from '@temporalio/worker';
import { loadOptional, resolveOptional, type OptionalModule } from '../common/optional-dep';
import type { AgentWorkerOptions } from './create-worker';
import {
  activityInstruments,
  ActivityMetricsInterceptor,
  type ToolEffects,
} from './telemetry/activity-metrics';
import { createAgentSinkTelemetry } from './telemetry/agent-sink';
import { AsyncLocalStorageContextManager } from './telemetry/context-manager';
import { readTelemetryConfig, type TelemetryConfig } from './telemetry/config';
import { INSTRUMENTATION_SCOPE } from './telemetry/names';
import { WorkflowSpanProcessor, WorkflowTraceContexts } from './telemetry/workflow-spans';

export { readTelemetryConfig, OTEL_ENV_DOCS, type TelemetryConfig } from './telemetry/config';
export { TelemetryConfigError, TelemetryError } from './telemetry/errors';
export { Attr, EventNames, MetricAttr, MetricNames, SpanNames } from './telemetry/names';
export type { ToolEffects } from './telemetry/activity-metrics';

/**
 * The OpenTelemetry SDK, its exporters and Temporal's interceptors: optional packages
 * (common/optional-dep.ts), loaded only when an `OTEL_*` variable (or an override) turns a
 * signal on. A missing one is an error whose install command names the whole set.
 */
export const OTEL_PACKAGES = [
  '@opentelemetry/core',
  '@opentelemetry/resources',
  '@opentelemetry/sdk-trace-base',
  '@opentelemetry/sdk-metrics',
  '@opentelemetry/exporter-trace-otlp-http',
  '@opentelemetry/exporter-metrics-otlp-http',
  '@temporalio/interceptors-opentelemetry',
] as const;

const FOR_OTEL = 'OpenTelemetry (an OTEL_* exporter is set)';

function otel<T>(specifier: OptionalModule): T {
  return loadOptional<T>(specifier, FOR_OTEL, OTEL_PACKAGES);
}

/**
 * The workflow interceptor module of `@temporalio/interceptors-opentelemetry`: bundled into
 * the workflow code (Worker `interceptors.workflowModules`, or `bundleWorkflowCode({
 * workflowInterceptorModules })` for a prebuilt bundle).
 *
 * @throws {OptionalDependencyError} when `@temporalio/interceptors-opentelemetry` is not installed
 */
export function otelWorkflowInterceptorsModule(): string {
  return resolveOptional(
    '@temporalio/interceptors-opentelemetry/lib/workflow-interceptors',
    FOR_OTEL,
    OTEL_PACKAGES,
  );
}

/** Exporters that replace the ones the environment names (tests: the SDK's in-memory exporters). */
export interface TelemetryOverrides {
  /** Every span goes here, through a SimpleSpanProcessor (exported as each span ends). */
  readonly spanExporter?: SpanExporter;
  /** Every metric goes here, on `flush()`/`shutdown()` and every export interval. */
  readonly metricExporter?: PushMetricExporter;
}

/** The parts of {@link AgentWorkerOptions} telemetry fills in. */
export type TelemetryWorkerOptions = Pick<AgentWorkerOptions, 'interceptors' | 'sinks' | 'telemetry'>;

/** The worker's telemetry, on or off. */
export interface Telemetry {
  /** False when nothing is exported; every other member is then null or a no-op. */
  readonly enabled: boolean;
  /** The settings read from the environment. */
  readonly config: TelemetryConfig;
  /** Not registered globally: the worker passes its tracer to the interceptors explicitly. */
  readonly tracerProvider: BasicTracerProvider | null;
  readonly meterProvider: MeterProvider | null;
  /**
   * `Runtime.install` options that make the Temporal core export its own metrics (task
   * latencies, poller and slot counts, …) over OTLP/HTTP; null unless metrics go to OTLP.
   * Install once per process, before any connection.
   */
  readonly runtimeOptions: RuntimeOptions | null;
  /** The span exporter sink of the workflow interceptors (also in {@link workerOptions}). */
  readonly workflowSinks: InjectedSinks<OpenTelemetrySinks> | null;
  /**
   * What to spread into `createAgentWorker`'s options: the interceptors (activity spans
   * and metrics, the workflow module), the workflow span exporter sink and the
   * `agentTelemetry` implementation. `tools` gives the tool effects for the metrics.
   * Empty when telemetry is off.
   */
  workerOptions(tools?: ToolEffects): TelemetryWorkerOptions;
  /** Exports everything pending (spans and metrics). */
  flush(): Promise<void>;
  /** Flushes and stops the providers; idempotent. */
  shutdown(): Promise<void>;
}

let w3cPropagator: TextMapPropagator | null = null;

/** W3C trace context and baggage (one instance per process). */
function w3cPropagatorOf(): TextMapPropagator {
  if (w3cPropagator) return w3cPropagator;
  const { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } =
    otel<typeof OtelCore>('@opentelemetry/core');
  w3cPropagator = new CompositePropagator({
    propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()],
  });
  return w3cPropagator;
}

function resourceOf(config: TelemetryConfig): Resource {
  const { Resource } = otel<typeof OtelResources>('@opentelemetry/resources');
  return Resource.default().merge(
    new Resource({ ...config.resourceAttributes, 'service.name': config.serviceName }),
  );
}

function spanProcessorOf(config: TelemetryConfig, o: TelemetryOverrides): SpanProcessor | null {
  const t = config.traces;
  if (!o.spanExporter && t.exporter !== 'otlp' && t.exporter !== 'console') return null;
  const { BatchSpanProcessor, ConsoleSpanExporter, SimpleSpanProcessor } = otel<typeof SdkTrace>(
    '@opentelemetry/sdk-trace-base',
  );
  if (o.spanExporter) return new SimpleSpanProcessor(o.spanExporter);
  if (t.exporter === 'otlp') {
    const { OTLPTraceExporter } = otel<typeof OtlpTraces>('@opentelemetry/exporter-trace-otlp-http');
    return new BatchSpanProcessor(new OTLPTraceExporter({ url: t.url, headers: { ...t.headers } }));
  }
  return new SimpleSpanProcessor(new ConsoleSpanExporter());
}

function metricExporterOf(config: TelemetryConfig, o: TelemetryOverrides): PushMetricExporter | null {
  if (o.metricExporter) return o.metricExporter;
  const m = config.metrics;
  if (m.exporter === 'otlp') {
    const { OTLPMetricExporter } = otel<typeof OtlpMetrics>('@opentelemetry/exporter-metrics-otlp-http');
    return new OTLPMetricExporter({ url: m.url, headers: { ...m.headers } });
  }
  if (m.exporter === 'console')
    return new (otel<typeof SdkMetrics>('@opentelemetry/sdk-metrics').ConsoleMetricExporter)();
  return null;
}

function meterProviderOf(
  config: TelemetryConfig,
  resource: Resource,
  exporter: PushMetricExporter,
): MeterProvider {
  const { MeterProvider, PeriodicExportingMetricReader } = otel<typeof SdkMetrics>(
    '@opentelemetry/sdk-metrics',
  );
  return new MeterProvider({
    resource,
    readers: [
      new PeriodicExportingMetricReader({
        exporter,
        exportIntervalMillis: config.metricExportIntervalMs,
        exportTimeoutMillis: Math.min(30_000, config.metricExportIntervalMs),
      }),
    ],
  });
}

/**
 * The Temporal core's metrics to the same OTLP/HTTP endpoint (the core speaks OTLP/HTTP
 * protobuf itself; it also honours the `OTEL_EXPORTER_OTLP_*` endpoint variables).
 */
export function runtimeOptionsOf(config: TelemetryConfig): RuntimeOptions | null {
  const m = config.metrics;
  if (m.exporter !== 'otlp') return null;
  return {
    telemetryOptions: {
      metrics: {
        otel: {
          url: m.url,
          http: true,
          headers: { ...m.headers },
          metricsExportInterval: config.metricExportIntervalMs,
        },
        globalTags: { 'service.name': config.serviceName },
      },
    },
  };
}

/**
 * Builds the worker's telemetry from `OTEL_*` variables (see worker/telemetry/config.ts);
 * `overrides` replace the exporters (and turn their signal on). Throws a
 * TelemetryConfigError naming the variable on a bad value.
 */
export function createTelemetry(env: NodeJS.ProcessEnv, overrides: TelemetryOverrides = {}): Telemetry {
  const config = readTelemetryConfig(env);
  const spanProcessor = spanProcessorOf(config, overrides);
  const metricExporter = metricExporterOf(config, overrides);
  if (!spanProcessor && !metricExporter) return offTelemetry(config);

  // The activity interceptor reads the workflow's span context from the activity's headers
  // through the global propagator and makes it the parent through the global context
  // manager; the API's defaults are no-ops, which would make every activity span a root.
  // W3C trace context (the SDK default) and AsyncLocalStorage; ones registered earlier are
  // kept (the API refuses a second registration).
  if (spanProcessor) {
    propagation.setGlobalPropagator(w3cPropagatorOf());
    context.setGlobalContextManager(new AsyncLocalStorageContextManager());
  }
  const resource = resourceOf(config);
  const tracerProvider = spanProcessor
    ? new (otel<typeof SdkTrace>('@opentelemetry/sdk-trace-base').BasicTracerProvider)({
        resource,
        spanProcessors: [spanProcessor],
      })
    : null;
  const meterProvider = metricExporter ? meterProviderOf(config, resource, metricExporter) : null;
  const tracer: Tracer | null = tracerProvider?.getTracer(INSTRUMENTATION_SCOPE) ?? null;
  const meter: Meter | null = meterProvider?.getMeter(INSTRUMENTATION_SCOPE) ?? null;
  const contexts = new WorkflowTraceContexts();
  const agentTelemetry = createAgentSinkTelemetry({ tracer, meter, contexts });
  // Temporal's interceptors: the workflow span exporter sink and the activity spans.
  const temporalOtel = spanProcessor
    ? otel<typeof TemporalOtel>('@temporalio/interceptors-opentelemetry')
    : null;
  const workflowSinks =
    spanProcessor !== null && temporalOtel
      ? {
          exporter: temporalOtel.makeWorkflowExporter(
            new WorkflowSpanProcessor(spanProcessor, contexts),
            resource,
          ),
        }
      : null;
  const workflowModules = workflowSinks ? [otelWorkflowInterceptorsModule()] : [];
  const instruments = meter ? activityInstruments(meter) : null;
  // The Temporal interceptors default to the global tracer; they get ours explicitly.
  const activityTracer = tracerProvider?.getTracer('@temporalio/interceptor-activity') ?? null;

  let stopped: Promise<void> | null = null;
  return {
    enabled: true,
    config,
    tracerProvider,
    meterProvider,
    runtimeOptions: runtimeOptionsOf(config),
    workflowSinks,
    workerOptions(tools) {
      const activity: NonNullable<WorkerInterceptors['activity']> = [];
      if (activityTracer && temporalOtel)
        activity.push((ctx) => ({
          inbound: new temporalOtel.OpenTelemetryActivityInboundInterceptor(ctx, { tracer: activityTracer }),
          outbound: new temporalOtel.OpenTelemetryActivityOutboundInterceptor(ctx),
        }));
      if (instruments)
        activity.push((ctx) => ({
          inbound: new ActivityMetricsInterceptor(ctx, instruments, tools ?? null),
        }));
      return {
        interceptors: { activity, workflowModules },
        ...(workflowSinks ? { sinks: workflowSinks } : {}),
        telemetry: agentTelemetry,
      };
    },
    async flush() {
      await Promise.all([tracerProvider?.forceFlush(), meterProvider?.forceFlush()]);
    },
    shutdown() {
      stopped ??= Promise.all([tracerProvider?.shutdown(), meterProvider?.shutdown()]).then(() => undefined);
      return stopped;
    },
  };
}

function offTelemetry(config: TelemetryConfig): Telemetry {
  return {
    enabled: false,
    config,
    tracerProvider: null,
    meterProvider: null,
    runtimeOptions: null,
    workflowSinks: null,
    workerOptions: () => ({}),
    flush: () => Promise.resolve(),
    shutdown: () => Promise.resolve(),
  };
}
