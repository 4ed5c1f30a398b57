/**
 * The steps of one turn (docs/spec.md §3, §7): plan → guard.before → tool → guard.after.
 * A step that stops the run answers `{ kind: 'stopped' }` (the stop is already in force on
 * the RunState, with its checkpoint); otherwise it answers what it produced. The workflow
 * loop (workflows/agent-run.ts) goes round again on `stopped`. Workflow code.
 */
import { ActivityFailure, isCancellation, patched } from '@temporalio/workflow';
import type { ProposalInfo, RunToolOutput } from '../activities/types';
import type { RunDecision } from '../common/contracts';
import { NO_USAGE, type ModelNudge, type PlannerTurn } from '../common/planner';
import { isPayloadTooLarge, PAYLOAD_TOO_LARGE } from '../common/payload-limits';
import { redact } from '../common/redact';
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
import { RecentCalls, steerObservation, withProgressNote } from './steer-note';
import { failureMessage, failureType } from './resume-check';
import type { RunActivities } from './run-activities';
import { PATCH_NO_STEP_UPSERT, PATCH_PROGRESS_MONOTONIC, PATCH_USAGE_FIRST } from './run-patches';
import type { BlockedCall, RunState } from './run-state';
import type { SubAgents } from './sub-agents';

/** A planner turn that proposes a call. */
export type CallTurn = Extract<PlannerTurn, { type: 'call' }>;

/** A proposal taken into the run: its index, the turn, the activity's view and the guard's call. */
export interface Proposal {
  readonly index: number;
  readonly turn: CallTurn;
  readonly p: ProposalInfo;
  readonly call: GuardCall;
}

/** A step that stopped the run: the stop is in force, the loop goes round to wait for a resume. */
export interface Stopped {
  readonly kind: 'stopped';
}

/** The planner's turn and the activity's view of its proposal (null for no call). */
export type PlanStep =
  Stopped | { readonly kind: 'planned'; turn: PlannerTurn; proposal: ProposalInfo | null };

/** The tool's result and the progress version after it. */
export type ToolStep = Stopped | { readonly kind: 'ran'; result: ToolResult; progressVersion: number };

const STOPPED: Stopped = { kind: 'stopped' };

/** The trace fields of a proposal (canonical args; redacted on record). */
const traced = (p: ProposalInfo) => ({
  tool: p.tool,
  fingerprint: p.fingerprint,
  args: p.canonicalArgs,
  operation_key: p.operationKey,
});

/** The call a stop names (its args, so resume can re-check its precondition). */
const blockedOf = (p: ProposalInfo): BlockedCall => ({
  tool: p.tool,
  fingerprint: p.fingerprint,
  ...(p.argsHash ? { argsDigest: p.argsHash } : {}),
  args: p.args,
});

/** The steps of a turn over one run's state. */
export class RunSteps {
  /** The planner's memory before this turn: a proposal that does not run is asked again. */
  private memoryBeforeTurn: unknown = null;
  /** The version the worker's progress source reported after this run's last call (not persisted). */
  private lastSourceVersion: number | null = null;
  /** Recent calls' results and steps, for guard notes (not persisted). */
  private readonly recentCalls = new RecentCalls();
  /** The window's calls without progress, for the `no_progress` note (not persisted). */
  private unchanged: { tool: string; step: number }[] = [];
  /** The run holding the key of the call just run, when the ledger refused it (not persisted). */
  private holder: KeyHolder = null;

  constructor(
    private readonly run: RunState,
    private readonly activities: RunActivities,
    private readonly subAgents: SubAgents | null = null,
  ) {}

  /** Asks the planner for its next turn; `stopped` when the planner failed and the run stopped. */
  async plan(nudge: ModelNudge | null = null, userText: string | null = null): Promise<PlanStep> {
    const run = this.run;
    this.memoryBeforeTurn = run.memory;
    try {
      const planned = await this.activities.planTurn(
        run.memory,
        run.observation,
        runFacts(run),
        run.approvalStop?.stopRef ?? null,
        nudge,
        undefined,
        userText,
      );
      run.memory = planned.memory;
      let turn = planned.turn;
      if (run.input.planner.kind !== 'scripted' && patched(PATCH_USAGE_FIRST)) {
        // Every model response counts before any rule decides (issue 30): a final text, a
        // proposal the step budget or the kill switch refuses. before() then adds nothing.
        run.guard.charge({ steps: 0, tokens: turn.usage.tokens, costUsd: turn.usage.costUsd });
        turn = { ...turn, usage: NO_USAGE };
      }
      return { kind: 'planned', turn, proposal: planned.proposal };
    } catch (err) {
      if (!(err instanceof ActivityFailure) || isCancellation(err)) throw err;
      // A planner that cannot answer (no key, bad auth, a broken reply, retries exhausted) is
      // a person's problem, not a reason to lose the run: stop with a checkpoint and wait.
      stopOnPlanFailure(run, err);
      return STOPPED;
    }
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
    return { index, turn, p, call };
  }

