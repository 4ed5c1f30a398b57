/**
 * The state of one agent run (docs/spec.md §7): the core's guarded run (core/run.ts: counters,
 * guard, decisions, trace, the stop in force and the phase transitions) with what only an
 * `agentRun` has: its planner's memory and observation, its sub-agents and its lean checkpoint.
 * Its one exit is workflows/run-end.ts `finishRun`. The run is driven by the core's gate (core/gate.ts)
 * and step (core/step.ts) and by workflows/run-steps.ts; operators read it through
 * workflows/run-views.ts. Workflow code: deterministic, no I/O of its own.
 */
import { workflowInfo } from '@temporalio/workflow';
import type { Checkpoint, ResolvedRunInput } from '../common/contracts';
import type { Observation } from '../common/planner';
import type { ChildSummary } from '../common/sub-agents';
import { GuardReason, LEDGER_NEEDS_HUMAN_CODES, LoopGuard, TerminalState } from '../guard';
import { GuardedRun } from '../core/run';
import type { BlockedCall } from '../core/stop';
import type { RunActivities } from './run-activities';
import { resolveRunSettings } from './run-settings';

export type { ApprovalStop, BlockedCall } from '../core/stop';

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
  /** How the run's state is published (set by the workflow: workflows/run-views.ts `publish`). */
  publisher: ((run: RunState, upsert: boolean, summary: string | null) => void) | null = null;

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

  /** True when history is long enough to continue as new (or the server suggests it). */
  historyIsLong(): boolean {
    const info = workflowInfo();
    return info.continueAsNewSuggested || info.historyLength > this.input.maxHistoryEvents;
  }

  /**
   * The UI's details and, unless `upsert` is false, the search attributes, as the workflow
   * wired them (workflows/run-views.ts `publish`); `summary`: the run's, at its end.
   */
  override publish(upsert = true, summary: string | null = null): void {
    this.publisher?.(this, upsert, summary);
  }
}
