/**
 * The activities an agent run calls, proxied once per timeout profile (planner, tool,
 * verification), and the two call shapes the loop needs: one planner turn and one tool
 * call. Workflow code: activities are imported as types only.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  isCancellation,
  proxyActivities,
  proxyLocalActivities,
  TemporalFailure,
  type ActivityOptions,
} from '@temporalio/workflow';
import type { Activities } from '../activities/create-activities';
import { historyMark, summarisedAudit } from './history-marks';
import type {
  PlanInput,
  PlanOutput,
  PrefetchInput,
  ProposalInfo,
  RunToolOutput,
  VerifyInput,
  VerifyOutput,
} from '../activities/types';
import type { OpenedCheckpoint } from '../activities/checkpoint-seal';
import type { SaveTraceInput } from '../activities/run/trace-activity';
import type { VerifyOperatorInput } from '../operators/activities';
import type { OperatorVerdict } from '../operators/registry';
import { planTimeouts, type Checkpoint, type ResolvedRunInput } from '../common/contracts';
import {
  NON_RETRYABLE_PLANNER_ERRORS,
  type ModelNudge,
  type Observation,
  type RunFacts,
} from '../common/planner';
import { ScriptCursor } from '../guard/script-calls';
import { fullPrefetchedTurn } from '../common/prefetched-turn';
import type { PayloadRef } from '../common/payload-limits';
import { scriptCallsRef } from './script-ref';
import type { RefusalAudit } from '../core/resume-check';

/** What the run loop and the resume handler call. */
export interface RunActivities {
  /** The next planner turn, given the planner's memory, the last observation and the run's facts. */
  planTurn(
    memory: unknown,
    observation: Observation | null,
    facts?: RunFacts,
    approvalStopRef?: string | null,
    nudge?: ModelNudge | null,
    finalWord?: { reason: string },
    /** A conversation: the person's message, the next user turn. */
    userText?: string | null,
    /** What an accepted resume tells the model first (core/resume-note.ts). */
    resumeNote?: string | null,
  ): Promise<PlanOutput>;
  /**
   * A scripted run's next turn when the last `runTool` already planned it, without a promise
   * (every promise workflow code makes costs the SDK a stack trace); null when the
   * turn must be asked with `planTurn`. Taken once, as `planTurn` would take it.
   */
  prefetchedTurn(memory: unknown, approvalStopRef: string | null): PlanOutput | null;
  /**
   * Runs the proposed call (writes go through the ledger inside the activity); `toolErrors:
   * 'model'` hands undeclared tool errors back to the model. Its answer goes through
   * {@link tookTool} before anything reads it.
   */
  runTool(p: ProposalInfo, toolErrors?: 'model'): Promise<RunToolOutput>;
  /** The tool activity's answer taken: the next turn it planned kept for `prefetchedTurn`. */
  tookTool(out: RunToolOutput): RunToolOutput;
  /** Re-checks, from external state, that what stopped the run has changed. */
  verifyPrecondition(input: VerifyInput): Promise<VerifyOutput>;
  /** The run's progress version as external state says now. */
  currentProgress(): Promise<number>;
  /** Checks an operator request's signature and authority against the worker's operators. */
  verifyOperator(input: VerifyOperatorInput): Promise<OperatorVerdict>;
  /** Whether the planner answers now (lifts a `planner_failed` stop). */
  checkPlanner(): Promise<{ ok: boolean; detail: string }>;
  /** The seal of a checkpoint with the workers' key (the checkpoint is not sent back). */
  checkpointSeal(cp: Checkpoint): Promise<string>;
  /** Validates a checkpoint given back to a run (shape and seal). */
  openCheckpoint(cp: unknown): Promise<OpenedCheckpoint>;
  /** Audits a refusal the gate decided (core/gate.ts) in the approval store's audit. */
  auditRefusal(input: RefusalAudit): Promise<void>;
  /** Leaves a mark with this summary in the run's history (workflows/history-marks.ts). */
  markHistory(summary: string): Promise<void>;
  /** Keeps trace records that leave the checkpoint in the worker's database. */
  saveTrace(input: SaveTraceInput): Promise<{ saved: number; stored: boolean }>;
  /** Stores a long script's calls in the payload store; `ref: null` without a store. */
  storeScript(input: { runId: string; calls: readonly unknown[] }): Promise<{ ref: PayloadRef | null }>;
  /**
   * Forgets the next turn the last `runTool` planned: the run stopped or waits, and the world
   * may change before it plans again (the ledger above all), so that turn is asked afresh.
   */
  discardPrefetch(): void;
}

