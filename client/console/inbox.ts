/**
 * What the console's page shows (`agentctl console`, docs/cli.md): the open runs that wait for
 * a person, each with its stop, blocked call, StopReport and the tail of its trace, and the
 * runs still running (which a person may stop). Read through the Temporal visibility API (the
 * `AgentState` search attribute) and the runs' own queries, like `agentctl list` and
 * `agentctl approvals list`; nothing here writes.
 *
 * Everything a run carries is untrusted text (a model wrote the args, a tool the errors): it is
 * redacted here (common/redact.ts) and escaped by the page, never interpreted.
 */
import type { Client } from '@temporalio/client';
import {
  checkpointQuery,
  statusQuery,
  WORKFLOW_TYPE,
  type Checkpoint,
  type RunStatus,
} from '../../common/contracts';
import { redact } from '../../common/redact';
import { AGENT_STEPS } from '../../common/search-attributes';
import {
  GuardReason,
  raiseKeyOf,
  TerminalState,
  type BudgetKey,
  type StopReport,
  type TraceRecord,
} from '../../guard';
import { pendingApprovalOf } from '../approvals';

/** Terminal states of a run that waits for a person (its execution is still open). */
export const WAITING_STATES: readonly string[] = [
  TerminalState.NEEDS_HUMAN,
  TerminalState.STOPPED_LOOP_GUARD,
];

