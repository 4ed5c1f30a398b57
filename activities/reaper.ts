/**
 * The `reapLedger` activity: deletes settled ledger records older than the retention — and
 * never one whose run could still resume (docs/ledger.md "Reaping"). A reaped run's rows in
 * the conversation store, the planner turns and the payload store go with it, once the
 * newest of them is older than the retention. Two guards:
 *
 * 1. the retention is never shorter than the resume window ({@link MIN_RETENTION_MS}, the
 *    default `resumeWindowMs` of a run): a record of a stopped run that waits the full
 *    window is still there when it resumes and re-proposes its finished writes;
 * 2. before a run's records go, its workflow must be closed. A run may set a longer
 *    `resumeWindowMs` than the default, and only Temporal knows whether it still waits.
 *    The check uses the worker's own client (the activity context's), so the activity
 *    needs no new dependency; an embedder or a test may pass `isRunOpen` instead.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure, WorkflowNotFoundError } from '@temporalio/common';
import { runInputSchema } from '../common/contracts';
import { activityLog, heartbeat } from './activity-context';
import type { Ledger } from '../storage/ledger';

/** The shortest retention the reaper uses: a run's default resume window (common/contracts.ts). */
export const MIN_RETENTION_MS: number = runInputSchema.shape.resumeWindowMs.parse(undefined);

/** Input of {@link ReaperActivities.reapLedger} (the schedule's workflow argument). */
export interface ReapLedgerInput {
  /** Delete settled records finished longer ago than this; raised to {@link MIN_RETENTION_MS}. */
  readonly retentionMs: number;
  /** Runs checked per page (default 100). */
  readonly pageSize?: number;
}

/** What one reaper pass did. */
export interface ReapLedgerOutput {
  /** The retention applied (after the clamp). */
  readonly retentionMs: number;
  /** Records deleted. */
  readonly removed: number;
  /** Rows of the runs' conversations, planner turns and payloads deleted. */
  readonly runDataRemoved: number;
  /** Runs whose old records were deleted (their workflows are closed or gone). */
  readonly runsReaped: number;
  /** Runs kept because their workflow is still open (it may still resume). */
  readonly runsOpen: number;
  /** Runs kept because their status could not be read (tried again next pass). */
  readonly runsUnchecked: number;
}

/** Whether a run's workflow is open, closed, or could not be asked. */
export type RunStatusAnswer = 'open' | 'closed' | 'unknown';

/** What the reaper needs. */
export interface ReaperDeps {
  readonly ledger: Ledger;
  /**
   * Whether the workflow with this id (a ledger record's `runId`) is still open. Default: ask
   * Temporal with the worker's client from the activity context.
   */
  readonly runStatus?: (runId: string) => Promise<RunStatusAnswer>;
  /** The clamp; default {@link MIN_RETENTION_MS}. Lower only in tests that cannot wait a week. */
  readonly minRetentionMs?: number;
}

/** How many describe calls run at once. */
const STATUS_CONCURRENCY = 8;
/** How long one describe call may take before its run counts as unchecked. */
const STATUS_DEADLINE_MS = 20_000;

/** Asks Temporal, through the activity's client, whether `workflowId`'s latest run is open. */
async function statusFromActivityClient(workflowId: string): Promise<RunStatusAnswer> {
  let client;
  try {
    client = Context.current().client;
  } catch (err) {
    throw ApplicationFailure.nonRetryable(
      'reapLedger needs a Temporal client to check that a run is closed: run it as an activity on a worker, or pass runStatus',
      'ReaperNotConfigured',
      { cause: String(err) },
    );
  }
  try {
    // A deadline, so one slow answer cannot hold the pass past its heartbeat timeout.
    const d = await client.withDeadline(Date.now() + STATUS_DEADLINE_MS, () =>
      client.workflow.getHandle(workflowId).describe(),
    );
    return d.status.name === 'RUNNING' ? 'open' : 'closed';
  } catch (err) {
    // Gone from Temporal (never a workflow, or past the namespace's retention): it cannot resume.
    if (err instanceof WorkflowNotFoundError) return 'closed';
    activityLog('warn', `reapLedger: cannot read the status of run ${workflowId}; keeping its records`, {
      error: (err as Error).message,
    });
    return 'unknown';
  }
}

/** Creates the reaper activity over its dependencies. */
export function createReaperActivities(deps: ReaperDeps) {
  const { ledger } = deps;
  const minRetentionMs = deps.minRetentionMs ?? MIN_RETENTION_MS;
  const runStatus = deps.runStatus ?? statusFromActivityClient;

  /** One reaper pass: page through the runs that own reapable records; reap the closed ones. */
  async function reapLedger(input: ReapLedgerInput): Promise<ReapLedgerOutput> {
    const asked = input?.retentionMs;
    if (typeof asked !== 'number' || !Number.isFinite(asked) || asked < 0) {
      throw ApplicationFailure.nonRetryable(
        `reapLedger: retentionMs must be a number of milliseconds >= 0, got ${String(asked)}`,
        'InvalidReaperInput',
      );
    }
    const retentionMs = Math.max(asked, minRetentionMs);
    if (retentionMs !== asked) {
      activityLog(
        'warn',
        `reapLedger: retention ${asked} ms is shorter than the resume window; using ${retentionMs} ms`,
      );
    }
    const pageSize = Math.max(1, Math.floor(input.pageSize ?? 100));
    let removed = 0;
    let runDataRemoved = 0;
    let runsReaped = 0;
    let runsOpen = 0;
    let runsUnchecked = 0;
    let after: string | undefined;
    for (;;) {
      const runs = await ledger.reapableRuns(retentionMs, {
        limit: pageSize,
        ...(after === undefined ? {} : { after }),
      });
      if (runs.length === 0) break;
      const closed: string[] = [];
      for (let i = 0; i < runs.length; i += STATUS_CONCURRENCY) {
        const batch = runs.slice(i, i + STATUS_CONCURRENCY);
        heartbeat({ after: batch[0] });
        const answers = await Promise.all(batch.map((r) => runStatus(r)));
        answers.forEach((a, j) => {
          if (a === 'closed') closed.push(batch[j] as string);
          else if (a === 'open') runsOpen += 1;
          else runsUnchecked += 1;
        });
        heartbeat({ after: batch[batch.length - 1] });
      }
      // Same retention in the DELETE: a record that settled since the page was read is not older.
      if (closed.length > 0) removed += await ledger.reap(retentionMs, { runIds: closed });
      // Their conversations, planner turns and payloads, by the same retention (newest row).
      if (closed.length > 0 && ledger.reapRunData)
        runDataRemoved += await ledger.reapRunData(retentionMs, closed);
      runsReaped += closed.length;
      after = runs[runs.length - 1];
      if (runs.length < pageSize) break;
    }
    return { retentionMs, removed, runDataRemoved, runsReaped, runsOpen, runsUnchecked };
  }

  return { reapLedger };
}

/** The reaper's activity functions, for `proxyActivities<ReaperActivities>()`. */
export type ReaperActivities = ReturnType<typeof createReaperActivities>;
