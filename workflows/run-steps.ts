/**
 * The steps of one turn (docs/spec.md §3, §7): plan → guard.before → tool → guard.after.
 * A step that stops the run answers `{ kind: 'stopped' }` (the stop is already in force on
 * the RunState, with its checkpoint); otherwise it answers what it produced. The workflow
 * loop (workflows/agent-run.ts) goes round again on `stopped`. Workflow code.
 */
import { ActivityFailure, isCancellation } from '@temporalio/workflow';
import type { PlanOutput, ProposalInfo, RunToolOutput } from '../activities/types';
import { NO_USAGE, type ModelNudge, type PlannerTurn } from '../common/planner';
import { isPayloadTooLarge, PAYLOAD_TOO_LARGE } from '../common/payload-limits';
import {
  GuardReason,
  TerminalState,
  type AfterResult,
  type BeforeResult,
  type GuardCall,
  type ToolResult,
} from '../guard';
import { noteConflict, type KeyHolder } from './conflict-report';
import { toObservation } from './observation';
import { stopOnPlanFailure } from './plan-failure';
import { runFacts } from './run-facts';
import { GuardedStep, type BeforeOutcome, type StepCall } from '../core/step';
import { failureMessage, failureType } from '../core/resume-check';
import type { RunActivities } from './run-activities';
import type { BlockedCall, RunState } from './run-state';
import type { SubAgents } from './sub-agents';

/** A planner turn that proposes a call. */
export type CallTurn = Extract<PlannerTurn, { type: 'call' }>;

/** A proposal taken into the run: its index, the turn, the activity's view and the core step's call. */
export interface Proposal {
  readonly index: number;
  readonly turn: CallTurn;
  readonly p: ProposalInfo;
  readonly call: GuardCall;
  /** The call as the core's guarded step sees it (core/step.ts). */
  readonly step: StepCall;
}

/** A step that stopped the run: the stop is in force, the loop goes round to wait for a resume. */
export interface Stopped {
  readonly kind: 'stopped';
}

/**
 * The planner's turn and the activity's view of its proposal (null for no call); `finishing`:
 * the worker's finishing tool, on a conversation's turns (PlanOutput `finishing`).
 */
export type PlanStep =
  | Stopped
  | {
      readonly kind: 'planned';
      turn: PlannerTurn;
      proposal: ProposalInfo | null;
      readonly finishing?: string;
    };

/** The tool's result and the progress version after it. */
/** `via: 'reconciled'`: the ledger's reconcile probe settled the write (core/step.ts `after`). */
export type ToolStep =
  Stopped | { readonly kind: 'ran'; result: ToolResult; progressVersion: number; via?: 'reconciled' };

const STOPPED: Stopped = { kind: 'stopped' };

/** The call a stop names (its args, so resume can re-check its precondition). */
const blockedOf = (p: ProposalInfo): BlockedCall => ({
  tool: p.tool,
  fingerprint: p.fingerprint,
  ...(p.argsHash ? { argsDigest: p.argsHash } : {}),
  args: p.args,
});

/**
 * An activity's promise and what its outcome comes to, handed up to the loop that awaits it
 * once: chaining `.then` here would be one more promise per step, and the SDK
 * captures a stack trace for every promise workflow code makes. `resolved` and `rejected` are
 * what `.then(resolved, rejected)` would have run.
 */
export class Pending<T, R> {
  constructor(
    readonly promise: Promise<T>,
    /** The outcome of a value the promise resolved with. */
    readonly resolved: (value: T) => R,
    /** The outcome of the promise's rejection. */
    readonly rejected: (err: unknown) => R,
  ) {}
}

/** The steps of a turn over one run's state. */
export class RunSteps {
  /** The planner's memory before this turn: a proposal that does not run is asked again. */
  private memoryBeforeTurn: unknown = null;
  /** The version the worker's progress source reported after this run's last call (not persisted). */
  private lastSourceVersion: number | null = null;
  /** The core's guarded step over this run (core/step.ts). */
  private readonly step: GuardedStep;
  /** The run holding the key of the call just run, when the ledger refused it (not persisted). */
  private holder: KeyHolder = null;

  constructor(
    private readonly run: RunState,
    private readonly activities: RunActivities,
    private readonly subAgents: SubAgents | null = null,
  ) {
    this.step = new GuardedStep(run);
  }

  /**
   * The planner's next turn when it is already known — a scripted run's turn that the last tool
   * activity planned — without a promise (the SDK captures a stack trace for every
   * promise workflow code makes). Null: ask with {@link plan}.
   */
  prefetched(): PlanStep | null {
    const run = this.run;
    const planned = this.activities.prefetchedTurn(run.memory, run.approvalStop?.stopRef ?? null);
    if (!planned) return null;
    this.memoryBeforeTurn = run.memory;
    return this.took(planned);
  }

