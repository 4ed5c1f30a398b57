/**
 * The worker's OpenTelemetry settings, read from the standard `OTEL_*` environment
 * variables (https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/).
 *
 * One deliberate difference from the OTel SDK defaults: telemetry is OFF unless something
 * asks for it. The spec's default exporter is `otlp` to localhost, which would make every
 * worker without a collector retry exports forever; here a signal is exported only when an
 * OTLP endpoint is set or its `OTEL_*_EXPORTER` names an exporter.
 *
 * Pure: takes the environment as an argument, never reads `process.env` itself.
 */
import { TelemetryConfigError } from './errors';

/** Every `OTEL_*` variable the worker reads, with what it means (merged into worker/env.ts). */
export const OTEL_ENV_DOCS = {
  OTEL_SDK_DISABLED: 'true: no traces and no metrics, whatever else is set.',
  OTEL_SERVICE_NAME: 'service.name of the worker\'s spans and metrics (default "agent-loop-guard-worker").',
  OTEL_RESOURCE_ATTRIBUTES:
    'Extra resource attributes, key=value,key2=value2 (values percent-encoded), e.g. deployment.environment=prod.',
  OTEL_EXPORTER_OTLP_ENDPOINT:
    'OTLP/HTTP base URL of a collector, e.g. http://otel-collector:4318 (traces go to /v1/traces, metrics to /v1/metrics). Setting it turns traces and metrics on.',
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'Full OTLP/HTTP URL for traces (used as is); turns traces on.',
  OTEL_EXPORTER_OTLP_METRICS_ENDPOINT:
    "Full OTLP/HTTP URL for metrics (used as is); turns metrics on, the Temporal runtime's included.",
  OTEL_EXPORTER_OTLP_HEADERS: 'Headers sent with every export, key=value,key2=value2 (e.g. an auth token).',
  OTEL_TRACES_EXPORTER:
    'otlp | console | none. Default: otlp when an OTLP endpoint is set, else none (tracing off).',
  OTEL_METRICS_EXPORTER:
    'otlp | console | none. Default: otlp when an OTLP endpoint is set, else none (metrics off).',
  OTEL_METRIC_EXPORT_INTERVAL: 'Milliseconds between metric exports (default 60000).',
} as const;

/** The `OTEL_*` variable names the worker reads. */
export type OtelEnvVar = keyof typeof OTEL_ENV_DOCS;

/** Where one signal goes. */
export type ExporterChoice = 'otlp' | 'console' | 'none';

/** A signal's export settings. */
export type SignalConfig =
  | { readonly exporter: 'none' }
  | { readonly exporter: 'console' }
  | { readonly exporter: 'otlp'; readonly url: string; readonly headers: Readonly<Record<string, string>> };

/** The worker's telemetry settings. */
export interface TelemetryConfig {
  /** False when neither traces nor metrics are exported: the worker then runs no OTel code at all. */
  readonly enabled: boolean;
  readonly serviceName: string;
  readonly resourceAttributes: Readonly<Record<string, string>>;
  readonly traces: SignalConfig;
  readonly metrics: SignalConfig;
  readonly metricExportIntervalMs: number;
}

/** service.name when OTEL_SERVICE_NAME is unset. */
export const DEFAULT_SERVICE_NAME = 'agent-loop-guard-worker';
/** The spec's default OTLP/HTTP endpoint, used when an exporter is `otlp` but no endpoint is set. */
export const DEFAULT_OTLP_ENDPOINT = 'http://localhost:4318';
const DEFAULT_METRIC_EXPORT_INTERVAL_MS = 60_000;

const EXPORTERS: readonly ExporterChoice[] = ['otlp', 'console', 'none'];

/** Empty strings (compose's `${VAR:-}`) mean unset, as in worker/env.ts. */
function read(env: NodeJS.ProcessEnv, name: OtelEnvVar): string | undefined {
  const v = env[name]?.trim();
  return v === undefined || v === '' ? undefined : v;
}

function exporterOf(env: NodeJS.ProcessEnv, name: OtelEnvVar): ExporterChoice | undefined {
  const v = read(env, name)?.toLowerCase();
  if (v === undefined) return undefined;
  if (v.includes(','))
    throw new TelemetryConfigError(name, `one exporter only (otlp, console or none), got "${v}"`);
  if (!(EXPORTERS as readonly string[]).includes(v))
    throw new TelemetryConfigError(name, `must be otlp, console or none, got "${v}"`);
  return v as ExporterChoice;
}