const quote = (s: string) => `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;

/**
 * The visibility query of the open runs in `states` (by the `AgentState` search attribute the
 * workflow keeps), on one task queue when given.
 */
export function inboxQuery(states: readonly string[], taskQueue?: string): string {
  return (
    `WorkflowType = ${quote(WORKFLOW_TYPE)} AND ExecutionStatus = "Running"` +
    ` AND AgentState IN (${states.map(quote).join(', ')})` +
    (taskQueue ? ` AND TaskQueue = ${quote(taskQueue)}` : '')
  );
}

/** How many trace records a waiting run shows (the newest). */
export const TRACE_TAIL = 20;

/** One run that waits for a person. */
export interface WaitingRun {
  readonly runId: string;
  readonly goal: string;
  readonly terminalState: string;
  /** The stop reason (the page groups by it). */
  readonly reason: string;
  /** The stop a decision is bound to (`last_safe_checkpoint`); the page sends it back. */
  readonly stopRef: string | null;
  readonly steps: number;
  readonly usage: RunStatus['usage'];
  /** The call the run stopped on: tool, fingerprint and redacted args (null when none). */
  readonly blockedCall: {
    readonly tool: string;
    readonly fingerprint: string;
    /** `sha256:…` of the tool and canonical args: the exact call an approval binds (null: none recorded). */
    readonly argsDigest: string | null;
    readonly args: unknown;
  } | null;
  /** True when the stop is lifted by an approval of the blocked call. */
  readonly needsApproval: boolean;
  /**
   * For a `child_stopped` run: the sub-agent it waits on (docs/spec.md §7.14). A person acts on
   * that run; this one continues by itself when it does (its own resume is refused).
   */
  readonly waitsOnChild: string | null;
  /** The budget a resume must raise to lift a budget stop, and its current value. */
  readonly raise: { readonly key: BudgetKey; readonly current: number | null } | null;
  readonly report: StopReport;
  /** The newest {@link TRACE_TAIL} trace records (redacted), oldest first. */
  readonly trace: readonly TraceRecord[];
  readonly traceTotal: number;
  /** The run in the Temporal Web UI. */
  readonly uiUrl: string;
}

/** One run that is running. */
export interface RunningRun {
  readonly runId: string;
  readonly steps: number | null;
  readonly startedAt: string;
  readonly uiUrl: string;
}

/** A waiting run whose queries got no answer in time (no worker on its task queue, say). */
export interface UnansweredRun {
  readonly runId: string;
  readonly why: string;
  readonly uiUrl: string;
}

/** The page's data. */
export interface Inbox {
  readonly waiting: readonly WaitingRun[];
  readonly running: readonly RunningRun[];
  /** Listed as waiting, but their queries failed or timed out: shown apart, without actions. */
  readonly unanswered: readonly UnansweredRun[];
  /** When it was read (ISO). */
  readonly at: string;
}

/** What {@link readInbox} needs. */
export interface InboxOptions {
  /** The Web UI link of a run. */
  readonly linkOf: (runId: string) => string;
  /** Only runs on this task queue (default: every task queue of the namespace). */
  readonly taskQueue?: string;
  /** At most this many runs per list (default 100). */
  readonly limit?: number;
  /**
   * How long a run's queries may take, ms (default 4000). A run whose worker is down does not
   * answer (the server gives up after about 30 s): it must not hold up the rest of the inbox.
   */
  readonly queryTimeoutMs?: number;
}

/** A run's view from its checkpoint and status; null when it is not stopped (any more). */
export function waitingRunOf(
  runId: string,
  cp: Checkpoint,
  status: RunStatus | null,
  uiUrl: string,
): WaitingRun | null {
  const stop = cp.stop;
  if (!stop) return null;
  const report = stop.report;
  const call = report.blocked_call;
  const key = raiseKeyOf(stop.reason);
  const records = cp.trace.slice(-TRACE_TAIL);
  return {
    runId,
    goal: status?.goal ?? '',
    terminalState: stop.terminalState,
    reason: stop.reason,
    stopRef: report.last_safe_checkpoint,
    steps: status?.steps ?? report.steps,
    usage: status?.usage ?? { tokens: 0, costUsd: 0 },
    blockedCall: call
      ? {
          tool: call.tool,
          fingerprint: call.fingerprint,
          argsDigest: call.args_digest ?? null,
          args: redact(stop.blockedArgs ?? null),
        }
      : null,
    needsApproval: pendingApprovalOf(runId, cp) !== null,
    waitsOnChild:
      stop.reason === GuardReason.CHILD_STOPPED
        ? (cp.children?.find((c) => c.state === 'WAITING')?.workflowId ?? null)
        : null,
    raise: key ? { key, current: cp.guard.config[key] ?? null } : null,
    report: redact(report) as StopReport,
    trace: records.map((r) => redact(r) as TraceRecord),
    traceTotal: cp.traceTotal,
    uiUrl,
  };
}

/**
 * Reads the inbox: the waiting runs (newest first, as visibility lists them) and the running
 * ones. A run that moved on between the list and its queries (visibility lags a second or so)
 * is left out; one whose queries fail or time out (no worker on its queue) is listed as
 * unanswered, as the page could not act on it either.
 */
export async function readInbox(client: Client, o: InboxOptions): Promise<Inbox> {
  const limit = o.limit ?? 100;
  const waitingIds: string[] = [];
  for await (const wf of client.workflow.list({
    query: inboxQuery(WAITING_STATES, o.taskQueue),
    pageSize: Math.min(limit, 1000),
  })) {
    waitingIds.push(wf.workflowId);
    if (waitingIds.length >= limit) break;
  }
  const running: RunningRun[] = [];
  for await (const wf of client.workflow.list({
    query: inboxQuery(['RUNNING'], o.taskQueue),
    pageSize: Math.min(limit, 1000),
  })) {
    running.push({
      runId: wf.workflowId,
      steps: wf.typedSearchAttributes.get(AGENT_STEPS) ?? null,
      startedAt: wf.startTime.toISOString(),
      uiUrl: o.linkOf(wf.workflowId),
    });
    if (running.length >= limit) break;
  }
  const timeoutMs = o.queryTimeoutMs ?? 4000;
  const unanswered: UnansweredRun[] = [];
  const waiting = await Promise.all(
    waitingIds.map(async (id) => {
      const handle = client.workflow.getHandle(id);
      try {
        // A gRPC deadline, not a race: the call itself ends, nothing is left running.
        const [cp, status] = await client.withDeadline(Date.now() + timeoutMs, () =>
          Promise.all([handle.query(checkpointQuery), handle.query(statusQuery).catch(() => null)]),
        );
        return waitingRunOf(id, cp, status, o.linkOf(id));
      } catch (err) {
        const message = (err as Error).message.split('\n')[0] ?? 'query failed';
        unanswered.push({
          runId: id,
          why: `${message} (is a worker running on its task queue?)`,
          uiUrl: o.linkOf(id),
        });
        return null;
      }
    }),
  );
  return {
    waiting: waiting.filter((w): w is WaitingRun => w !== null),
    running,
    unanswered,
    at: new Date().toISOString(),
  };
}
