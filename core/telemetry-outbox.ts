/**
 * The workflow side of the `agentTelemetry` sink (common/telemetry.ts): a run's decisions sent
 * in batches, like OpenTelemetry's batch span processor, or not at all when nothing listens.
 *
 * Why: every sink call is cloned where it is made, and the worker then copies and clones the
 * workflow's info once per call to ship it out of the workflow thread — about as much CPU as
 * the rest of a guarded step's workflow code. So decisions are kept here and sent as one
 * `decisions` call when {@link MAX_BATCH_DECISIONS} are pending, when a decision comes
 * {@link MAX_BATCH_AGE_MS} of workflow time after the oldest pending one, and always before a
 * stop or an end (`runEnd`), a conversation's turn, and in the activation that ends the run
 * (completes, fails, is cancelled or continues as new).
 *
 * Which mode a workflow is in is decided by the bundle: the worker adds this module's
 * interceptors when its telemetry listens (worker/bundle-options.ts), and
 * core/telemetry-off.ts's when it does not (no sink call at all). A bundle with neither (built
 * without the agent's bundle options) sends one `decision` call per decision, as it happens.
 *
 * Nothing here can change what a run decides: sinks are not in history and not called on
 * replay, and nothing here adds a command. When a batch is sent is a function of the run's
 * decisions and their workflow times only, so a worker that replays a run rebuilds the batch
 * its previous worker had not sent yet (that worker stopped, crashed or evicted the run) and
 * sends it with its own next batch; the batches the previous worker sent are replayed calls,
 * which the SDK does not deliver. Each decision carries its workflow time (`atMs`), so its
 * span keeps its time however late its batch goes.
 */
import { proxySinks, type WorkflowInterceptors } from '@temporalio/workflow';
import type { AgentSinks, DecisionEvent, RunEndEvent, TurnEvent } from '../common/telemetry';

const { agentTelemetry } = proxySinks<AgentSinks>();

/** Decisions pending at most (a guarded step makes two). */
export const MAX_BATCH_DECISIONS = 32;
/** Workflow time after which the pending decisions go with the next one. */
export const MAX_BATCH_AGE_MS = 1000;

/**
 * `direct`: one call per decision (a bundle without this module's interceptors); `batched`;
 * `off`: nothing listens, nothing is sent. Module state is per workflow.
 */
type Mode = 'direct' | 'batched' | 'off';
let mode: Mode = 'direct';
let outbox: DecisionEvent[] = [];

/** Tells telemetry of a decision: kept for the next batch, sent now, or dropped (see {@link Mode}). */
export function tellDecision(event: DecisionEvent): void {
  if (mode === 'off') return;
  if (mode === 'direct') {
    agentTelemetry.decision(event);
    return;
  }
  outbox.push(event);
  if (outbox.length >= MAX_BATCH_DECISIONS || event.atMs - outbox[0]!.atMs >= MAX_BATCH_AGE_MS)
    flushDecisions();
}

/** Tells telemetry that a run stopped or closed, after the decisions that led there. */
export function tellRunEnd(event: RunEndEvent): void {
  if (mode === 'off') return;
  flushDecisions();
  agentTelemetry.runEnd(event);
}

/** Tells telemetry of a conversation's turn, after the decisions before it. */
export function tellTurn(event: TurnEvent): void {
  if (mode === 'off') return;
  flushDecisions();
  agentTelemetry.turn(event);
}

/** Sends the pending decisions as one sink call. */
function flushDecisions(): void {
  if (outbox.length === 0) return;
  const batch = outbox;
  outbox = [];
  agentTelemetry.decisions(batch);
}

/** The commands after which the run has no next activation on any worker. */
const ENDING_COMMANDS = [
  'completeWorkflowExecution',
  'failWorkflowExecution',
  'cancelWorkflowExecution',
  'continueAsNewWorkflowExecution',
] as const;

/** The workflow interceptors of a listening worker: batches, sent at the latest in the activation that ends the run. */
export const interceptors = (): WorkflowInterceptors => {
  mode = 'batched';
  return {
    internals: [
      {
        concludeActivation(input, next) {
          if (outbox.length > 0 && input.commands.some((c) => ENDING_COMMANDS.some((k) => c[k] != null)))
            flushDecisions();
          return next(input);
        },
      },
    ],
  };
};

/** Makes this workflow send nothing (core/telemetry-off.ts: the worker's telemetry listens to nothing). */
export function silenceTelemetry(): void {
  mode = 'off';
  outbox = [];
}
