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

/** Installs the queries and the gate's updates and signals for one run. */
export function installRunHandlers(run: GuardedRun, gate: RunGate, views: EngineViews): void {
  setHandler(resumeSignal, (raw) => gate.onResumeSignal(raw));
  setHandler(resumeUpdate, (raw) => gate.resume(raw), { validator: (raw) => gate.validateResume(raw) });
  setHandler(stopSignal, (raw) => gate.onStopSignal(raw));
  setHandler(stopUpdate, (raw) => gate.stop(raw), { validator: (raw) => gate.validateStop(raw) });
  setHandler(statusQuery, () => views.status());
  setHandler(reportQuery, () => reportOf(run));
  setHandler(checkpointQuery, () => views.checkpoint());
  setHandler(traceQuery, (args) => traceOf(run, args));
}
