/**
 * The contract between the workflow, the worker and agentctl: task queue, workflow
 * type, message definitions and their zod schemas. Sandbox-safe; never retype these
 * strings elsewhere.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import { z } from 'zod';
import {
  guardOverridesSchema,
  type GuardStateJson,
  type StopReport,
  type TerminalState,
  type TracePage,
  type TracePageArgs,
  type TraceRecord,
} from '../guard';

export type { TracePage, TracePageArgs };
import { plannerSpecSchema } from './planner';
import { subAgentsSchema, treePlaceSchema, type ChildSummary } from './sub-agents';
import * as conv from './conversation-run';
import type { RunCallCounts } from './run-counters';
export type { RunCallCounts } from './run-counters';

/** Default task queue of agent runs. */
export const DEFAULT_TASK_QUEUE = 'agent-loop-guard';
/** Workflow type name. */
export const WORKFLOW_TYPE = 'agentRun';
/** Prefix of generated workflow ids. */
export const WORKFLOW_ID_PREFIX = 'agent-run';

export {
  budgetRaiseSchema,
  MAX_RESUME_NOTE_CHARS,
  resumeNoteSchema,
  resumeRequestSchema,
  stopRequestSchema,
  type BudgetRaise,
  type ResumeAnswer,
  type ResumeRequest,
  type StopAnswer,
  type StopRequest,
} from './operator-requests';
import type { ResumeAnswer, ResumeRequest, StopAnswer, StopRequest } from './operator-requests';

/** Per-kind activity timeouts. */
export const timeoutsSchema = z
  .object({
    plannerStartToCloseMs: z.number().int().positive().default(120_000),
    /**
     * How long the model may take to answer one request: the SDK's own timeout, which
     * makes no retries of its own (the plan activity's are the retries). The plan activity's
     * timeout is raised to this plus {@link PLAN_MARGIN_MS} when it is shorter. Absent: the plan
     * activity's timeout less that margin. `agentctl start --planner-timeout <s>`.
     */
    plannerRequestMs: z
      .number({ error: 'timeouts.plannerRequestMs must be a number of milliseconds' })
      .int('timeouts.plannerRequestMs must be a whole number of milliseconds')
      .min(1000, 'timeouts.plannerRequestMs must be at least 1000 (1 s)')
      .max(3_600_000, 'timeouts.plannerRequestMs must be at most 3600000 (1 hour)')
      .optional(),
    toolStartToCloseMs: z.number().int().positive().default(300_000),
    toolHeartbeatMs: z.number().int().positive().default(20_000),
    /**
     * Attempts of a tool activity that fails as a whole (a crash, a timeout, a database
     * down) before the run stops NEEDS_HUMAN `infrastructure_fault`. Tool errors are
     * classified results, not failures, and are never retried this way.
     */
    toolMaxAttempts: z.number().int().positive().default(10),
    /**
     * The wait before the first retry of a failed activity (plan, tool, verification, the
     * progress read), doubling from there; absent: 1 s. Short for tests and for backends that
     * recover fast.
     */
    retryInitialMs: z.number().int().positive().optional(),
  })
  .strict();

/** What the plan activity's timeout keeps beyond its model request's (conversation store, ledger). */
export const PLAN_MARGIN_MS = 10_000;

/**
 * The one request policy of a run's plan activity: the model request's timeout and
 * the activity's, which is always longer, so an attempt ends itself before Temporal gives up on it.
 */
export function planTimeouts(t: {
  readonly plannerStartToCloseMs: number;
  readonly plannerRequestMs?: number | undefined;
}): { requestMs: number; startToCloseMs: number } {
  if (t.plannerRequestMs !== undefined)
    return {
      requestMs: t.plannerRequestMs,
      startToCloseMs: Math.max(t.plannerStartToCloseMs, t.plannerRequestMs + PLAN_MARGIN_MS),
    };
  const margin = Math.min(PLAN_MARGIN_MS, Math.floor(t.plannerStartToCloseMs / 2));
  return { requestMs: t.plannerStartToCloseMs - margin, startToCloseMs: t.plannerStartToCloseMs };
}

/** The tenant of a run that names none. */
export const DEFAULT_TENANT = 'default';

