/**
 * `agentctl status`: a run's status from its worker (phase, steps, last decision, counters) or,
 * when no worker polls the run's task queue (client/workers.ts), what the server knows of it
 * (the search attributes it last published, Temporal's status) with the queue named and how
 * to start a worker (exit 6), within seconds instead of a query that waits 30 s for nobody.
 */
import { Command } from 'commander';
import { AGENT_GUARD_REASON, AGENT_STATE, AGENT_STEPS } from '../../common/search-attributes';
import type { RunStatus } from '../../common/contracts';
import { CliError, Exit, json, keyValues } from '../format';
import { isClosed } from '../runs';
import { runEnding, runStatus } from '../run-reads';
import { noWorkerMessage, placeOf, queueWorkers, startWorkerHint, type QueueWorkers } from '../workers';
import { countersOf, countersText, openRun, runLink, type Ctx, type OpenedRun } from './common';
import { stoppedBy } from './inspect';

/** How long `status` gives the worker to answer its query before it shows what the server knows, ms. */
const STATUS_QUERY_MS = 8_000;

/** True for a query the worker did not answer in time (the deadline, or the server's own timeout). */
function unansweredInTime(err: unknown): boolean {
  for (let e = err as { code?: unknown; cause?: unknown } | null, i = 0; e && i < 4; i++) {
    if (e.code === 4 || e.code === 1) return true; // DEADLINE_EXCEEDED, CANCELLED
    e = e.cause as typeof e;
  }
  return false;
}

/**
 * What `status` shows of an open run no worker answers for: the server's description of it (the
 * search attributes the run last published, Temporal's status), the counters, and why, naming
 * the queue. Exit 6.
 */
async function statusWithoutWorker(
  ctx: Ctx,
  opened: OpenedRun,
  why: string,
  worker: string,
  asJson: boolean | undefined,
): Promise<never> {
  const { c, handle, desc } = opened;
  const id = handle.workflowId;
  const sa = desc.typedSearchAttributes;
  const counters = await countersOf(ctx, id);
  const goal = await desc.staticSummary().catch(() => undefined);
  const view = {
    workflowId: id,
    taskQueue: desc.taskQueue,
    workerAnswered: false,
    agentState: sa.get(AGENT_STATE) ?? null,
    guardReason: sa.get(AGENT_GUARD_REASON) || null,
    steps: sa.get(AGENT_STEPS) ?? null,
    goal: goal ?? null,
    temporalStatus: desc.status.name,
    startTime: desc.startTime.toISOString(),
    closeTime: desc.closeTime?.toISOString() ?? null,
    counters,
    problem: why,
  };
  if (asJson) ctx.io.out(json(view));
  else
    ctx.io.out(
      keyValues([
        ['run', id],
        ['worker', `${worker}: the run's live status cannot be read (below: what the server knows)`],
        [
          'agent state',
          view.agentState
            ? `${view.agentState} (as the run last published it)`
            : 'none published yet (no worker has run its first step)',
        ],
        ['guard reason', view.guardReason],
        ['stopped by', stoppedBy(view.agentState, view.guardReason)],
        ['steps', view.steps],
        ['goal', view.goal],
        ['temporal status', desc.status.name],
        ['started', view.startTime],
        ['counters', countersText(ctx, counters)],
        ['UI', runLink(ctx, c, id)],
      ]),
    );
  throw new CliError(Exit.NO_WORKER, why);
}

/** The run's task queue and who polls it, for the status block. */
function queueText(taskQueue: string, workers: QueueWorkers | null): string {
  if (!workers) return taskQueue;
  const n = workers.live.length;
  return n === 0
    ? `${taskQueue} (no worker polls it)`
    : `${taskQueue} (${n} worker${n === 1 ? '' : 's'} polling: ${workers.live.map((p) => p.identity).join(', ')})`;
}

