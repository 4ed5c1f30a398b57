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
import type { Client, WorkflowExecutionInfo } from '@temporalio/client';
import {
  checkpointQuery,
  statusQuery,
  WORKFLOW_TYPE,
  type Checkpoint,
  type RunStatus,
} from '../../common/contracts';
import { WAITING_FOR_PERSON } from '../../common/conversation-run';
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
import { howItEnded } from '../../common/ending';
import { pendingApprovalOf } from '../approvals';
import type { ArgDisplayHints } from '../../tools/arg-display';
import { argsView, type ArgsView } from './args-view';

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
    /** The guard's repeat-counting fingerprint (64 bits, not cryptographic): not what an approval trusts. */
    readonly fingerprint: string;
    /** `sha256:…` of the tool and canonical args: the exact call an approval binds (null: none recorded). */
    readonly argsDigest: string | null;
    readonly args: unknown;
    /** The args as a person must check them: invisible characters escaped, non-ASCII marked, amounts in units. */
    readonly view: ArgsView;
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
  /** How the run ended, in words (common/ending.ts): a waiting run's task is not done. */
  readonly ended: string;
  /** The model's last words (the StopReport's `final_message`, redacted); null when it gave none. */
  readonly finalMessage: string | null;
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
  /** The waiting runs of the page asked for (`page`, `pageSize`), newest first. */
  readonly waiting: readonly WaitingRun[];
  /** How many runs wait in all (the visibility store's count, with the filters), not just this page. */
  readonly waitingTotal: number;
  /** The running runs of the page asked for (`runningPage`), newest first. */
  readonly running: readonly RunningRun[];
  /** How many runs are running in all (with the filters). */
  readonly runningTotal: number;
  /** Conversations whose agent waits for its person, not an operator: the newest page. */
  readonly conversations: readonly RunningRun[];
  readonly conversationsTotal: number;
  /** Listed as waiting, but their queries failed or timed out: shown apart, without actions. */
  readonly unanswered: readonly UnansweredRun[];
  /** The page of waiting runs shown (0-based), of `pageSize` each. */
  readonly page: number;
  readonly runningPage: number;
  readonly pageSize: number;
  /** The filters applied (`search`: a run id prefix; `reason`: a stop reason). */
  readonly search: string | null;
  readonly reason: string | null;
  /** Queries sent to runs for this answer (0 when no run changed since the last read: the cache). */
  readonly runQueries: number;
  /** When it was read (ISO). */
  readonly at: string;
}

/** What {@link readInbox} needs. */
export interface InboxOptions {
  /** The Web UI link of a run. */
  readonly linkOf: (runId: string) => string;
  /** Only runs on this task queue (default: every task queue of the namespace). */
  readonly taskQueue?: string;
  /** Runs per page, waiting and running (default 25, at most 200). */
  readonly pageSize?: number;
  /** @deprecated the page size (kept for callers of the first version). */
  readonly limit?: number;
  /** The page of waiting runs (0-based, default 0). */
  readonly page?: number;
  /** The page of running runs (0-based, default 0). */
  readonly runningPage?: number;
  /** Only runs whose workflow id starts with this. */
  readonly search?: string;
  /** Only waiting runs stopped for this reason. */
  readonly reason?: string;
  /**
   * How long a run's queries may take, ms (default 4000). A run whose worker is down does not
   * answer (the server gives up after about 30 s): it must not hold up the rest of the inbox.
   */
  readonly queryTimeoutMs?: number;
  /** How to show the args of each tool (tools/arg-display.ts), by tool name. */
  readonly display?: Readonly<Record<string, ArgDisplayHints>>;
  /**
   * The views read before (one per console): a run whose history has not grown since is not
   * queried again — its state cannot have changed without a new event.
   */
  readonly cache?: InboxCache;
}

/** A run's view from its checkpoint and status; null when it is not stopped (any more). */
export function waitingRunOf(
  runId: string,
  cp: Checkpoint,
  status: RunStatus | null,
  uiUrl: string,
  display: Readonly<Record<string, ArgDisplayHints>> = {},
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
    blockedCall: call ? blockedCallOf(call, redact(stop.blockedArgs ?? null), display) : null,
    needsApproval: pendingApprovalOf(runId, cp) !== null,
    waitsOnChild:
      stop.reason === GuardReason.CHILD_STOPPED
        ? (cp.children?.find((c) => c.state === 'WAITING')?.workflowId ?? null)
        : null,
    raise: key ? { key, current: cp.guard.config[key] ?? null } : null,
    report: redact(report) as StopReport,
    ended: howItEnded(stop.terminalState, stop.reason).ended,
    finalMessage: report.final_message !== undefined ? (redact(report.final_message) as string) : null,
    trace: records.map((r) => redact(r) as TraceRecord),
    traceTotal: cp.traceTotal,
    uiUrl,
  };
}

function blockedCallOf(
  call: { readonly tool: string; readonly fingerprint: string; readonly args_digest?: string },
  args: unknown,
  display: Readonly<Record<string, ArgDisplayHints>>,
): NonNullable<WaitingRun['blockedCall']> {
  const hints = Object.hasOwn(display, call.tool) ? display[call.tool] : undefined;
  return {
    tool: call.tool,
    fingerprint: call.fingerprint,
    argsDigest: call.args_digest ?? null,
    args,
    view: argsView(args, hints),
  };
}

