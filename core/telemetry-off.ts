/**
 * The workflow interceptor module of a worker whose telemetry listens to nothing (no
 * `telemetry` given, OpenTelemetry off): its runs make no `agentTelemetry` sink call at all,
 * since each call costs the SDK a copy of the workflow's info even when the sink is a no-op.
 * It adds no interceptor and no command; see core/telemetry-outbox.ts for the other modes.
 */
import type { WorkflowInterceptors } from '@temporalio/workflow';
import { silenceTelemetry } from './telemetry-outbox';

/** Silences this workflow's telemetry; intercepts nothing. */
export const interceptors = (): WorkflowInterceptors => {
  silenceTelemetry();
  return {};
};