/** The `status` command. */
export function statusCommand(ctx: Ctx): Command {
  return new Command('status')
    .description("Show a run's status (phase, steps, last decision, counters)")
    .argument('<id>', 'workflow id')
    .option('--json', 'machine-readable output')
    .action(async (id: string, o: { json?: boolean }) => {
      const opened = await openRun(ctx, id);
      const { c, handle, desc } = opened;
      const closed = isClosed(desc);
      // The run's queue first: with no worker a query waits ~30 s for nobody. A look that fails
      // (no permission to describe queues) leaves it to the query's own deadline.
      const workers = await queueWorkers(c, desc.taskQueue).catch(() => null);
      const hasWorker = workers === null || workers.live.length > 0;
      const place = placeOf(c, desc.taskQueue);
      if (!hasWorker && !closed)
        return statusWithoutWorker(
          ctx,
          opened,
          noWorkerMessage(place, workers ?? undefined),
          `NONE on task queue ${desc.taskQueue}`,
          o.json,
        );
      const ask = { query: hasWorker, queryMs: STATUS_QUERY_MS };
      let status: RunStatus;
      try {
        status = await runStatus(handle, desc, ask);
      } catch (err) {
        if (closed || !unansweredInTime(err)) throw err;
        const pollers = workers?.live.map((p) => p.identity).join(', ') ?? 'unknown';
        return statusWithoutWorker(
          ctx,
          opened,
          `no worker answered within ${STATUS_QUERY_MS / 1000} s, though task queue "${desc.taskQueue}" ` +
            `(namespace ${c.namespace} on ${c.address}) lists pollers (${pollers}): a worker that stopped ` +
            `a moment ago, or one too busy to answer. ${startWorkerHint(place)}`,
          `NONE answered within ${STATUS_QUERY_MS / 1000} s on task queue ${desc.taskQueue} (listed: ${pollers})`,
          o.json,
        );
      }
      const counters = await countersOf(ctx, id);
      const ending = await runEnding(handle, desc, ask);
      if (o.json) {
        ctx.io.out(
          json({
            ...status,
            ...(ending ?? {}),
            temporalStatus: desc.status.name,
            startTime: desc.startTime.toISOString(),
            closeTime: desc.closeTime?.toISOString() ?? null,
            counters,
          }),
        );
        return;
      }
      ctx.io.out(
        keyValues([
          ['run', id],
          ['phase', status.phase],
          ['terminal state', status.terminalState],
          ['guard reason', status.guardReason],
          ['stopped by', stoppedBy(status.terminalState, status.guardReason)],
          ['waiting for resume', status.waitingForResume ? 'yes' : 'no'],
          ...conversationRows(status),
          ['steps', status.steps],
          [
            'executed / cached',
            `${status.executed} / ${status.cached}${status.reconciled ? ` (+${status.reconciled} settled by reconcile, not run)` : ''}`,
          ],
          ['proposals', status.proposals],
          ['progress version', `${status.progressVersion} (changes to external state seen so far)`],
          ['no-progress count', `${status.noProgress} (calls in a row that changed nothing)`],
          ['usage', `${status.usage.tokens} tokens, $${status.usage.costUsd}`],
          ['last decision', status.lastDecision],
          ['ended', ending?.ended],
          ['summary', ending?.summary],
          ['final message', ending?.final_message],
          ['goal', status.goal],
          ['temporal status', desc.status.name],
          ['task queue', queueText(desc.taskQueue, workers)],
          ['started', desc.startTime.toISOString()],
          ['counters', countersText(ctx, counters)],
          ['UI', runLink(ctx, c, id)],
        ]),
      );
    });
}

/** A conversation run's rows: who the run waits on, and the question. */
function conversationRows(status: RunStatus): Array<[string, unknown]> {
  const c = status.conversation;
  if (!c) return [];
  // The end in the run's own words: its terminal state and reason, not Temporal's status.
  const ended = c.ended ? ` (run ${c.ended.as})` : '';
  const waiting = c.waiting
    ? `yes, since ${new Date(c.waiting.sinceMs).toISOString()} (${c.waiting.kind}): ${c.waiting.text}`
    : c.open
      ? 'no (the agent is working)'
      : `no (the conversation is closed${ended})`;
  // Messages the run ended without reading are said so, never "queued".
  const notRead = c.notRead ? `, ${c.notRead} not read (the run ended before the model read them)` : '';
  return [
    ['waiting for person', waiting],
    ['conversation', `${c.turns} turns, ${c.received} messages received, ${c.queued} queued${notRead}`],
  ];
}
