/**
 * Zod schemas for the guard's contract: configuration, tool results, the StopReport
 * (docs/spec.md §4, snake_case on the wire) and trace records (docs/spec.md §5).
 */
import { z } from 'zod';
import { RESULT_KINDS, TERMINAL_STATES } from './constants';

const limit = z.number().int().positive();
/** A budget may be a finite positive number or `null`/`Infinity` for "no limit". */
const optionalBudget = z
  .union([
    z.number().positive(),
    z.null(),
    z.custom<number>((v) => v === Number.POSITIVE_INFINITY, 'must be a positive number or null'),
  ])
  .transform((v) => (v === null ? Number.POSITIVE_INFINITY : v));

/** Guard configuration (docs/spec.md §3 defaults). Unknown keys are an error, not silently ignored. */
export const guardConfigSchema = z
  .object({
    maxSteps: limit.default(20),
    maxMs: z.number().positive().default(60_000),
    sameCallLimit: limit.default(2),
    noProgressLimit: limit.default(3),
    maxWaitPolls: limit.default(10),
    maxTokens: optionalBudget.default(Number.POSITIVE_INFINITY),
    maxCostUsd: optionalBudget.default(Number.POSITIVE_INFINITY),
    /**
     * How many refusals by a repeat rule go back to the planner as a guard note instead of
     * stopping the run (docs/spec.md §3.3 "Steering"); 0 (the default): every refusal stops.
     */
    steerLimit: z.number().int().nonnegative().default(0),
    /**
     * Remember failed calls across windows opened by reads (docs/spec.md §3 "Failure memory",
     * guard/failure-memory.ts); false (the default): a new window forgets them, as before.
     */
    keepFailures: z.boolean().default(false),
    /**
     * `no_progress` tells before it stops (docs/spec.md §3 "Steering"): with N > 0 the first
     * time a window reaches `noProgressLimit` the call's result goes to the planner with a guard
     * note, and the run stops only after N more calls without progress; 0 (the default): the
     * stop at `noProgressLimit`, as before.
     */
    noProgressGrace: z.number().int().nonnegative().default(0),
  })
  .strict();

/**
 * Guard settings given with a run: the same fields, each optional and WITHOUT defaults,
 * so only what the caller set overrides a script's `config` (zod fills defaults inside
 * `.partial()`, which made `guard: {}` reset a script's budgets to the defaults).
 */
export const guardOverridesSchema = z
  .object({
    maxSteps: limit.optional(),
    maxMs: z.number().positive().optional(),
    sameCallLimit: limit.optional(),
    noProgressLimit: limit.optional(),
    maxWaitPolls: limit.optional(),
    maxTokens: optionalBudget.optional(),
    maxCostUsd: optionalBudget.optional(),
    steerLimit: z.number().int().nonnegative().optional(),
    keepFailures: z.boolean().optional(),
    noProgressGrace: z.number().int().nonnegative().optional(),
  })
  .strict();
/** Guard settings given with a run. */
export type GuardOverrides = z.output<typeof guardOverridesSchema>;
/** Fully resolved guard configuration. */
export type GuardConfig = z.output<typeof guardConfigSchema>;
/** Guard configuration as a caller writes it (every field optional). */
export type GuardConfigInput = z.input<typeof guardConfigSchema>;

/** Token and cost usage of one planner proposal. */
export const usageSchema = z
  .object({ tokens: z.number().nonnegative().default(0), costUsd: z.number().nonnegative().default(0) })
  .strict();
/** Usage of one proposal. */
export type Usage = z.output<typeof usageSchema>;

const code = z.string().min(1);

/**
 * What a call did to the agent's workspace, as the tool reports it (docs/spec.md §3 "Workspace
 * reports"): a fingerprint of the workspace taken before and after the call (a hash of the
 * files the tool may change, a git tree id) and the size of what it leaves (bytes of the
 * changed files, or of the diff against the base). `before !== after` is a change: progress,
 * even when the call printed nothing. `{ error }`: the fingerprint could not be taken; the
 * guard then stops the run `workspace_unknown` (it cannot tell a change from a loop).
 */
export const workspaceReportSchema = z.union([
  z
    .object({
      before: z.string().min(1).max(256),
      after: z.string().min(1).max(256),
      size: z.number().int().nonnegative(),
    })
    .strict(),
  z.object({ error: z.string().min(1).max(2_000) }).strict(),
]);
/** A tool's workspace report. */
export type WorkspaceReport = z.output<typeof workspaceReportSchema>;

