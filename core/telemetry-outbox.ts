/**
 * The workflow side of the `agentTelemetry` sink (common/telemetry.ts), one sink call per
 * activation instead of one per decision.
 *
 * Why: every sink call is cloned where it is made, and the worker then copies and clones the
 * workflow's info once per call to ship it out of the workflow thread — about as much CPU as
 * the rest of a guarded step's workflow code. A step records two decisions (before and after
 * its call), so they are kept here and sent together as one `decisions` call when the
 * activation concludes, through the workflow interceptor this module exports (the worker
 * adds it: {@link TELEMETRY_OUTBOX_MODULE}). A worker that did not add it (a bundle built
 * without it) still gets every decision, one `decision` call each, as before.
 *
 * Nothing here can change what a run decides: sinks are not in history and not called on
 * replay. The decisions of an activation reach the worker when it ends, as a single call did
 * (a sink runs after the activation either way), so their spans keep their times; a run's end
 * is sent after the decisions before it.
 */
import { proxySinks, type WorkflowInterceptors } from '@temporalio/workflow';
import type { AgentSinks, DecisionEvent, RunEndEvent } from '../common/telemetry';

const { agentTelemetry } = proxySinks<AgentSinks>();

/** Set when this workflow's interceptors were built from this module (module state is per workflow). */
let batching = false;
let outbox: DecisionEvent[] = [];

/** Tells telemetry of a decision: kept for the activation's one call, or sent now without the interceptor. */
export function tellDecision(event: DecisionEvent): void {
  if (batching) outbox.push(event);
  else agentTelemetry.decision(event);
}

/** Tells telemetry that a run stopped or closed, after the decisions that led there. */
export function tellRunEnd(event: RunEndEvent): void {
  flushDecisions();
  agentTelemetry.runEnd(event);
}

/** Sends the decisions kept so far as one sink call. */
function flushDecisions(): void {
  if (outbox.length === 0) return;
  const batch = outbox;
  outbox = [];
  agentTelemetry.decisions(batch);
}

/** The workflow interceptors that send each activation's decisions as it concludes. */
export const interceptors = (): WorkflowInterceptors => {
  batching = true;
  return {
    internals: [
      {
        concludeActivation(input, next) {
          flushDecisions();
          return next(input);
        },
      },
    ],
  };
};
