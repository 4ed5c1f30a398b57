/**
 * The message handlers every guarded run installs, whatever its engine: the `status`, `report`,
 * `checkpoint` and `trace` queries and the `resume` / `stop` updates and signals of
 * common/contracts.ts, each delegating to the gate (core/gate.ts) or a view. So `agentctl
 * status|report|trace|watch|resume|stop|approvals` reads and drives every engine's runs alike.
 * Registering a handler adds no command: recorded histories replay unchanged. Workflow code.
 */
import { setHandler } from '@temporalio/workflow';
import {
  checkpointQuery,
  reportQuery,
  resumeSignal,
  resumeUpdate,
  statusQuery,
  stopSignal,
  stopUpdate,
  traceQuery,
  type Checkpoint,
  type RunStatus,
} from '../common/contracts';
import type { RunGate } from './gate';
import type { GuardedRun } from './run';
import { reportOf, traceOf } from './views';

/** The engine's own views (it adds its parts to the core's). */
export interface EngineViews {
  status(): RunStatus;
  checkpoint(): Checkpoint;
}

/**
 * What each handler is for, in the words the Temporal UI shows beside it (its Queries tab and
 * "Send an Update"), so a person finds `resume` without reading the docs.
 */
export const HANDLER_DESCRIPTIONS = {
  resume:
    'Resume a stopped run once what stopped it has changed: {actor, reason, requestId, precondition?, note?, raise?}. ' +
    'The worker re-verifies before it accepts; the answer says accepted or why not. CLI: agentctl resume <run-id>.',
  resumeSignal:
    'Resume, as a signal (older clients): the outcome is in the trace only. Prefer the resume update.',
  stop:
    'Kill switch: the run stops before its next tool call and waits for a resume: {actor, reason, requestId}. ' +
    'CLI: agentctl stop <run-id>.',
  stopSignal:
    'Kill switch, as a signal (older clients): the outcome is in the trace only. Prefer the stop update.',
  status: 'The run now: phase, state, stop reason, steps, budgets used, whether it waits for a resume.',
  report:
    'The StopReport: which rule stopped which call, what is unmet, and what would let the run go on (null while running).',
  checkpoint: 'The checkpoint the run would continue from (guard state, decisions, trace).',
  trace: "The run's decisions, paged: {afterSeq?, limit?}. CLI: agentctl trace <run-id>.",
} as const;

/** Installs the queries and the gate's updates and signals for one run. */
export function installRunHandlers(run: GuardedRun, gate: RunGate, views: EngineViews): void {
  const d = HANDLER_DESCRIPTIONS;
  setHandler(resumeSignal, (raw) => gate.onResumeSignal(raw), { description: d.resumeSignal });
  setHandler(resumeUpdate, (raw) => gate.resume(raw), {
    validator: (raw) => gate.validateResume(raw),
    description: d.resume,
  });
  setHandler(stopSignal, (raw) => gate.onStopSignal(raw), { description: d.stopSignal });
  setHandler(stopUpdate, (raw) => gate.stop(raw), {
    validator: (raw) => gate.validateStop(raw),
    description: d.stop,
  });
  setHandler(statusQuery, () => views.status(), { description: d.status });
  setHandler(reportQuery, () => reportOf(run), { description: d.report });
  setHandler(checkpointQuery, () => views.checkpoint(), { description: d.checkpoint });
  setHandler(traceQuery, (args) => traceOf(run, args), { description: d.trace });
}
