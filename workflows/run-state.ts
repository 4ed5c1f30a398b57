/**
 * The state of one agent run (docs/spec.md §7): the core's guarded run (core/run.ts: counters,
 * guard, decisions, trace, the stop in force and the phase transitions) with what only an
 * `agentRun` has: its planner's memory and observation, its sub-agents, its lean checkpoint and
 * the one exit, `finish()`, which publishes the terminal state, waits for every handler to
 * finish and builds the (sealed) result. The run is driven by the core's gate (core/gate.ts)
 * and step (core/step.ts) and by workflows/run-steps.ts; operators read it through
 * workflows/run-views.ts. Workflow code: deterministic, no I/O of its own.
 */
import {
  allHandlersFinished,
  CancellationScope,
  condition,
  proxySinks,
  workflowInfo,
} from '@temporalio/workflow';
import type { Checkpoint, ResolvedRunInput, RunResult } from '../common/contracts';
import type { Observation } from '../common/planner';
import type { ChildSummary } from '../common/sub-agents';
import type { AgentSinks } from '../common/telemetry';
import { GuardReason, LEDGER_NEEDS_HUMAN_CODES, LoopGuard, TerminalState } from '../guard';
import { GuardedRun } from '../core/run';
import type { BlockedCall } from '../core/stop';
import { fitResult } from './checkpoint-bounds';
import type { RunActivities } from './run-activities';
import { resolveRunSettings } from './run-settings';
import { pageOutTrace, sealCheckpoint, sealedCheckpoint } from './run-seal';
import { publish, resultOf } from './run-views';

export type { ApprovalStop, BlockedCall } from '../core/stop';

/** Telemetry: not in history, not called on replay (common/telemetry.ts). */
const { agentTelemetry } = proxySinks<AgentSinks>();

/** The ledger-backed completed keys a lean run's guard keeps (what its StopReport lists). */
export const LEDGER_WINDOW_KEYS = 100;

/** One agent run: the core's guarded run, with its planner, sub-agents and sealed checkpoint. */
export class RunState extends GuardedRun {
  /** The planner's opaque memory, and what it observed of its last proposal. */
  memory: unknown;
  observation: Observation | null;
  /** The sub-agents this run spawned, oldest first (docs/spec.md §7.14). */
  readonly children: ChildSummary[];
  /** True for a fresh run whose starting progress version must come from external state. */
  readonly needsWorldVersion: boolean;
  /**
   * A lean checkpoint (docs/spec.md §7.10): the run's writes go through the persistent ledger,
   * so its guard keeps only the newest ledger-backed keys and its checkpoint stays bounded.
   * False for fixture-mode scripts (no ledger behind them).
   */
  readonly lean: boolean;
  /** `model`: undeclared tool errors go back to the planner (an LLM run, a script at `llm`). */
  readonly toolErrors: 'model' | undefined;
  private readonly newGuard: (initial: number) => LoopGuard;

  constructor(
    readonly input: ResolvedRunInput,
    runId: string,
    readonly activities: RunActivities,
  ) {
    const cp = input.checkpoint as Checkpoint | undefined;
    const llm = input.planner.kind !== 'scripted';
    const settings = resolveRunSettings(input, llm && cp === undefined);
    const initial = settings.initialProgressVersion;
    const fixture = input.planner.kind === 'scripted' && !input.planner.live;
    const newGuard = (at: number) =>
      new LoopGuard(settings.guardConfig, {
        startMs: Date.now(),
        initialProgressVersion: at,
        completed: settings.completed,
        needsHumanCodes: LEDGER_NEEDS_HUMAN_CODES,
      });
    // Built synchronously so queries and updates work from the first workflow task; a run
    // without a given initial version replaces it once the world has been read.
    const guard = cp
      ? LoopGuard.fromJSON(cp.guard, { needsHumanCodes: LEDGER_NEEDS_HUMAN_CODES })
      : newGuard(initial ?? 0);
    super(runId, guard, input.traceLimit, cp);
    this.newGuard = newGuard;
    this.toolErrors = llm || settings.scriptProfile === 'llm' ? 'model' : undefined;
    this.needsWorldVersion = !cp && initial === undefined;
    this.lean = !fixture;
    // A checkpoint written before the window keeps its keys exactly; new ones join the window.
    if (this.lean) this.guard.useLedgerWindow(LEDGER_WINDOW_KEYS);
    this.memory = cp?.plannerMemory ?? null;
    this.observation = (cp?.observation as Observation | null) ?? null;
    // A lean run pages out what leaves its checkpoint's trace at each continue-as-new.
    this.trace.keepLeaving = this.lean;
    this.children = cp?.children ? cp.children.map((c) => ({ ...c })) : [];
  }

