/**
 * What operators and callers read of a run (docs/spec.md §7): the `status`, `report`,
 * `checkpoint` and `trace` queries, the UI's current details and search attributes, and
 * the RunResult. Views only read the run's state; none of them changes it, and only
 * {@link publish} makes a command (a search-attribute upsert). Workflow code.
 */
import { setCurrentDetails, upsertSearchAttributes } from '@temporalio/workflow';
import type { Checkpoint, RunResult, RunStatus } from '../common/contracts';
import { howItEnded } from '../common/ending';
import { redact, redactText } from '../common/redact';
import { wayOnCommand } from '../core/way-on';
import { AGENT_ROOT_RUN } from '../common/search-attributes';
import { TerminalState } from '../guard';
import {
  agentStateOf,
  checkpointOf as coreCheckpointOf,
  DEFAULT_CHECKPOINT_BOUNDS,
  resultOf as coreResultOf,
  searchAttributesOf,
  statusOf as coreStatusOf,
} from '../core/views';
import { boundObservation, LEAN_CHECKPOINT_TRACE_BYTES } from '../core/checkpoint-bounds';
import { conversationOf } from './conversation';
import { isTerminal } from '../core/phase';
import type { RunState } from './run-state';

/**
 * A lean checkpoint's (docs/spec.md §7.10): newest 100 decisions and operator request ids.
 * An operator request older than the newest 100 cannot be replayed in practice: a signed one
 * expires after 5 minutes (operators/registry.ts MAX_SIGNATURE_SKEW_MS), and an unsigned one
 * (open mode) gives no more than a fresh request id would.
 */
const LEAN_DECISIONS = 100;
const LEAN_REQUEST_IDS = 100;

/** How much of a summary or final message the UI's details show. */
const DETAILS_TEXT_CHARS = 500;
const clipped = (text: string) =>
  text.length > DETAILS_TEXT_CHARS ? `${text.slice(0, DETAILS_TEXT_CHARS)}…` : text;

/**
 * The UI's current details and, unless `upsert` is false, the search attributes. Each
 * upsert is a history event, so it happens when the state changes (start, stop, resume,
 * finish), not on every step; the step count is live in the `status` query and details.
 */
export function publish(run: RunState, upsert = true, summary: string | null = null): void {
  const stop = run.stopInForce;
  const state = agentStateOf(run);
  // How it ended, as agentctl says it, once it has: not a command, so no patch
  // (details are not history).
  const ending = isTerminal(run.phase) ? howItEnded(state, stop?.reason ?? null) : null;
  const said = summary ?? stop?.report.final_message ?? null;
  const rootId = run.input.tree?.rootId ?? (run.input.subAgents ? run.runId : null);
  if (upsert)
    upsertSearchAttributes([
      ...searchAttributesOf(run),
      // Only tree runs carry it (runs before sub-agents upsert exactly what they did).
      ...(rootId ? [{ key: AGENT_ROOT_RUN, value: rootId }] : []),
    ]);
  setCurrentDetails(
    [
      `**state** ${state}${stop ? ` · **reason** ${stop.reason}` : ''}`,
      `**step** ${run.guard.stepCount} · **proposals** ${run.proposals} · **progress** v${run.guard.progressVersion}` +
        (run.guard.steers.length > 0
          ? ` · **steers** ${run.guard.steers.length}/${run.guard.config.steerLimit}`
          : ''),
      `**last decision** ${run.trace.lastDecision ?? '—'}`,
      ...(stop ? wayOnLines(run, stop) : []),
      conversationOf(run)?.detailsLine() ?? '',
      ending ? `**ended** ${ending.ended}` : '',
      said ? `**${summary !== null ? 'summary' : 'final message'}** ${clipped(redactText(said))}` : '',
    ]
      .filter(Boolean)
      .join('\n'),
  );
}

/**
 * `text` as a markdown code span: the UI renders details as markdown, which would turn a
 * command's `--` and quotes typographic (a copied command would not run). The fence is longer
 * than any run of backticks inside.
 */