/** A classified tool result (docs/spec.md §2). `code` is optional so a bare FATAL reads as `fatal`. */
export const toolResultSchema = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('SUCCESS'),
    data: z.unknown().optional(),
    terminal: z.boolean().optional(),
    /** What the call changed in the workspace ({@link workspaceReportSchema}); optional. */
    workspace: workspaceReportSchema.optional(),
  }),
  z.object({
    kind: z.literal('RETRYABLE'),
    code: code.optional(),
    retryAfterMs: z.number().nonnegative().optional(),
    message: z.string().optional(),
  }),
  z.object({
    kind: z.literal('PENDING'),
    code: code.optional(),
    retryAfterMs: z.number().nonnegative().optional(),
    ref: z.string().optional(),
    message: z.string().optional(),
  }),
  z.object({
    kind: z.literal('PRECONDITION'),
    code: code.optional(),
    unmet: z.string().optional(),
    message: z.string().optional(),
  }),
  z.object({ kind: z.literal('FATAL'), code: code.optional(), message: z.string().optional() }),
]);
/** A classified tool result. */
export type ToolResult = z.output<typeof toolResultSchema>;
/** Result kind enum schema. */
export const resultKindSchema = z.enum(RESULT_KINDS);

/** The call that ended a run, as the StopReport names it. */
export const blockedCallSchema = z.object({
  tool: z.string(),
  /** The guard's 64-bit fingerprint: counts repeats; not a security boundary (docs/security.md). */
  fingerprint: z.string(),
  /** `sha256:<64 hex>` of the tool and its canonical args: the exact call an approval binds. */
  args_digest: z.string().optional(),
});

/** The StopReport of docs/spec.md §4 (snake_case keys, JSON). */
export const stopReportSchema = z.object({
  terminal_state: z.enum(TERMINAL_STATES),
  guard_reason: z.string(),
  completed: z.array(z.string()),
  /** Every completed operation, when `completed` lists only the newest (a run with a ledger window). */
  completed_total: z.number().int().nonnegative().optional(),
  last_safe_checkpoint: z.string().nullable(),
  unmet_precondition: z.string().nullable(),
  resume_condition: z.string().nullable(),
  next_allowed_action: z.string(),
  steps: z.number().int().nonnegative(),
  last_progress_version: z.number(),
  blocked_call: blockedCallSchema.nullable(),
  /** The refusals that were steered back to the planner before this stop (present only when some were). */
  steers: z
    .array(z.object({ step: z.number().int().positive(), reason: z.string(), fingerprint: z.string() }))
    .optional(),
  /** An LLM run's last words: the model's text when it stopped talking or was cut off. */
  final_message: z.string().optional(),
  /**
   * An `idempotency_conflict` stop of a durable run: the key, the run holding it and
   * which args differ (redacted as the trace is; null when the holder's args are not known here).
   */
  conflict: z
    .object({
      operation_key: z.string(),
      holder_run: z.string().nullable(),
      holder_tool: z.string().nullable(),
      differing_args: z
        .array(z.object({ path: z.string(), held: z.unknown().optional(), proposed: z.unknown().optional() }))
        .nullable(),
    })
    .optional(),
});
/** A StopReport. */
export type StopReport = z.output<typeof stopReportSchema>;

/** One trace record per decision (docs/spec.md §5). */
export const traceRecordSchema = z.object({
  run_id: z.string(),
  step: z.number().int().nonnegative(),
  tool: z.string().nullable(),
  fingerprint: z.string().nullable(),
  args: z.unknown(),
  result_kind: resultKindSchema.nullable(),
  error_code: z.string().nullable(),
  progress_version: z.number(),
  operation_key: z.string().nullable(),
  phase: z.enum(['before', 'after', 'run']),
  decision: z.string(),
  reason: z.string().nullable(),
  at_ms: z.number(),
  /**
   * How an `after` record's result came when not from the tool running now: `reconciled`, the
   * ledger's `reconcile` probe settled a write an earlier attempt dispatched and lost (the tool
   * did not run again). Absent otherwise.
   */
  via: z.literal('reconciled').optional(),
});
/** A trace record. */
export type TraceRecord = z.output<typeof traceRecordSchema>;