/**
 * A local activity's failure reaches the workflow as its cause alone (an ApplicationFailure, a
 * TimeoutFailure), a scheduled one's as an ActivityFailure around it: wrapped the same way, the
 * run handles both alike (run-steps.ts: plan failures stop the run, they never fail it).
 */
function asActivityFailure(err: unknown): unknown {
  if (err instanceof ActivityFailure || isCancellation(err) || !(err instanceof TemporalFailure)) return err;
  const final = err instanceof ApplicationFailure && err.nonRetryable;
  return new ActivityFailure(
    'Local activity task failed',
    'plan',
    undefined,
    final ? 'NON_RETRYABLE_FAILURE' : 'MAXIMUM_ATTEMPTS_REACHED',
    undefined,
    err,
  );
}

/**
 * A prefetched turn's input without what every prefetched turn has in common — the run id,
 * the empty goal, the memory `{ next: 0 }`, no observation — which `runTool` fills back in:
 * it crosses history every step.
 */
function leanPrefetch(plan: PlanInput): PrefetchInput {
  const { runId: _runId, goal: _goal, memory: _memory, observation: _observation, ...lean } = plan;
  return lean;
}

/** Proxies the activities with the run's timeouts. */
export function runActivities(input: ResolvedRunInput, runId: string): RunActivities {
  const t = input.timeouts;
  // Only a run that sets `retryInitialMs` schedules other retry policies than before.
  const firstRetry = t.retryInitialMs === undefined ? {} : { initialInterval: t.retryInitialMs };
  // One request policy: the model request times out inside the activity's timeout,
  // and the SDK makes no retries of its own: the activity's retries are the only ones.
  const policy = planTimeouts(t);
  const planOptions: ActivityOptions = {
    startToCloseTimeout: policy.startToCloseMs,
    retry: {
      initialInterval: '1s',
      ...firstRetry,
      maximumInterval: '30s',
      maximumAttempts: 5,
      nonRetryableErrorTypes: [...NON_RETRYABLE_PLANNER_ERRORS, 'TypeError'],
    },
  };
  const toolOptions: ActivityOptions = {
    startToCloseTimeout: t.toolStartToCloseMs,
    heartbeatTimeout: t.toolHeartbeatMs,
    // Tools classify their own errors; Temporal retries only lost attempts (crash, timeout),
    // and the ledger makes those retries safe for writes.
    retry: {
      initialInterval: '1s',
      maximumInterval: '20s',
      maximumAttempts: t.toolMaxAttempts,
      ...firstRetry,
      // Its own list, not the planner's: proxied with the plan's options, every
      // scheduled runTool carried the planner's twenty error names (~330 B of history per
      // step), none of which the tool activity throws (a prefetch's planner errors end in
      // `prefetchPlan`). A TypeError (a bug) and a missing optional package stay final.
      nonRetryableErrorTypes: ['TypeError', 'OptionalDependencyError'],
    },
  };
  const { plan } = proxyActivities<Activities>(planOptions);
  const { runTool } = proxyActivities<Activities>(toolOptions);
  // The scripted plan reads only the worker's ledger and approvals: it runs inside the workflow
  // task (no extra task, no server round trip); a failure is an ActivityFailure all the same.
  const { plan: localPlanRaw } = proxyLocalActivities<Activities>(planOptions);
  const localPlan = (i: Parameters<typeof plan>[0]): ReturnType<typeof plan> =>
    localPlanRaw(i).catch((err: unknown) => Promise.reject(asActivityFailure(err)));
  const { verifyPrecondition, verifyOperator, checkPlanner, checkpointSeal, openCheckpoint, auditRefusal } =
    proxyActivities<Activities>({
      startToCloseTimeout: '1 minute',
      retry: { maximumAttempts: 5, ...firstRetry },
    });
  // A local activity: its input (the paged-out records) never enters history, only its small
  // answer does, so saving the trace costs history nothing per record.
  const { saveTrace, storeScript } = proxyLocalActivities<Activities>({
    startToCloseTimeout: '1 minute',
    retry: { maximumAttempts: 5 },
  });
  // Reading the world's version at start loses nothing by waiting: an outage delays the
  // run's first step instead of failing it.
  const { currentProgress } = proxyActivities<Activities>({
    startToCloseTimeout: '1 minute',
    retry: { initialInterval: '1s', maximumInterval: '30s', ...firstRetry },
  });
  const planner = input.planner;
  // Built once per run (a continue-as-new builds its own): the next call is O(1), not a walk
  // of the script from its first entry every turn.
  const scriptCalls = (planner.kind === 'scripted' ? planner.script : undefined) as
    { calls?: unknown } | undefined;
  const cursor =
    typeof scriptCalls === 'object' && scriptCalls !== null && Array.isArray(scriptCalls.calls)
      ? new ScriptCursor<unknown>(scriptCalls.calls)
      : null;
  // A scripted run's next turn: the input the last turn prepared for it, which the
  // next `runTool` sends along, and the answer that `runTool` brought back, each used once.
  let upcoming: { offset: number; plan: PlanInput } | null = null;
  let prefetched: { offset: number; out: PlanOutput } | null = null;
  /** The next turn the `runTool` in flight was sent to plan (one tool call at a time per run). */
  let inFlight: { offset: number; plan: PlanInput } | null = null;

  /** The run's tool scope and lifted stop, as the plan activity reads them. */
  const liftedOf = (approvalStopRef: string | null | undefined) => ({
    // Only while a lifted approval stop's call has not run: the activity offers nothing else.
    ...(approvalStopRef ? { approvalStopRef } : {}),
    // The run's tool scope (§7.14): absent on runs that name no tools and cannot spawn.
    ...(input.tools ? { tools: input.tools } : {}),
    ...(input.subAgents ? { spawnAgents: true } : {}),
    ...(input.conversation ? { askHuman: true } : {}),
  });
  const scriptOf = (): object | null => {
    const raw = planner.kind === 'scripted' ? planner.script : undefined;
    return typeof raw === 'object' && raw !== null ? raw : null;
  };
  const offsetOf = (memory: unknown): number => (memory as { next?: number } | null)?.next ?? 0;
  /**
   * The turn at a script index: the one call there (a `repeat` entry expanded:
   * guard/script-calls.ts), or none past the end (the planner answers `exhausted`).
   */
  const turnAt = (raw: object, at: number, seen: unknown, scope: object): PlanInput => {
    const { calls, ...head } = raw as { calls?: unknown[] };
    // A script in the payload store: the activity reads the call at `scriptAt`.
    const ref = scriptCallsRef(raw);
    const call = Array.isArray(calls) ? cursor?.at(at) : undefined;
    const scripted = planner as Extract<typeof planner, { kind: 'scripted' }>;
    return {
      runId,
      goal: input.goal,
      planner: { ...scripted, script: { ...head, calls: ref ?? (call === undefined ? [] : [call]) } },
      memory: { next: 0 },
      observation: seen,
      ...scope,
      ...(ref ? { scriptAt: at } : {}),
    };
  };
  /** A scripted turn taken into the run: its memory and index, and the next turn prepared. */
  const took = (raw: object, offset: number, out: PlanOutput, lifted: object): PlanOutput => {
    const next = offset + ((out.memory as { next?: number } | null)?.next ?? 0);
    if (input.scriptedPlan === 'prefetch' && out.turn.type === 'call') {
      // The scripted planner reads neither the goal, the observation nor a lifted stop: the
      // next turn is known now, and the tool activity can plan it as soon as the call has
      // answered. (This input is in history, a local plan's is not: the goal stays out.)
      const { approvalStopRef: _lifted, ...scope } = lifted as { approvalStopRef?: string };
      upcoming = { offset: next, plan: { ...turnAt(raw, next, null, scope), goal: '' } };
    }
    const turn =
      out.turn.type === 'call'
        ? { ...out.turn, scriptIndex: offset + (out.turn.scriptIndex ?? 0) }
        : out.turn;
    return { ...out, turn, memory: { next } };
  };

  /**
   * The turn the last `runTool` planned, when it is the one asked for (`memory`'s offset) and
   * nothing between could change the answer (no lifted approval stop); taken once.
   */
  const takePrefetched = (memory: unknown, approvalStopRef: string | null | undefined): PlanOutput | null => {
    const raw = scriptOf();
    const ready = prefetched;
    if (!raw || !ready || approvalStopRef) return null;
    const offset = offsetOf(memory);
    prefetched = null;
    upcoming = null;
    return ready.offset === offset ? took(raw, offset, ready.out, liftedOf(null)) : null;
  };

  return {
    prefetchedTurn: takePrefetched,
    /**
     * A scripted planner is sent only the one call it is about to propose (its memory is
     * the script index): sending the whole script every turn would make history grow with
     * the square of the script's length.
     */
    async planTurn(memory, observation, facts, approvalStopRef, nudge, finalWord, userText, resumeNote) {
      const lifted = liftedOf(approvalStopRef);
      if (planner.kind !== 'scripted') {
        return plan({
          runId,
          goal: input.goal,
          planner,
          memory,
          observation,
          ...(facts ? { facts } : {}),
          ...lifted,
          tenant: input.tenant,
          ...(nudge ? { nudge } : {}),
          ...(finalWord ? { finalWord } : {}),
          ...(typeof userText === 'string' ? { userText } : {}),
          ...(typeof resumeNote === 'string' ? { resumeNote } : {}),
          requestTimeoutMs: policy.requestMs,
        });
      }
      const raw = scriptOf();
      if (!raw) return plan({ runId, goal: input.goal, planner, memory, observation, ...lifted });
      const ready = takePrefetched(memory, approvalStopRef);
      if (ready) return ready;
      prefetched = null;
      upcoming = null;
      const offset = offsetOf(memory);
      // `activity` (benchmarks' baseline): a scheduled activity instead of a local one.
      const scriptedPlan = input.scriptedPlan !== 'activity' ? localPlan : plan;
      return took(raw, offset, await scriptedPlan(turnAt(raw, offset, observation, lifted)), lifted);
    },
    runTool(p, toolErrors) {
      const prefetch = upcoming;
      upcoming = null;
      inFlight = prefetch;
      // The activity's own promise, no wrapper: the caller hands its answer to `tookTool`. A
      // write's row in the UI says which call it is (tool and fingerprint); a read's says
      // nothing: a summary is one more encrypted payload per step, and a read that was refused
      // or did not succeed has its own mark (workflows/history-marks.ts).
      const options = p.effect === 'write' ? { summary: `${p.tool} · ${p.fingerprint.slice(-16, -8)}` } : {};
      return runTool.executeWithOptions(options, [
        {
          runId,
          tool: p.tool,
          args: p.args,
          operationKey: p.operationKey,
          // No fingerprint or args hash: the activity computes both (small payloads).
          ...(p.approval?.approvalId
            ? { approvalId: p.approval.approvalId, approvalStopRef: p.approval.stopRef ?? null }
            : {}),
          fixture: p.fixture,
          ...(prefetch ? { prefetch: leanPrefetch(prefetch.plan) } : {}),
          ...(toolErrors ? { toolErrors } : {}),
        },
      ]);
    },
    tookTool({ next, ...out }) {
      const prefetch = inFlight;
      inFlight = null;
      // A lean turn or a full one (a history recorded before): the same turn.
      if (prefetch && next) prefetched = { offset: prefetch.offset, out: fullPrefetchedTurn(next) };
      return out;
    },
    verifyPrecondition,
    currentProgress: () => currentProgress(runId),
    verifyOperator,
    checkPlanner: () => checkPlanner({ runId, planner }),
    checkpointSeal,
    openCheckpoint,
    auditRefusal: summarisedAudit(auditRefusal),
    markHistory: historyMark(),
    saveTrace,
    storeScript,
    discardPrefetch() {
      prefetched = null;
    },
  };
}