function urlOf(name: OtelEnvVar, raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch (err) {
    throw new TelemetryConfigError(name, `not a URL: "${raw}"`, { cause: err });
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new TelemetryConfigError(
      name,
      `must be an http:// or https:// URL (this worker speaks OTLP/HTTP, usually port 4318), got "${raw}"`,
    );
  return raw;
}

/**
 * `key=value,key2=value2` with percent-encoded values (the W3C Baggage form the OTel spec
 * uses for OTEL_EXPORTER_OTLP_HEADERS and OTEL_RESOURCE_ATTRIBUTES).
 */
export function parseKeyValueList(name: string, raw: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (raw === undefined) return out;
  for (const part of raw.split(',')) {
    const entry = part.trim();
    if (entry === '') continue;
    const i = entry.indexOf('=');
    const key = i < 0 ? '' : entry.slice(0, i).trim();
    if (key === '') throw new TelemetryConfigError(name, `entries must be key=value, got "${entry}"`);
    try {
      out[key] = decodeURIComponent(entry.slice(i + 1).trim());
    } catch (err) {
      throw new TelemetryConfigError(name, `bad percent-encoding in "${entry}"`, { cause: err });
    }
  }
  return out;
}

function signal(
  env: NodeJS.ProcessEnv,
  exporterVar: OtelEnvVar,
  endpointVar: OtelEnvVar,
  path: string,
  headers: Record<string, string>,
): SignalConfig {
  const own = read(env, endpointVar);
  const base = read(env, 'OTEL_EXPORTER_OTLP_ENDPOINT');
  const exporter = exporterOf(env, exporterVar) ?? ((own ?? base) ? 'otlp' : 'none');
  if (exporter !== 'otlp') return { exporter };
  const url = own
    ? urlOf(endpointVar, own)
    : `${urlOf('OTEL_EXPORTER_OTLP_ENDPOINT', base ?? DEFAULT_OTLP_ENDPOINT).replace(/\/+$/, '')}${path}`;
  return { exporter, url, headers };
}

/**
 * Reads the telemetry settings from `env`. Throws a {@link TelemetryConfigError} naming the
 * variable when a value is unusable.
 *
 * @example
 *   readTelemetryConfig({}).enabled; // false: no OTEL_* set, telemetry off
 *   readTelemetryConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }).traces;
 *   // { exporter: 'otlp', url: 'http://collector:4318/v1/traces', headers: {} }
 */
export function readTelemetryConfig(env: NodeJS.ProcessEnv): TelemetryConfig {
  const disabled = read(env, 'OTEL_SDK_DISABLED')?.toLowerCase() === 'true';
  const headers = parseKeyValueList('OTEL_EXPORTER_OTLP_HEADERS', read(env, 'OTEL_EXPORTER_OTLP_HEADERS'));
  const resourceAttributes = parseKeyValueList(
    'OTEL_RESOURCE_ATTRIBUTES',
    read(env, 'OTEL_RESOURCE_ATTRIBUTES'),
  );
  const rawInterval = read(env, 'OTEL_METRIC_EXPORT_INTERVAL');
  const metricExportIntervalMs =
    rawInterval === undefined ? DEFAULT_METRIC_EXPORT_INTERVAL_MS : Number(rawInterval);
  if (!Number.isInteger(metricExportIntervalMs) || metricExportIntervalMs <= 0)
    throw new TelemetryConfigError(
      'OTEL_METRIC_EXPORT_INTERVAL',
      `must be a positive integer (milliseconds), got "${rawInterval}"`,
    );
  const traces: SignalConfig = disabled
    ? { exporter: 'none' }
    : signal(env, 'OTEL_TRACES_EXPORTER', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', '/v1/traces', headers);
  const metrics: SignalConfig = disabled
    ? { exporter: 'none' }
    : signal(env, 'OTEL_METRICS_EXPORTER', 'OTEL_EXPORTER_OTLP_METRICS_ENDPOINT', '/v1/metrics', headers);
  return {
    enabled: traces.exporter !== 'none' || metrics.exporter !== 'none',
    serviceName: read(env, 'OTEL_SERVICE_NAME') ?? resourceAttributes['service.name'] ?? DEFAULT_SERVICE_NAME,
    resourceAttributes,
    traces,
    metrics,
    metricExportIntervalMs,
  };
}
