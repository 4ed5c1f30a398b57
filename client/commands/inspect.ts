/** `agentctl report|trace|watch|list|tree`: read-only views of runs (`status`: ./status.ts). */
import { Command, Option } from 'commander';
import {
  AGENT_GUARD_REASON,
  AGENT_STATE,
  AGENT_STEPS,
  WAITING_FOR_OPERATOR_QUERY,
} from '../../common/search-attributes';
import { WORKFLOW_TYPE } from '../../common/contracts';
import { WAITING_FOR_PERSON } from '../../common/conversation-run';
import { GuardReason, TerminalState, type StopReport, type TraceRecord } from '../../guard';
import {
  blockedCallText,
  CliError,
  Exit,
  json,
  keyValues,
  resultText,
  table,
  traceLine,
  type Column,
  uiBaseFor,
  uiListLink,
} from '../format';
import { unknownToolOf } from '../../tools/registry';
import { followRun } from '../runs';
import { runReport, runTrace } from '../run-reads';
import { formatTree, getAgentRunTree } from '../tree';
import { storedTracePage } from './stored-trace';
import { nonNegativeInt, openRun, positiveInt, type Ctx } from './common';

/** Trace table columns. */
export const TRACE_COLUMNS: Column<TraceRecord>[] = [
  { header: 'STEP', value: (r) => r.step },
  { header: 'PHASE', value: (r) => r.phase },
  { header: 'TOOL', value: (r) => r.tool },
  { header: 'DECISION', value: (r) => r.decision },
  { header: 'REASON', value: (r) => r.reason },
  { header: 'RESULT', value: resultText },
  // The progress version, in plain words: how many changes to external state the run had seen.
  { header: 'CHANGES SEEN', value: (r) => r.progress_version },
  { header: 'OP KEY', value: (r) => r.operation_key, max: 32 },
  { header: 'ARGS', value: (r) => r.args, max: 60 },
];

/** A StopReport as key/value lines. */
export function formatReport(r: StopReport): string {
  return keyValues([
    ['terminal state', r.terminal_state],
    ['guard reason', r.guard_reason],
    ['stopped by', stoppedBy(r.terminal_state, r.guard_reason)],
    ['blocked call', blockedCallText(r)],
    ['unmet', r.unmet_precondition],
    ['resume when', resumeWhen(r)],
    ['next action', r.next_allowed_action],
    ['completed', r.completed.length ? r.completed.join(', ') : null],
    ['checkpoint', r.last_safe_checkpoint],
    ['steps', r.steps],
    ['progress version', `${r.last_progress_version} (changes to external state the run had seen)`],
  ]);
}

/** The report's resume condition; for a stop on a tool the worker lacked, what lifts it. */
function resumeWhen(r: StopReport): string | null {
  const tool = unknownToolOf(r.unmet_precondition);
  return tool && r.blocked_call?.tool === tool
    ? `the worker has a tool named "${tool}" (add it to the worker's tools and restart the worker)`
    : r.resume_condition;
}

/**
 * Who stopped a run, in words: an operator's `agentctl stop` is reported as the
 * operator's, though its terminal state is STOPPED_LOOP_GUARD (docs/spec.md §4 keeps that).
 */
export function stoppedBy(
  state: string | null | undefined,
  reason: string | null | undefined,
): string | null {
  if (!state || state === TerminalState.COMPLETED) return null;
  if (reason === GuardReason.OPERATOR_STOP)
    return 'an operator (agentctl stop or a cancel), not the loop guard';
  if (state === TerminalState.STOPPED_LOOP_GUARD) return `the loop guard (${reason ?? 'see the report'})`;
  if (state === TerminalState.NEEDS_HUMAN)
    return `the run: it needs a person (${reason ?? 'see the report'})`;
  return reason ?? null;
}

/** The `tree` command: a run and the sub-agents below it (docs/spec.md §7.14). */
export function treeCommand(ctx: Ctx): Command {
  return new Command('tree')
    .description('Show an agent tree: each run with its state, reason and spend, its sub-agents below it')
    .argument('<id>', 'workflow id (the root, or any run of the tree)')
    .option('--json', 'machine-readable output (nested nodes)')
    .action(async (id: string, o: { json?: boolean }) => {
      const c = await ctx.connect();
      const tree = await getAgentRunTree(c.client, id);
      ctx.io.out(o.json ? json(tree) : formatTree(tree));
    });
}