  /** Starts the guard at the world's version (a fresh live run). */
  startAt(progressVersion: number): void {
    this.guard = this.newGuard(progressVersion);
    if (this.lean) this.guard.useLedgerWindow(LEDGER_WINDOW_KEYS);
  }

  /**
   * RUNNING → STOPPED → WAITING while a spawned child waits for a person (docs/spec.md §7.14):
   * the parent shows a StopReport naming the child. The guard is not stopped (the spawn call is
   * still in flight in it); {@link childLift} goes back to RUNNING when the child resumes.
   */
  childStop(terminalState: TerminalState, call: BlockedCall, unmet: string): void {
    this.note('stop', GuardReason.CHILD_STOPPED, { tool: call.tool, fingerprint: call.fingerprint });
    this.stop(terminalState, GuardReason.CHILD_STOPPED, call, null, unmet);
    this.wait();
  }

  /** WAITING → RUNNING: the stopped child resumed, or ended; the parent goes on awaiting it. */
  childLift(why = 'the sub-agent resumed'): void {
    if (this.stop_?.reason !== GuardReason.CHILD_STOPPED) return;
    this.note('resume_accepted', why);
    this.stop_ = null;
    this.to('RUNNING');
    this.publish();
  }

  /**
   * The one exit: publishes the terminal state (the stop's, when no other is given),
   * waits for every message handler to finish, and returns the run's result.
   */
  async finish(state?: TerminalState, summary: string | null = null): Promise<RunResult> {
    const final = state ?? this.stop_?.terminalState ?? TerminalState.PARTIAL;
    this.to(final);
    this.publish(true, summary);
    const reason = final === TerminalState.COMPLETED ? null : (this.stop_?.reason ?? null);
    agentTelemetry.runEnd({ runId: this.runId, terminalState: final, reason, closed: true });
    // Non-cancellable: a cancelled run still lets an in-flight resume answer.
    await CancellationScope.nonCancellable(() => condition(allHandlersFinished));
    // Bounded to one payload: a result above Temporal's limit would fail the workflow task forever.
    const { result } = fitResult(resultOf(this, final, summary));
    if (!result.checkpoint) return result;
    // The checkpoint leaves in the result (for `resume --from`): sealed, so it comes back unforged.
    return {
      ...result,
      checkpoint: await CancellationScope.nonCancellable(() => sealCheckpoint(this, result.checkpoint!)),
    };
  }

  /** The checkpoint sealed for continue-as-new input, or null: stopped payload_too_large (workflows/run-seal.ts). */
  sealedCheckpoint(around: unknown = {}): Promise<Checkpoint | null> {
    return sealedCheckpoint(this, around);
  }

  /** A lean run's continue-as-new: pages out the trace records beyond the newest `kept` (workflows/run-seal.ts). */
  pageOutTrace(kept: number): Promise<void> {
    return pageOutTrace(this, kept);
  }

  /** True when history is long enough to continue as new (or the server suggests it). */
  historyIsLong(): boolean {
    const info = workflowInfo();
    return info.continueAsNewSuggested || info.historyLength > this.input.maxHistoryEvents;
  }

  /**
   * The UI's details and, unless `upsert` is false, the search attributes (workflows/run-views.ts);
   * `summary`: the run's, at its end.
   */
  override publish(upsert = true, summary: string | null = null): void {
    publish(this, upsert, summary);
  }
}