/** Views of waiting runs by run and history length; bounded (oldest entries dropped). */
export class InboxCache {
  private readonly views = new Map<string, { at: string; view: WaitingRun | null }>();
  constructor(private readonly max = 5000) {}
  get(runId: string, at: string): WaitingRun | null | undefined {
    const hit = this.views.get(runId);
    return hit && hit.at === at ? hit.view : undefined;
  }
  set(runId: string, at: string, view: WaitingRun | null): void {
    this.views.delete(runId);
    this.views.set(runId, { at, view });
    if (this.views.size > this.max) this.views.delete(this.views.keys().next().value as string);
  }
}

/** A run id prefix a visibility query can hold (STARTS_WITH), or bad input. */
export function checkSearch(search: string): string {
  if (search.length > 200 || /[\u0000-\u001f"\\]/.test(search))
    throw new Error('search: at most 200 characters, no quotes, backslashes or control characters');
  return search;
}

/** The visibility filter of the console's options, after the state clause. */
function filterOf(o: InboxOptions, waiting: boolean): string {
  return (
    (o.search ? ` AND WorkflowId STARTS_WITH ${quote(checkSearch(o.search))}` : '') +
    (waiting && o.reason ? ` AND AgentGuardReason = ${quote(checkSearch(o.reason))}` : '')
  );
}

/** The rows `skip`…`skip+take` of a visibility list: one server page per 1000 rows skipped. */
async function listPage(
  client: Client,
  query: string,
  skip: number,
  take: number,
): Promise<WorkflowExecutionInfo[]> {
  const rows: WorkflowExecutionInfo[] = [];
  let i = 0;
  for await (const wf of client.workflow.list({ query, pageSize: Math.min(1000, skip + take) })) {
    if (i++ < skip) continue;
    rows.push(wf);
    if (rows.length >= take) break;
  }
  return rows;
}

/**
 * Reads one page of the inbox: the waiting runs (newest first, as visibility lists them) and
 * the running ones, with their true totals (the visibility store's count). The server work per
 * read does not grow with the number of waiting runs: two counts, two lists, and the two
 * queries of a run only for the runs of this page whose history grew since the last read
 * (`cache`). A run that moved on between the list and its queries (visibility lags a second or
 * so) is left out; one whose queries fail or time out (no worker on its queue) is listed as
 * unanswered, as the page could not act on it either.
 */
export async function readInbox(client: Client, o: InboxOptions): Promise<Inbox> {
  const pageSize = Math.max(1, Math.min(200, o.pageSize ?? o.limit ?? 25));
  const page = Math.max(0, Math.floor(o.page ?? 0));
  const runningPage = Math.max(0, Math.floor(o.runningPage ?? 0));
  const waitingQuery = inboxQuery(WAITING_STATES, o.taskQueue) + filterOf(o, true);
  const runningQuery = inboxQuery(['RUNNING'], o.taskQueue) + filterOf(o, false);
  const talkingQuery = inboxQuery([WAITING_FOR_PERSON], o.taskQueue) + filterOf(o, false);
  const [waitingCount, runningCount, waitingRows, runningRows, talkingCount, talkingRows] = await Promise.all(
    [
      client.workflow.count(waitingQuery),
      client.workflow.count(runningQuery),
      listPage(client, waitingQuery, page * pageSize, pageSize),
      listPage(client, runningQuery, runningPage * pageSize, pageSize),
      client.workflow.count(talkingQuery),
      listPage(client, talkingQuery, 0, pageSize),
    ],
  );
  const runningOf = (wf: WorkflowExecutionInfo): RunningRun => ({
    runId: wf.workflowId,
    steps: wf.typedSearchAttributes.get(AGENT_STEPS) ?? null,
    startedAt: wf.startTime.toISOString(),
    uiUrl: o.linkOf(wf.workflowId),
  });
  const running: RunningRun[] = runningRows.map((wf) => ({
    runId: wf.workflowId,
    steps: wf.typedSearchAttributes.get(AGENT_STEPS) ?? null,
    startedAt: wf.startTime.toISOString(),
    uiUrl: o.linkOf(wf.workflowId),
  }));
  const timeoutMs = o.queryTimeoutMs ?? 4000;
  const unanswered: UnansweredRun[] = [];
  let runQueries = 0;
  const waiting = await Promise.all(
    waitingRows.map(async (wf) => {
      const id = wf.workflowId;
      const at = `${wf.runId}:${wf.historyLength}`;
      const cached = o.cache?.get(id, at);
      if (cached !== undefined) return cached;
      const handle = client.workflow.getHandle(id);
      runQueries += 2;
      try {
        // A gRPC deadline, not a race: the call itself ends, nothing is left running.
        const [cp, status] = await client.withDeadline(Date.now() + timeoutMs, () =>
          Promise.all([handle.query(checkpointQuery), handle.query(statusQuery).catch(() => null)]),
        );
        const view = waitingRunOf(id, cp, status, o.linkOf(id), o.display);
        o.cache?.set(id, at, view);
        return view;
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
    waitingTotal: waitingCount.count,
    running,
    runningTotal: runningCount.count,
    conversations: talkingRows.map(runningOf),
    conversationsTotal: talkingCount.count,
    unanswered,
    page,
    runningPage,
    pageSize,
    search: o.search ?? null,
    reason: o.reason ?? null,
    runQueries,
    at: new Date().toISOString(),
  };
}