  /** Asks the planner for its next turn; `stopped` when the planner failed and the run stopped. */
  async plan(nudge: ModelNudge | null = null, userText: string | null = null): Promise<PlanStep> {
    const run = this.run;
    this.memoryBeforeTurn = run.memory;
    // An accepted resume's note goes with this turn (core/resume-note.ts); kept if it fails.
    const resumeNote = run.resumeNotes.take();
    try {
      return this.took(
        await this.activities.planTurn(
          run.memory,
          run.observation,
          runFacts(run),
          run.approvalStop?.stopRef ?? null,
          nudge,
          undefined,
          userText,
          resumeNote,
        ),
      );
    } catch (err) {
      if (resumeNote !== null) run.resumeNotes.add(resumeNote);
      if (!(err instanceof ActivityFailure) || isCancellation(err)) throw err;
      // A planner that cannot answer (no key, bad auth, a broken reply, retries exhausted) is
      // a person's problem, not a reason to lose the run: stop with a checkpoint and wait.
      stopOnPlanFailure(run, err);
      return STOPPED;
    }
  }

  /** A planner's answer taken into the run: its memory, and a model's usage charged. */
  private took(planned: PlanOutput): PlanStep {
    const run = this.run;
    run.memory = planned.memory;
    let turn = planned.turn;
    if (run.input.planner.kind !== 'scripted') {
      // Every model response counts before any rule decides: a final text, a
      // proposal the step budget or the kill switch refuses. before() then adds nothing.
      run.guard.charge({ steps: 0, tokens: turn.usage.tokens, costUsd: turn.usage.costUsd });
      turn = { ...turn, usage: NO_USAGE };
    }
    return {
      kind: 'planned',
      turn,
      proposal: planned.proposal,
      ...(planned.finishing ? { finishing: planned.finishing } : {}),
    };
  }

  /** Forgets the planner's last turn: the proposal never ran, so it will be asked again. */
  undoTurn(): void {
    this.run.memory = this.memoryBeforeTurn;
  }

  /** Takes a validated, fingerprinted proposal into the run. */
  propose(turn: CallTurn, p: ProposalInfo): Proposal {
    const index = turn.scriptIndex ?? this.run.proposals;
    this.run.proposals += 1;
    const call = {
      tool: p.tool,
      fingerprint: p.fingerprint,
      similarKey: p.similarKey ?? null,
      operationKey: p.operationKey,
      usage: turn.usage,
      effect: p.effect,
      // A live write's key is in the persistent ledger once it succeeds: the plan activity
      // hands it back with the proposal (ledgerView), so a lean guard may forget it.
      ...(this.run.lean && p.effect === 'write' && p.fixture === null && p.rejection === null
        ? { ledgerBacked: true }
        : {}),
    };
    const step: StepCall = {
      index,
      callId: turn.callId,
      call,
      args: p.canonicalArgs,
      blocked: blockedOf(p),
      ...(p.ledger ? { stored: p.ledger.result } : {}),
    };
    return { index, turn, p, call, step };
  }

  /**
   * guard.before through the core's step (core/step.ts): `execute`, `cached`, `steer` (the
   * model reads the guard's note as the call's result, §3.3) or `stop` (the planner's turn is
   * forgotten, so a resumed run asks again). The approval policy: a call the guard lets run
   * that needs a person's approval it does not carry stops NEEDS_HUMAN before it runs.
   */
  before(x: Proposal): BeforeOutcome {
    const { p } = x;
    const run = this.run;
    // The persistent ledger is the one truth about completed writes: a lean guard learns a key
    // it forgot here, before any decision reads it (the plan activity looked it up, or the
    // run stopped infrastructure_fault when the ledger could not be read).
    if (p.ledger && p.operationKey) run.guard.markCompleted(p.operationKey, p.ledger.fingerprint);
    const out = this.step.before(x.step);
    if (out.kind === 'steer') run.observation = out.observation;
    if (out.kind === 'stop') {
      this.undoTurn();
      noteConflict(run, p, p.ledger?.holder);
    }
    if (out.kind === 'execute' && p.approval?.required && !p.approval.approvalId) {
      // The approval is bound to this stop and this fingerprint.
      this.undoTurn();
      this.step.approvalStop(x.step);
      return { kind: 'stop', before: out.before };
    }
    return out;
  }

  /**
   * The tool step: a cached return runs nothing, a rejected proposal is its own result,
   * anything else runs as the tool activity. Hands `then` the result and the progress version
   * read from external state (the script's, in fixture mode), or `stopped` on a fault, and
   * answers what `then` answers: at once when nothing runs, else as the activity's own promise
   * with `then` to apply once it settles ({@link Pending}: each promise costs the SDK
   * a stack trace).
   */
  execute<R>(
    x: Proposal,
    cached: boolean,
    then: (done: ToolStep) => R,
  ): R | Promise<R> | Pending<RunToolOutput, R> {
    const { p } = x;
    const run = this.run;
    const current = run.guard.progressVersion;
    if (cached) {
      run.cached += 1;
      const data = p.ledger?.result ?? { alreadyCompleted: p.operationKey };
      return then({ kind: 'ran', result: { kind: 'SUCCESS', data }, progressVersion: current });
    }
    run.executed += 1;
    if (p.rejection) return then({ kind: 'ran', result: p.rejection, progressVersion: current });
    if (this.subAgents?.handles(p.tool, p.fixture, p.rejection)) return this.spawn(x, current).then(then);
    // An LLM run's model handles the tool errors its tools did not declare.
    return new Pending(
      this.activities.runTool(p, run.toolErrors),
      (out) => then(this.ran(x, out, current)),
      (err: unknown) => then(this.failed(x, err)),
    );
  }