  /**
   * guard.before: whether the proposal may run (docs/spec.md §3). A refusal stops the run and
   * ends the planner's turn, unless the run steers it (§3.3): then the call does not run and
   * the model gets the guard's note as its result.
   */
  before(x: Proposal): BeforeResult {
    const { p } = x;
    const run = this.run;
    // The persistent ledger is the one truth about completed writes: a lean guard learns a key
    // it forgot here, before any decision reads it (the plan activity looked it up, or the
    // run stopped infrastructure_fault when the ledger could not be read).
    if (p.ledger && p.operationKey) run.guard.markCompleted(p.operationKey, p.ledger.fingerprint);
    const before = run.guard.before(x.call, Date.now());
    const refused = before.decision === 'stop' || before.decision === 'steer' ? before.reason : null;
    run.record({
      ...traced(p),
      phase: 'before',
      result_kind: null,
      error_code: null,
      decision: before.decision,
      reason: refused,
    });
    if (before.decision === 'steer') {
      run.decide({ index: x.index, tool: p.tool, decision: 'steer', reason: before.reason });
      const stored = p.ledger?.result;
      const seen = this.recentCalls.get(x.call.similarKey ?? p.fingerprint);
      const earlier = seen?.result;
      run.observation = steerObservation({
        callId: x.turn.callId,
        tool: p.tool,
        steer: before,
        steerLimit: run.guard.config.steerLimit,
        earlierSteps: seen?.steps ?? [],
        earlierResult: stored ?? (earlier?.kind === 'SUCCESS' ? earlier.data : earlier),
        unmet: earlier?.kind === 'PRECONDITION' ? (earlier.unmet ?? null) : null,
      });
      run.publish(false);
      return before;
    }
    if (before.decision === 'stop') {
      run.decide({ index: x.index, tool: p.tool, decision: 'stop' });
      this.undoTurn();
      run.stop(before.terminalState, before.reason, blockedOf(p), p.operationKey);
      noteConflict(run, p, p.ledger?.holder);
      return before;
    }
    if (before.decision === 'execute' && p.approval?.required && !p.approval.approvalId) {
      // The guard lets it run, but a person must approve this exact call first: stop before
      // it runs, showing the call. The approval is bound to this stop and this fingerprint.
      const reason = GuardReason.APPROVAL_REQUIRED;
      run.decide({ index: x.index, tool: p.tool, decision: 'stop' });
      this.undoTurn();
      const unmet = `approval required for ${p.tool} ${JSON.stringify(redact(p.canonicalArgs))}`;
      run.runtimeStop(reason, TerminalState.NEEDS_HUMAN, undefined, unmet, blockedOf(p), p.operationKey);
      return { decision: 'stop', reason, terminalState: TerminalState.NEEDS_HUMAN };
    }
    return before;
  }