/** A tenant name (the key of `AGENT_SPEND_LIMITS`). */
export const tenantSchema = z
  .string()
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/,
    'tenant must be 1-64 letters, digits, . _ - (starting with a letter or digit)',
  );

/** Input of the `agentRun` workflow. */
export const runInputSchema = z
  .object({
    goal: z.string().min(1),
    planner: plannerSpecSchema,
    /** Guard settings; each one set here overrides the script file's `config`. */
    guard: guardOverridesSchema.default({}),
    /** false turns the guard into a pass-through (benchmarks only). */
    guardEnabled: z.boolean().default(true),
    /**
     * How a scripted run's plan runs: `prefetch` (the default: each turn after a tool
     * call is planned by that call's `runTool` activity and comes back with its result; any
     * other turn is a local activity), `local` (a local activity inside the workflow task every
     * turn) or `activity` (a scheduled activity: benchmarks' baseline).
     */
    scriptedPlan: z.enum(['prefetch', 'local', 'activity']).default('prefetch'),
    /** Operation keys already completed (as after a resume from another run). */
    completed: z.array(z.string()).default([]),
    initialProgressVersion: z.number().optional(),
    /** How long a stopped run waits for `resume` before it closes with its StopReport. */
    resumeWindowMs: z
      .number()
      .int()
      .positive()
      .default(7 * 24 * 3600 * 1000),
    /** Continue-as-new after this many history events (also when the server suggests it). */
    maxHistoryEvents: z.number().int().positive().default(10_000),
    /** Trace records kept in the workflow (older ones stay in history). */
    traceLimit: z.number().int().positive().default(2000),
    timeouts: timeoutsSchema.default({
      plannerStartToCloseMs: 120_000,
      toolStartToCloseMs: 300_000,
      toolHeartbeatMs: 20_000,
      toolMaxAttempts: 10,
    }),
    /** Only with continue-as-new or `resume --from`: the state to continue from. */
    checkpoint: z.unknown().optional(),
    /**
     * The tools this run may use (names the worker hosts); absent: every tool the worker hosts.
     * A proposal of another tool is PRECONDITION `unknown_tool`, nothing runs.
     */
    tools: z.array(z.string().min(1)).max(256).optional(),
    /** Lets the planner delegate with `spawn_agent` (docs/spec.md §7.14), within these limits. */
    subAgents: subAgentsSchema.optional(),
    /** Set by a parent on its child: the child's place in the tree (never by a caller). */
    tree: treePlaceSchema.optional(),
    /**
     * Who pays for the run's model calls: the tenant whose spend limit (`AGENT_SPEND_LIMITS`
     * on the worker, docs/spec.md §7.13) every model call is reserved under.
     */
    tenant: tenantSchema.default(DEFAULT_TENANT),
    /**
     * An LLM run's replies without a tool call that the run answers with a note (what the model
     * said, that nothing ran, how to finish) before it ends PARTIAL `model_stopped`;
     * absent: {@link DEFAULT_TEXT_REPLY_LIMIT}. 0: the first such reply ends the run.
     */
    textReplyLimit: z
      .number({ error: 'textReplyLimit must be a number' })
      .int('textReplyLimit must be a whole number')
      .min(0, 'textReplyLimit must be 0 or more')
      .max(20, 'textReplyLimit must be at most 20')
      .optional(),
    /** A conversation with a person: `ask_human`, text replies to them (docs/spec.md §7.16). */
    conversation: conv.conversationSettingsSchema.optional(),
  })
  .strict();

/** How many replies without a tool call an LLM run answers with a note by default. */
export const DEFAULT_TEXT_REPLY_LIMIT = 2;
/** Workflow input as a caller writes it. */
export type RunInput = z.input<typeof runInputSchema>;
/** Workflow input with defaults filled. */
export type ResolvedRunInput = z.output<typeof runInputSchema>;

/** Lifecycle of a run as `status` reports it. */
export type RunPhase = 'RUNNING' | 'WAITING' | 'STOPPED' | TerminalState;

/** One replay-style decision (docs/spec.md §6 `decisions` entry). */
export interface RunDecision {
  index: number;
  tool: string;
  decision: 'execute' | 'return_cached_success' | 'steer' | 'stop';
  after?: string;
  /** For `steer`: the rule that refused the call (it did not run). */
  reason?: string;
}