  /**
   * A sub-agent runs as a child workflow, not an activity (docs/spec.md §7.14); what it
   * changed is read from the run's progress source afterwards.
   */
  private async spawn(x: Proposal, current: number): Promise<ToolStep> {
    const result = await this.subAgents!.spawn({ args: x.p.args, call: blockedOf(x.p) });
    return {
      kind: 'ran',
      result,
      progressVersion: Math.max(current, await this.activities.currentProgress()),
    };
  }

  /** The tool activity's answer: the result and the progress version after it. */
  private ran(x: Proposal, raw: RunToolOutput, current: number): ToolStep {
    const { p } = x;
    const out = this.activities.tookTool(raw);
    this.holder = out.holder;
    const version = p.fixture ? (p.fixture.progressVersion ?? current) : (out.progressVersion ?? current);
    const floor = this.lastSourceVersion;
    if (!p.fixture && out.progressVersion !== null) this.lastSourceVersion = out.progressVersion;
    if (!p.fixture && floor !== null && version < floor) {
      // A progress source that goes backwards is broken: never a false no_progress, never FAILED.
      const detail = `the progress version went backwards from ${floor} to ${version} after a call of ${p.tool}: the worker's progress source (or ${p.tool}'s progressVersion hook) must never decrease`;
      return this.fault(x, GuardReason.INFRASTRUCTURE_FAULT, 'progress_went_backwards', detail);
    }
    const via = out.via === 'reconciled' ? { via: out.via } : {};
    return { kind: 'ran', result: out.result, progressVersion: version, ...via };
  }

  /** The tool activity failed after its retries: the run stops with its checkpoint. */
  private failed(x: Proposal, err: unknown): ToolStep {
    if (!(err instanceof ActivityFailure) || isCancellation(err)) throw err;
    const { p } = x;
    // The tool's output could not pass through history (no payload store took it): stop
    // with the checkpoint; after an operator's resume the planner is asked again.
    if (isPayloadTooLarge(err))
      return this.fault(
        x,
        GuardReason.PAYLOAD_TOO_LARGE,
        PAYLOAD_TOO_LARGE,
        `tool ${p.tool}: ${failureMessage(err)}`,
      );
    // Faults stop, they do not fail: the tool activity failed after all its retries (a
    // database or backend down). Stop with the checkpoint; the planner is asked again after
    // a resume, and a write it re-proposes is still behind the ledger.
    const detail = `tool ${p.tool} failed: ${failureMessage(err)}`;
    return this.fault(x, GuardReason.INFRASTRUCTURE_FAULT, failureType(err), detail);
  }

  /** A tool step that could not complete: the turn is forgotten and the run stops NEEDS_HUMAN. */
  private fault(x: Proposal, reason: GuardReason, code: string, detail: string): Stopped {
    this.undoTurn();
    this.run.runtimeStop(reason, TerminalState.NEEDS_HUMAN, code, detail, blockedOf(x.p), x.p.operationKey);
    return STOPPED;
  }

  /** guard.after through the core's step; the planner observes the result; a stop names any conflicting holder. */
  after(x: Proposal, before: BeforeResult, result: ToolResult, pv: number, via?: 'reconciled'): AfterResult {
    const { p } = x;
    const run = this.run;
    const after = this.step.after(x.step, before, result, pv, via);
    // The call ran: after a resume the planner sees its result (the FATAL it got, say).
    run.observation = toObservation(
      x.turn.callId,
      p.tool,
      result,
      before.decision === 'return_cached_success',
    );
    // no_progress tells the model before it stops: the result with the guard's note.
    run.observation = this.step.noted(run.observation, after);
    if (after.decision === 'stop') noteConflict(run, p, this.holder);
    this.holder = null;
    return after;
  }

  /** Benchmarks only: the guard as a pass-through. True when the run completed. */
  async passThrough(x: Proposal): Promise<boolean> {
    const { result } = this.activities.tookTool(await this.activities.runTool(x.p));
    this.run.executed += 1;
    this.run.decide({ index: x.index, tool: x.p.tool, decision: 'execute', after: 'continue' });
    this.run.observation = toObservation(x.turn.callId, x.p.tool, result, false);
    return result.kind === 'SUCCESS' && result.terminal === true;
  }
}