/** The `report` command. */
export function reportCommand(ctx: Ctx): Command {
  return new Command('report')
    .description("Show a run's StopReport (none while running or when COMPLETED)")
    .argument('<id>', 'workflow id')
    .option('--json', 'machine-readable output (null when there is no report)')
    .action(async (id: string, o: { json?: boolean }) => {
      const { handle, desc } = await openRun(ctx, id);
      const report = await runReport(handle, desc);
      if (o.json) ctx.io.out(json(report, true));
      else if (!report) ctx.io.out(`run ${id} has no StopReport (it is running or COMPLETED)\n`);
      else ctx.io.out(formatReport(report));
    });
}

/** The `trace` command. */
export function traceCommand(ctx: Ctx): Command {
  return new Command('trace')
    .description("Show a run's decision trace (which rule refused which call)")
    .argument('<id>', 'workflow id')
    .option(
      '--decision <decision>',
      'only records with this decision (execute, steer, stop, resume_refused, …)',
    )
    .option('--reason <reason>', 'only records with this reason (same_call_repeat, …)')
    .option('--offset <n>', 'skip this many (filtered) records', nonNegativeInt, 0)
    .option('--limit <n>', 'at most this many records', positiveInt, 200)
    .option('--json', 'machine-readable output: {total, kept, records}')
    .option(
      '--stored',
      "the records the run paged out of its checkpoint, from the worker's database (LEDGER_URL); --offset/--limit page them",
    )
    .action(
      async (
        id: string,
        o: {
          decision?: string;
          reason?: string;
          offset: number;
          limit: number;
          json?: boolean;
          stored?: boolean;
        },
      ) => {
        if (o.stored) {
          const stored = await storedTracePage(ctx, id, o.offset, Math.min(o.limit, 1000));
          if (o.json) return void ctx.io.out(json(stored));
          ctx.io.out(table(stored.records, [{ header: 'SEQ', value: (r) => r.seq }, ...TRACE_COLUMNS]));
          ctx.io.out(
            `(${stored.total} paged-out records; these are ${o.offset}–${o.offset + stored.records.length - 1})\n`,
          );
          return;
        }
        const { handle, desc } = await openRun(ctx, id);
        const page = await runTrace(handle, desc, {
          decision: o.decision,
          reason: o.reason,
          offset: o.offset,
          limit: Math.min(o.limit, 1000),
        });
        if (o.json) {
          ctx.io.out(json(page));
          return;
        }
        ctx.io.out(table(page.records, TRACE_COLUMNS));
        if (page.kept < page.total)
          ctx.io.out(
            `(${page.total} records in all; the run keeps the last ${page.kept}; a long run's older ones: agentctl trace ${id} --stored)\n`,
          );
      },
    );
}

/** The `watch` command. */
export function watchCommand(ctx: Ctx): Command {
  return new Command('watch')
    .description('Follow a run: one line per decision until it closes')
    .argument('<id>', 'workflow id')
    .option('--until-waiting', 'also return when the run stops and waits for resume')
    .option('--interval <ms>', 'poll interval', positiveInt, 500)
    .option('--timeout <seconds>', 'give up after this long', positiveInt, 24 * 3600)
    .action(async (id: string, o: { untilWaiting?: boolean; interval: number; timeout: number }) => {
      const { handle } = await openRun(ctx, id);
      const settled = await followRun(handle, {
        untilWaiting: o.untilWaiting === true,
        pollMs: o.interval,
        timeoutMs: o.timeout * 1000,
        onRecord: (r) => ctx.io.out(`${traceLine(r)}\n`),
        onWaiting: (s) =>
          ctx.io.out(
            `-- stopped (${s.terminalState} ${s.guardReason}: by ${stoppedBy(s.terminalState, s.guardReason)}); waiting for a verified resume: agentctl report ${id}; agentctl resume ${id} --reason "…"\n`,
          ),
      });
      const s = settled.status;
      ctx.io.out(
        settled.closed
          ? `-- closed: ${s?.terminalState ?? (await handle.describe()).status.name}${s?.guardReason ? ` (${s.guardReason})` : ''}\n`
          : `-- waiting for resume: ${s?.terminalState} (${s?.guardReason})\n`,
      );
    });
}