/** What the `status` query returns. */
export interface RunStatus extends RunCallCounts {
  readonly workflowId: string;
  readonly phase: RunPhase;
  readonly terminalState: TerminalState | null;
  readonly guardReason: string | null;
  readonly steps: number;
  /** Refusals steered back to the planner so far (docs/spec.md §3.3; absent from runs before steering). */
  readonly steers?: number;
  readonly proposals: number;
  readonly progressVersion: number;
  readonly noProgress: number;
  readonly usage: { tokens: number; costUsd: number };
  readonly lastDecision: string | null;
  readonly waitingForResume: boolean;
  readonly goal: string;
  /** The run's place in its agent tree (absent on a root and on runs that cannot spawn). */
  readonly tree?: { readonly rootId: string; readonly parentId: string | null; readonly depth: number };
  /** The sub-agents this run spawned, oldest first (docs/spec.md §7.14); absent when none. */
  readonly children?: readonly ChildSummary[];
  /** A conversation run (docs/spec.md §7.16): what the agent waits on from its person; absent on other runs. */
  readonly conversation?: conv.ConversationStatus;
}

/** Everything a run needs to continue: kept on stop, carried across continue-as-new. */
export interface Checkpoint extends RunCallCounts {
  readonly v: 1;
  readonly guard: GuardStateJson;
  readonly plannerMemory: unknown;
  readonly observation: unknown;
  readonly proposals: number;
  readonly decisions: RunDecision[];
  readonly trace: TraceRecord[];
  readonly traceTotal: number;
  readonly seenRequestIds: string[];
  /**
   * The approval stop a resume lifted whose blocked call has not run yet: the only stop whose
   * approval the run may still use (docs/security.md "Bound to the stop").
   */
  readonly approvalStop?: { readonly stopRef: string; readonly fingerprint: string };
  /** The sub-agents this run spawned (absent when none; docs/spec.md §7.14). */
  readonly children?: ChildSummary[];
  readonly conversation?: conv.ConversationCheckpoint; // a conversation's pending turn and queue (§7.16)
  /**
   * Set when the checkpoint was taken while the run was stopped. It names the blocked
   * call's args and operation key so that a run continued from it (`resume --from`)
   * re-checks that call's own precondition, or its ledger record (absent in older checkpoints).
   */
  readonly stop: {
    terminalState: TerminalState;
    reason: string;
    report: StopReport;
    blockedArgs?: unknown;
    operationKey?: string | null;
  } | null;
  /**
   * HMAC-SHA256 of the rest, by the worker's checkpoint key: a checkpoint given back to a
   * run (`resume --from`, continue-as-new) is refused when it was forged or edited.
   */
  readonly seal?: string;
}

/** The workflow's result. */
export interface RunResult extends RunCallCounts {
  readonly workflow_id: string;
  readonly terminal_state: TerminalState;
  readonly reason: string | null;
  readonly stopped_at: number | null;
  readonly decisions: RunDecision[];
  readonly report: StopReport | null;
  readonly summary: string | null;
  /**
   * An LLM run's last words when it did not end by the finishing tool: the model's
   * text of a `model_stopped` or `model_output_truncated` end (redacted). Absent otherwise.
   */
  readonly final_message?: string;
  /** Checkpoint to continue from with `agentctl resume --from` (null when COMPLETED). */
  readonly checkpoint: Checkpoint | null;
  /**
   * What the run used, its sub-agents included: what a parent charges for this run when it is
   * a child (docs/spec.md §7.14). Absent from results of runs before sub-agents.
   */
  readonly usage?: { readonly steps: number; readonly tokens: number; readonly cost_usd: number };
}

/** Resume signal: asynchronous; the outcome is recorded in the trace. */
export const resumeSignal = defineSignal<[ResumeRequest]>('resume');
/** Stop signal: the kill switch, effective before the next tool call. */
export const stopSignal = defineSignal<[StopRequest]>('stop');
/** Stop update: the same as the signal, answering what the worker did with it ({@link StopAnswer}). */
export const stopUpdate = defineUpdate<StopAnswer, [StopRequest]>('stop');
/** Resume update: the same as the signal, with a synchronous yes/no. */
export const resumeUpdate = defineUpdate<ResumeAnswer, [ResumeRequest]>('resume');
/** Status query. */
export const statusQuery = defineQuery<RunStatus>('status');
/** StopReport query (null while running or when COMPLETED). */
export const reportQuery = defineQuery<StopReport | null>('report');
/** Paged trace query. */
export const traceQuery = defineQuery<TracePage, [TracePageArgs?]>('trace');
/** The checkpoint the run would continue from. */
export const checkpointQuery = defineQuery<Checkpoint>('checkpoint');

