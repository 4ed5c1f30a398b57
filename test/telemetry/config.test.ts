/**
 * worker/telemetry: the OTEL_* environment → what is exported. Off unless asked for, the
 * standard endpoint rules, and a clear error naming the variable on a bad value.
 */
import {
  createTelemetry,
  OTEL_ENV_DOCS,
  readTelemetryConfig,
  runtimeOptionsOf,
  TelemetryConfigError,
} from '../../worker/telemetry';
import { WORKER_ENV_VARS } from '../../worker/env';

describe('createTelemetry', () => {
  it('is off with no OTEL_* set: no providers, no interceptors, no runtime metrics', async () => {
    const t = createTelemetry({ OTEL_SERVICE_NAME: 'only-a-name', PATH: '/usr/bin' });
    expect(t.enabled).toBe(false);
    expect(t.tracerProvider).toBeNull();
    expect(t.meterProvider).toBeNull();
    expect(t.runtimeOptions).toBeNull();
    expect(t.workflowSinks).toBeNull();
    // Nothing to pass to createAgentWorker: the worker keeps its no-op agentTelemetry sink.
    expect(t.workerOptions()).toEqual({});
    await expect(t.shutdown()).resolves.toBeUndefined();
  });

  it('is off when OTEL_SDK_DISABLED=true, whatever else is set', () => {
    const t = createTelemetry({
      OTEL_SDK_DISABLED: 'true',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
    });
    expect(t.enabled).toBe(false);
  });

  it('treats empty values (compose ${VAR:-}) as unset', () => {
    expect(readTelemetryConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_TRACES_EXPORTER: ' ' }).enabled).toBe(
      false,
    );
  });

  it('an OTLP endpoint turns on traces, metrics and the Temporal runtime metrics', async () => {
    const t = createTelemetry({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/',
      OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20abc,x-tenant=t1',
    });
    try {
      expect(t.enabled).toBe(true);
      expect(t.config.traces).toEqual({
        exporter: 'otlp',
        url: 'http://collector:4318/v1/traces',
        headers: { authorization: 'Bearer abc', 'x-tenant': 't1' },
      });
      expect(t.config.metrics).toMatchObject({ exporter: 'otlp', url: 'http://collector:4318/v1/metrics' });
      expect(t.runtimeOptions?.telemetryOptions?.metrics).toMatchObject({
        otel: { url: 'http://collector:4318/v1/metrics', http: true, headers: { 'x-tenant': 't1' } },
      });
      const o = t.workerOptions();
      expect(o.interceptors?.workflowModules).toHaveLength(1);
      expect(o.interceptors?.activity).toHaveLength(2); // tracing + metrics
      expect(o.sinks).toHaveProperty('exporter');
      expect(o.telemetry).toBeDefined();
    } finally {
      await t.shutdown();
    }
  });
});

describe('readTelemetryConfig', () => {
  it('uses a signal endpoint as is and leaves the other signal off', () => {
    const c = readTelemetryConfig({
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://tempo.example/otlp/v1/traces',
    });
    expect(c.traces).toMatchObject({ exporter: 'otlp', url: 'https://tempo.example/otlp/v1/traces' });
    expect(c.metrics).toEqual({ exporter: 'none' });
    expect(runtimeOptionsOf(c)).toBeNull();
  });

  it('an exporter without an endpoint goes to the spec default; console and none are honoured', () => {
    const c = readTelemetryConfig({ OTEL_METRICS_EXPORTER: 'otlp', OTEL_TRACES_EXPORTER: 'console' });
    expect(c.metrics).toMatchObject({ url: 'http://localhost:4318/v1/metrics' });
    expect(c.traces).toEqual({ exporter: 'console' });
    const none = readTelemetryConfig({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
      OTEL_METRICS_EXPORTER: 'none',
    });
    expect(none.metrics).toEqual({ exporter: 'none' });
    expect(none.traces.exporter).toBe('otlp');
  });

  it('service name and resource attributes', () => {
    const c = readTelemetryConfig({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=prod,service.name=from-attrs',
    });
    expect(c.serviceName).toBe('from-attrs');
    expect(c.resourceAttributes).toEqual({ 'deployment.environment': 'prod', 'service.name': 'from-attrs' });
    expect(
      readTelemetryConfig({ OTEL_SERVICE_NAME: 'w1', OTEL_RESOURCE_ATTRIBUTES: 'service.name=x' })
        .serviceName,
    ).toBe('w1');
  });

  it.each([
    [{ OTEL_TRACES_EXPORTER: 'zipkin' }, 'OTEL_TRACES_EXPORTER'],
    [{ OTEL_METRICS_EXPORTER: 'otlp,console' }, 'OTEL_METRICS_EXPORTER'],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'grpc://collector:4317' }, 'OTEL_EXPORTER_OTLP_ENDPOINT'],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'not a url' }, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'],
    [{ OTEL_EXPORTER_OTLP_HEADERS: 'novalue' }, 'OTEL_EXPORTER_OTLP_HEADERS'],
    [{ OTEL_RESOURCE_ATTRIBUTES: 'a=%E0%A4%A' }, 'OTEL_RESOURCE_ATTRIBUTES'],
    [{ OTEL_METRIC_EXPORT_INTERVAL: '10s' }, 'OTEL_METRIC_EXPORT_INTERVAL'],
  ])('%j is refused with an error naming %s', (env, variable) => {
    let err: unknown;
    try {
      readTelemetryConfig(env);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(TelemetryConfigError);
    expect((err as TelemetryConfigError).variable).toBe(variable);
    expect((err as Error).message).toContain(variable);
  });

  it('every OTEL_* variable read is in the worker env list (docker-compose may set it)', () => {
    for (const name of Object.keys(OTEL_ENV_DOCS)) expect(WORKER_ENV_VARS).toContain(name);
  });
});