function code(text: string): string {
  const longest = Math.max(0, ...(text.match(/`+/g) ?? []).map((r) => r.length));
  const fence = '`'.repeat(longest + 1);
  return `${fence} ${text} ${fence}`;
}

/** The most characters of a blocked call's args the details show (cut with a mark). */
const DETAILS_ARGS_CHARS = 300;

/**
 * What a person needs while a stop is in force: the rule's words, the blocked call as its tool
 * and redacted args, what would let the run go on, until when it waits, and the command.
 */
function wayOnLines(run: RunState, stop: NonNullable<RunState['stopInForce']>): string[] {
  const r = stop.report;
  const args = stop.blockedTool ? JSON.stringify(redact(stop.blockedArgs ?? null)) : '';
  const waiting = run.phase === 'WAITING';
  return [
    r.unmet_precondition ? `**why** ${clipped(redactText(r.unmet_precondition))}` : '',
    stop.blockedTool
      ? `**blocked call** ${code(`${stop.blockedTool} ${args.length > DETAILS_ARGS_CHARS ? `${args.slice(0, DETAILS_ARGS_CHARS)}…` : args}`)}`
      : '',
    r.resume_condition ? `**goes on when** ${r.resume_condition}` : '',
    waiting && run.waitingUntilMs !== null
      ? `**waits for a resume until** ${new Date(run.waitingUntilMs).toISOString()}`
      : '',
    waiting ? `**to go on** ${code(wayOnCommand(run.runId, stop))}` : '',
  ];
}

/** The `status` query: the core's, with the goal, the tree and the conversation. */
export function statusOf(run: RunState): RunStatus {
  return {
    ...coreStatusOf(run, run.input.goal),
    ...(run.input.tree
      ? { tree: { ...run.input.tree } }
      : run.input.subAgents
        ? { tree: { rootId: run.runId, parentId: null, depth: 0 } }
        : {}),
    ...(run.children.length > 0 ? { children: run.children.map((c) => ({ ...c })) } : {}),
    ...conversationStatus(run),
  };
}

/** A conversation's part of the status: what the agent waits on from its person. */
function conversationStatus(run: RunState): Pick<RunStatus, 'conversation'> {
  const v = conversationOf(run)?.view(Number.MAX_SAFE_INTEGER);
  return v
    ? {
        conversation: {
          open: v.open,
          waiting: v.waiting,
          queued: v.queued,
          turns: v.turns,
          received: v.received,
          notRead: v.notRead,
          ended: v.ended,
        },
      }
    : {};
}

export { reportOf, traceOf } from '../core/views';

/** Everything the run needs to continue: kept on stop, carried across continue-as-new. */
export function checkpointOf(run: RunState): Checkpoint {
  return {
    ...coreCheckpointOf(
      run,
      run.lean
        ? { decisions: LEAN_DECISIONS, requestIds: LEAN_REQUEST_IDS, traceBytes: LEAN_CHECKPOINT_TRACE_BYTES }
        : DEFAULT_CHECKPOINT_BOUNDS,
    ),
    plannerMemory: run.memory,
    // The copy that travels is bounded (core/checkpoint-bounds.ts); the live state is not.
    observation: boundObservation(run.observation),
    ...(run.children.length > 0 ? { children: run.children.map((c) => ({ ...c })) } : {}),
    ...conversationPart(run),
  };
}

/** A conversation's part of the checkpoint (absent on other runs). */
function conversationPart(run: RunState): { conversation?: Checkpoint['conversation'] } {
  const c = conversationOf(run);
  return c ? { conversation: c.toJSON() } : {};
}

/** The run's result in `state` (before it is bounded and its checkpoint sealed). */
export function resultOf(run: RunState, state: TerminalState, summary: string | null): RunResult {
  const completed = state === TerminalState.COMPLETED;
  return {
    ...coreResultOf(run, state, summary, completed ? null : checkpointOf(run)),
    // A tree node tells its parent what it used (its children included): the parent charges it.
    ...(run.input.tree || run.input.subAgents
      ? {
          usage: {
            steps: run.guard.stepCount,
            tokens: run.guard.usage.tokens,
            cost_usd: run.guard.usage.costUsd,
          },
        }
      : {}),
  };
}