const count = z.number().int().nonnegative();
/** The guard state inside a checkpoint (guard/loop-guard.ts `GuardStateJson`), checked for shape. */
const guardStateSchema = z
  .object({
    v: z.literal(1),
    config: z.record(z.string(), z.union([z.number().nullable(), z.boolean()])),
    startMs: z.number(),
    steps: count,
    tokens: z.number().nonnegative(),
    costUsd: z.number().nonnegative(),
    lastProgressVersion: z.number(),
    noProgress: count,
    windowLength: count,
    counts: z.array(z.tuple([z.string(), count])),
    lastKinds: z.array(z.tuple([z.string(), z.string()])),
    exacts: z.array(z.tuple([z.string(), z.string()])).optional(),
    lastThree: z.array(z.string()).max(3),
    honoured: z.array(z.tuple([z.string(), count])),
    lastExecutions: z.array(
      z.tuple([z.string(), z.object({ kind: z.string(), retryAfterMs: z.number(), atMs: z.number() })]),
    ),
    completed: z.array(z.tuple([z.string(), z.string().nullable()])),
    ledgerCompleted: z
      .object({
        keep: z.number().int().positive(),
        recent: z.array(z.tuple([z.string(), z.string().nullable()])),
        total: count,
      })
      .strict()
      .optional(),
    lastUnmet: z.string().nullable(),
    lastFatal: z.string().nullable().optional(),
    inFlight: z.unknown().nullable(),
    steers: z
      .array(z.object({ reason: z.string(), fingerprint: z.string(), step: count }).strict())
      .optional(),
    failures: z
      .array(z.union([z.tuple([z.string(), count]), z.tuple([z.string(), count, z.string()])]))
      .optional(),
    reapplied: z
      .array(
        z.tuple([
          z.string(),
          z.object({ times: count, size: z.number().int().nonnegative(), after: z.string() }).strict(),
        ]),
      )
      .max(32)
      .optional(),
    stop: z.object({ reason: z.string(), terminalState: z.string() }).nullable(),
  })
  .strict();

/** A checkpoint as it travels in a run's input (validated by the `openCheckpoint` activity). */
export const checkpointSchema = z
  .object({
    v: z.literal(1),
    guard: guardStateSchema,
    plannerMemory: z.unknown(),
    observation: z.unknown(),
    proposals: count,
    executed: count,
    cached: count,
    reconciled: count.optional(),
    decisions: z.array(
      z.object({
        index: count,
        tool: z.string(),
        decision: z.string(),
        after: z.string().optional(),
        reason: z.string().optional(),
      }),
    ),
    trace: z.array(z.unknown()),
    traceTotal: count,
    seenRequestIds: z.array(z.string()),
    stop: z
      .object({
        terminalState: z.string(),
        reason: z.string(),
        report: z.unknown(),
        blockedArgs: z.unknown().optional(),
        operationKey: z.string().nullable().optional(),
      })
      .nullable(),
    /** The approval stop a resume lifted whose call has not run yet (workflows/run-state.ts). */
    approvalStop: z
      .object({ stopRef: z.string(), fingerprint: z.string(), argsDigest: z.string().optional() })
      .strict()
      .optional(),
    children: z
      .array(
        z
          .object({
            workflowId: z.string(),
            goal: z.string(),
            state: z.string(),
            reason: z.string().nullable(),
            reserved: z.object({
              steps: z.number().nullable(),
              tokens: z.number().nullable(),
              costUsd: z.number().nullable(),
              ms: z.number().nullable(),
            }),
            used: z.object({ steps: z.number(), tokens: z.number(), costUsd: z.number() }).nullable(),
          })
          .strict(),
      )
      .optional(),
    conversation: conv.conversationCheckpointSchema.optional(),
    seal: z.string().optional(),
  })
  .strict();