  /**
   * The tool step: a cached return runs nothing, a rejected proposal is its own result,
   * anything else runs as the tool activity. Answers the result and the progress version
   * read from external state (the script's, in fixture mode), or `stopped` on a fault.
   */
  async execute(x: Proposal, cached: boolean): Promise<ToolStep> {
    const { p } = x;
    const run = this.run;
    const current = run.guard.progressVersion;
    if (cached) {
      run.cached += 1;
      const data = p.ledger?.result ?? { alreadyCompleted: p.operationKey };
      return { kind: 'ran', result: { kind: 'SUCCESS', data }, progressVersion: current };
    }
    run.executed += 1;
    if (p.rejection) return { kind: 'ran', result: p.rejection, progressVersion: current };
    if (this.subAgents?.handles(p.tool, p.fixture, p.rejection)) {
      // A sub-agent runs as a child workflow, not an activity (docs/spec.md §7.14); what it
      // changed is read from the run's progress source afterwards.
      const result = await this.subAgents.spawn({ args: p.args, call: blockedOf(p) });
      return {
        kind: 'ran',
        result,
        progressVersion: Math.max(current, await this.activities.currentProgress()),
      };
    }
    let out: RunToolOutput;
    try {
      // An LLM run's model handles the tool errors its tools did not declare (issue 29).
      out = await this.activities.runTool(p, run.toolErrors);
    } catch (err) {
      if (!(err instanceof ActivityFailure) || isCancellation(err)) throw err;
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
    this.holder = out.holder;
    const version = p.fixture ? (p.fixture.progressVersion ?? current) : (out.progressVersion ?? current);
    const floor = this.lastSourceVersion;
    if (!p.fixture && out.progressVersion !== null) this.lastSourceVersion = out.progressVersion;
    if (!p.fixture && floor !== null && version < floor && this.run.patches.has(PATCH_PROGRESS_MONOTONIC)) {
      // A progress source that goes backwards is broken: never a false no_progress, never FAILED.
      const detail = `the progress version went backwards from ${floor} to ${version} after a call of ${p.tool}: the worker's progress source (or ${p.tool}'s progressVersion hook) must never decrease`;
      return this.fault(x, GuardReason.INFRASTRUCTURE_FAULT, 'progress_went_backwards', detail);
    }
    return { kind: 'ran', result: out.result, progressVersion: version };
  }

  /** A tool step that could not complete: the turn is forgotten and the run stops NEEDS_HUMAN. */
  private fault(x: Proposal, reason: GuardReason, code: string, detail: string): Stopped {
    this.undoTurn();
    this.run.runtimeStop(reason, TerminalState.NEEDS_HUMAN, code, detail, blockedOf(x.p), x.p.operationKey);
    return STOPPED;
  }

  /** guard.after: records the result (docs/spec.md §3); a stop keeps the FATAL's message. */
  after(x: Proposal, before: BeforeResult, result: ToolResult, progressVersion: number): AfterResult {
    const { p } = x;
    const run = this.run;
    // The lifted stop's call has run (or was answered): its approvals are spent for good.
    if (run.approvalStop?.fingerprint === p.fingerprint) run.approvalStop = null;
    const counted = run.guard.noProgressCount;
    const after = run.guard.after(x.call, result, progressVersion, Date.now());
    this.recentCalls.remember(x.call.similarKey ?? p.fingerprint, result, run.guard.stepCount);
    if (run.guard.noProgressCount === 0) this.unchanged = [];
    else if (run.guard.noProgressCount > counted)
      this.unchanged = [...this.unchanged, { tool: p.tool, step: run.guard.stepCount }].slice(-5);
    const errorCode = result.kind === 'SUCCESS' ? null : (result.code ?? null);
    const note = after.decision === 'stop' ? null : (after.steer ?? null);
    const reason = after.decision === 'stop' ? after.reason : (note?.reason ?? null);
    run.record({
      ...traced(p),
      phase: 'after',
      result_kind: result.kind,
      error_code: errorCode,
      decision: after.decision,
      reason,
    });
    const decision = before.decision as RunDecision['decision'];
    run.decide({
      index: x.index,
      tool: p.tool,
      decision,
      after: after.decision,
      ...(note ? { reason: note.reason } : {}),
    });
    // Runs recorded before this change upserted search attributes after every step.
    run.publish(!run.patches.has(PATCH_NO_STEP_UPSERT));
    // The call ran: after a resume the planner sees its result (the FATAL it got, say).
    run.observation = toObservation(
      x.turn.callId,
      p.tool,
      result,
      before.decision === 'return_cached_success',
    );
    // no_progress tells the model before it stops (issue 40): the result with the guard's note.
    if (note)
      run.observation = withProgressNote(run.observation, {
        steer: note,
        calls: this.unchanged,
        progressVersion: run.guard.progressVersion,
        steersLeft: Math.max(
          0,
          run.guard.config.steerLimit - run.guard.steers.filter((s) => s.reason !== note.reason).length,
        ),
      });
    if (after.decision === 'stop') {
      // The StopReport is built from the guard alone, exactly as the offline replay builds it.
      run.stop(after.terminalState, after.reason, blockedOf(p), p.operationKey);
      const stop = run.stopInForce;
      if (result.kind === 'FATAL' && stop) stop.detail = result.message ?? null;
      noteConflict(run, p, this.holder);
    }
    this.holder = null;
    return after;
  }

  /** Benchmarks only: the guard as a pass-through. True when the run completed. */
  async passThrough(x: Proposal): Promise<boolean> {
    const { result } = await this.activities.runTool(x.p);
    this.run.executed += 1;
    this.run.decide({ index: x.index, tool: x.p.tool, decision: 'execute', after: 'continue' });
    this.run.observation = toObservation(x.turn.callId, x.p.tool, result, false);
    return result.kind === 'SUCCESS' && result.terminal === true;
  }
}