/** States `list --state` accepts. */
export const LIST_STATES = [
  'RUNNING',
  WAITING_FOR_PERSON,
  TerminalState.STOPPED_LOOP_GUARD,
  TerminalState.NEEDS_HUMAN,
  TerminalState.COMPLETED,
  TerminalState.FAILED,
  TerminalState.PARTIAL,
] as const;

const quote = (s: string) => `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;

/** The visibility query of `list`. */
export function listQuery(o: {
  state?: string;
  reason?: string;
  open?: boolean;
  closed?: boolean;
  waiting?: boolean;
}): string {
  // Waiting runs of every engine (an AI SDK or OpenAI Agents workflow publishes AgentState too).
  const parts = o.waiting ? [WAITING_FOR_OPERATOR_QUERY] : [`WorkflowType = ${quote(WORKFLOW_TYPE)}`];
  if (o.state) parts.push(`AgentState = ${quote(o.state)}`);
  if (o.reason) parts.push(`AgentGuardReason = ${quote(o.reason)}`);
  if (o.open) parts.push(`ExecutionStatus = "Running"`);
  if (o.closed) parts.push(`ExecutionStatus != "Running"`);
  return parts.join(' AND ');
}

interface ListRow {
  id: string;
  state: string | undefined;
  reason: string | undefined;
  steps: number | undefined;
  status: string;
  start: Date;
}

/** The `list` command. */
export function listCommand(ctx: Ctx): Command {
  return new Command('list')
    .description('List runs (a visibility query on AgentState / AgentGuardReason)')
    .addOption(new Option('--state <state>', 'AgentState').choices([...LIST_STATES]))
    .option('--reason <reason>', 'AgentGuardReason, e.g. same_call_repeat, permission_denied')
    .option('--open', 'only open executions (running or waiting for resume)')
    .option('--closed', 'only closed executions')
    .option('--waiting', 'only runs stopped and waiting for an operator (resume, approval), of every engine')
    .option('--limit <n>', 'at most this many runs', positiveInt, 50)
    .option('--json', 'machine-readable output (one array)')
    .action(
      async (o: {
        state?: string;
        reason?: string;
        open?: boolean;
        closed?: boolean;
        waiting?: boolean;
        limit: number;
        json?: boolean;
      }) => {
        if (o.open && o.closed)
          throw new CliError(Exit.USAGE, 'list: --open and --closed exclude each other');
        if (o.waiting && o.closed)
          throw new CliError(Exit.USAGE, 'list: --waiting runs are open; it excludes --closed');
        const c = await ctx.connect();
        const rows: ListRow[] = [];
        for await (const wf of c.client.workflow.list({
          query: listQuery(o),
          pageSize: Math.min(o.limit, 1000),
        })) {
          const sa = wf.typedSearchAttributes;
          rows.push({
            id: wf.workflowId,
            state: sa.get(AGENT_STATE),
            reason: sa.get(AGENT_GUARD_REASON),
            steps: sa.get(AGENT_STEPS),
            status: wf.status.name,
            start: wf.startTime,
          });
          if (rows.length >= o.limit) break;
        }
        if (o.json) {
          ctx.io.out(
            json(rows.map((r) => ({ ...r, reason: r.reason || null, start: r.start.toISOString() }))),
          );
          return;
        }
        ctx.io.out(
          table(rows, [
            { header: 'ID', value: (r) => r.id, max: 60 },
            { header: 'STATE', value: (r) => r.state },
            { header: 'REASON', value: (r) => r.reason },
            { header: 'STEPS', value: (r) => r.steps },
            { header: 'TEMPORAL', value: (r) => r.status },
            { header: 'STARTED', value: (r) => r.start.toISOString() },
          ]),
        );
        // The same list where a person looks: the Temporal UI, filtered by the same query.
        ctx.io.out(
          `in the Temporal UI: ${uiListLink(uiBaseFor(c.address, ctx.env), c.namespace, listQuery(o))}\n`,
        );
      },
    );
}
